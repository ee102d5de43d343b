# shellcheck shell=bash
# timed LABEL cmd...: run cmd, die on failure, log how long it took and
# append it to $SVCTRACE_CACHE/build-times.txt (the cold build times the
# READMEs quote). Sourced by the opt-in agents' build scripts, after their
# lib.sh (log, die, SVCTRACE_CACHE).
timed() {
	local label=$1 t0 rc=0; shift
	t0=$(date +%s)
	"$@" || rc=$?
	((rc == 0)) || die "$label failed (rc $rc)"
	log "built $label in $(( $(date +%s) - t0 ))s"
	printf '%s\t%s\t%ss\n' "$(date -u +%FT%TZ)" "$label" "$(( $(date +%s) - t0 ))" >>"$SVCTRACE_CACHE/build-times.txt"
}
