#!/usr/bin/env bash
# run.sh NAME JOB [ARG...]: boot a user-mode Linux kernel (see lib.sh), run
# JOB inside it, halt, and exit with JOB's exit code. The job's output is in
# $UML_STATE/NAME/out/job.log (printed on failure); the kernel's console in
# $UML_STATE/NAME/console.log. Ctrl-C or a kill of this script stops the guest.
#   run.sh stop NAME    stop an instance (also the leftovers of a killed run)
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "$0")/lib.sh"
(($# >= 2)) || { echo "usage: $0 NAME JOB [ARG...] | stop NAME" >&2; exit 2; }
if [[ $1 == stop ]]; then uml_stop "$2"; exit 0; fi
name=$1
trap 'uml_stop "$name" 5' INT TERM
uml_boot "$@"
rc=$(uml_wait "$name" "${UML_TIMEOUT:-1800}")
d=$UML_STATE/$name
if [[ $rc != 0 ]]; then
	uml_log "$name: job exited $rc; job log tail:"
	tail -30 "$d/out/job.log" >&2 || true
fi
exit "$rc"
