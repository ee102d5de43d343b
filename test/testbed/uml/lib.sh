# shellcheck shell=bash
# user-mode Linux (UML) helpers for the testbed and the IPVS benchmark. Sourced.
#
# This host's kernel has no IPVS; Debian's user-mode-linux kernel (a Linux
# kernel run as an ordinary process) has it. One UML instance is a NAME: its
# state lives in $UML_STATE/NAME (out/ is shared with the guest over hostfs),
# its host processes form one process group whose leader's PID is in
# $UML_STATE/NAME/pid, and its kernel command line carries umid=NAME so that
# a PID is only ever signalled when it is still that instance.

UML_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
UML_STATE=${UML_STATE:-/var/lib/svctrace-uml}
UML_KERNEL=${UML_KERNEL:-/usr/bin/linux}

# UML_IPVS_MODULES are what kube-proxy's IPVS mode (and the iptables rules it
# still writes, legacy backend) needs in this kernel.
UML_IPVS_MODULES=ip_vs,ip_vs_rr,ip_vs_wrr,ip_vs_sh,ip_vs_lc,ip_vs_mh,nf_conntrack,nf_nat,xt_ipvs,\
iptable_nat,iptable_filter,iptable_mangle,ipt_REJECT,xt_nat,xt_tcpudp,xt_multiport,xt_comment,xt_mark,\
xt_MASQUERADE,xt_addrtype,xt_conntrack,xt_statistic,xt_recent,xt_physdev,xt_set,ip_set,ip_set_hash_ip,\
ip_set_hash_ipport,ip_set_hash_ipportip,ip_set_hash_ipportnet,ip_set_hash_net,ip_set_bitmap_port,dummy,veth,bridge,br_netfilter
# UML_IPVS_MODULES6: what its IPv6 half adds (ip6tables on the legacy
# backend; IPVS itself is built with IPv6, CONFIG_IP_VS_IPV6).
UML_IPVS_MODULES6=ipv6,ip6_tables,ip6table_nat,ip6table_filter,ip6table_mangle,ip6t_REJECT

uml_log() { printf '[uml %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# uml_preload: print the path of xstate-preload.so (see xstate-preload.c: UML
# 6.1 on a host CPU with AMX), built once per source version into the cache.
uml_preload() {
	local src=$UML_DIR/xstate-preload.c sum out
	sum=$(sha256sum "$src" | cut -c1-12)
	out=${SVCTRACE_CACHE:-$HOME/.cache/svctrace}/uml-xstate-preload-$sum/xstate-preload.so
	if [[ ! -f $out ]]; then
		mkdir -p "$(dirname "$out")"
		gcc -shared -fPIC -O2 -Wall -Werror -o "$out.tmp" "$src" -ldl || { uml_log "building $src failed (gcc, libc6-dev)"; return 1; }
		mv -f "$out.tmp" "$out"
	fi
	echo "$out"
}

# uml_alive NAME: the recorded leader PID is alive and is this instance.
uml_alive() {
	local pid f=$UML_STATE/$1/pid
	[[ -f $f ]] || return 1
	pid=$(<"$f")
	[[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "umid=$1 "
}

# uml_pids NAME: every live host process of the instance (same process
# group as the recorded leader and the instance's umid on its command line).
uml_pids() {
	local pgid p f=$UML_STATE/$1/pid
	[[ -f $f ]] || return 0
	pgid=$(<"$f")
	for p in $(pgrep -g "$pgid" 2>/dev/null); do
		if tr "\\0" " " 2>/dev/null <"/proc/$p/cmdline" | grep -q "umid=$1 "; then echo "$p"; fi
	done
	return 0 # callers run under set -e: no match is not a failure
}

# uml_stop NAME [GRACE_S]: ask the guest to halt (out/stop, seen by init.sh),
# wait GRACE_S (default 20), then SIGKILL whatever is left of the instance.
# Idempotent: a missing or dead instance is fine, and stale state is removed.
uml_stop() {
	local name=$1 grace=${2:-20} d=$UML_STATE/$1 i pids why="leftovers of an earlier run"
	[[ -d $d ]] || return 0
	if uml_alive "$name"; then
		why="did not halt in ${grace}s"
		mkdir -p "$d/out" && : >"$d/out/stop"
		for ((i = 0; i < grace * 5; i++)); do uml_alive "$name" || break; sleep 0.2; done
	fi
	pids=$(uml_pids "$name")
	if [[ -n $pids ]]; then
		uml_log "$name: $why; SIGKILL $(echo $pids)"
		# shellcheck disable=SC2086
		kill -KILL $pids 2>/dev/null || true
		for ((i = 0; i < 50; i++)); do [[ -z $(uml_pids "$name") ]] && break; sleep 0.1; done
	fi
	rm -rf "$d/umldir" "$d/pid" "$d/out/stop"
}

# uml_boot NAME JOB [ARG...]: boot an instance that runs JOB (an absolute
# path, executed by init.sh inside the guest) and return once it runs.
# Settings (environment):
#   UML_MEM      guest memory (default 512M)
#   UML_MODULES  modules to load before the job, comma separated
#   UML_NETNS    run the kernel inside this network namespace (nsenter)
#   UML_NET      extra network device arguments, e.g. "vec0:transport=tap,ifname=t0"
#   UML_WAIT     "stop": keep running after the job until uml_stop
# Leftovers of an earlier (killed) run of the same NAME are removed first.
uml_boot() {
	local name=$1 job=$2 d=$UML_STATE/$1 args=""
	shift 2
	[[ -x $UML_KERNEL ]] || { uml_log "no UML kernel at $UML_KERNEL (apt: user-mode-linux; test/testbed/deps.sh)"; return 1; }
	local preload
	preload=$(uml_preload) || return 1
	[[ $job == /* && -x $job ]] || { uml_log "job must be an absolute path to an executable: $job"; return 1; }
	uml_stop "$name" 5
	# The console of the previous boot is what says why it ended (a retry
	# must not erase it).
	[[ -f $d/console.log ]] && mv -f "$d/console.log" "$d/console.log.prev"
	rm -rf "$d/out"
	mkdir -p "$d/out" "$d/umldir"
	local IFS=,
	args="$*"
	unset IFS
	[[ $args != *' '* ]] || { uml_log "job arguments must not contain spaces"; return 1; }
	local cmd=("$UML_KERNEL" "mem=${UML_MEM:-512M}" "umid=$name" "uml_dir=$d/umldir"
		root=/dev/root rootfstype=hostfs rootflags=/ rw "init=$UML_DIR/init.sh" con=null con0=fd:0,fd:1
		"SVTB_JOB=$job" "SVTB_ARGS=$args" "SVTB_OUT=$d/out" "SVTB_MODULES=${UML_MODULES:-}" "SVTB_WAIT=${UML_WAIT:-}")
	# shellcheck disable=SC2206 # UML_NET is a space-separated list of device arguments
	[[ -n ${UML_NET:-} ]] && cmd+=(${UML_NET})
	[[ -n ${UML_NETNS:-} ]] && cmd=(nsenter "--net=/var/run/netns/$UML_NETNS" -- "${cmd[@]}")
	date +%s.%N >"$d/started"
	# TMPDIR: UML backs guest memory with a (deleted) file there.
	# 8 and 9: lock files of the callers (testbed_lock); 3-7: whatever a caller
	# such as flock(1) holds a lock on. The kernel must hold none of them.
	TMPDIR=${TMPDIR:-/tmp} LD_PRELOAD=$preload setsid "${cmd[@]}" </dev/null >"$d/console.log" 2>&1 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	local pid=$!
	echo "$pid" >"$d/pid"
	# nsenter execs the kernel, so $! is the kernel's PID either way; wait until
	# it is the kernel (so uml_alive holds), or it died.
	local i
	for ((i = 0; i < 50; i++)); do uml_alive "$name" && return 0; kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	uml_alive "$name" || { uml_log "$name: kernel did not start; console:"; tail -20 "$d/console.log" >&2; return 1; }
}

# uml_wait NAME [TIMEOUT_S]: wait for the instance to end (job done, guest
# halted), then print the job's exit code; 124 and a stop on timeout.
uml_wait() {
	local name=$1 timeout=${2:-600} d=$UML_STATE/$1 i
	for ((i = 0; i < timeout * 10; i++)); do uml_alive "$name" || break; sleep 0.1; done
	if uml_alive "$name"; then
		uml_log "$name: still running after ${timeout}s; stopping it"
		uml_stop "$name" 5
		echo 124
		return
	fi
	uml_stop "$name" 0
	cat "$d/out/job.rc" 2>/dev/null || echo 125
}

# uml_job_ready NAME [TIMEOUT_S]: wait until init.sh has started the job.
uml_job_ready() {
	local name=$1 timeout=${2:-60} d=$UML_STATE/$1 i
	for ((i = 0; i < timeout * 10; i++)); do
		grep -q '^job ' "$d/out/init.status" 2>/dev/null && return 0
		uml_alive "$name" || break
		sleep 0.1
	done
	uml_log "$name: job not started; console tail:"
	tail -20 "$d/console.log" >&2
	return 1
}

# uml_host_kills NAME: the host kernel's reports, since the instance booted,
# of UML processes it killed because a signal frame did not fit on their
# alternate signal stack ("signal: linux[PID] overflowed sigaltstack"). With
# AVX-512 a frame needs ~3.4 KB (AT_MINSIGSTKSZ 3376 on this host) and
# UML 6.1 nests signals on small stacks; it happens rarely, under host load,
# and takes the kernel down. Prints the lines; fails when there are none.
uml_host_kills() {
	local d=$UML_STATE/$1 since
	[[ -f $d/started ]] || return 1
	since=$(date -u -d "@$(cut -d. -f1 "$d/started")" +%Y-%m-%dT%H:%M:%S)
	TZ=UTC dmesg --time-format iso 2>/dev/null |
		awk -v since="$since" 'substr($1, 1, 19) >= since && /signal: linux\[[0-9]+\] overflowed sigaltstack/' | grep . || return 1
}

# uml_death NAME: say why an instance that should be running is gone: the
# host kernel's kills (uml_host_kills) and the tail of its console (a guest
# panic, e.g. "Attempted to kill init", is there).
uml_death() {
	local name=$1 d=$UML_STATE/$1 kills
	if kills=$(uml_host_kills "$name"); then
		uml_log "$name: the host kernel killed UML processes (signal frame larger than their sigaltstack):"
		printf '%s\n' "$kills" >&2
	fi
	uml_log "$name: console tail:"
	tail -n 15 "$d/console.log" >&2 2>/dev/null || true
}

# uml_boot_until NAME TIMEOUT_S READY_CMD JOB [ARG...]: uml_boot, then wait
# until READY_CMD (a command or function) succeeds. An instance the host
# kernel killed meanwhile (uml_host_kills) is booted once more; any other
# death fails at once. Returns 0 ready, 1 dead or not booted, 2 timed out.
uml_boot_until() {
	local name=$1 timeout=$2 ready=$3 attempt i
	shift 3
	for attempt in 1 2; do
		uml_boot "$name" "$@" || return 1
		for ((i = 0; i < timeout * 10; i++)); do
			"$ready" && return 0
			if ! uml_alive "$name"; then
				uml_death "$name"
				if ((attempt == 1)) && uml_host_kills "$name" >/dev/null; then
					uml_log "$name: killed by the host kernel while booting; booting it once more"
					continue 2
				fi
				return 1
			fi
			sleep 0.1
		done
		return 2
	done
	return 1
}
