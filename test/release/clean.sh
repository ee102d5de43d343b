#!/usr/bin/env bash
# clean.sh (`make clean`): removes what builds put in the tree (bin/, dist/).
# CLEAN_CACHE=1 also removes the pinned release tools from the cache
# (${SVCTRACE_CACHE:-$HOME/.cache/svctrace}/tools); the testbed's binaries and
# state are the testbed's to clean.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$root/bin" "$root/dist"
if [[ ${CLEAN_CACHE:-0} == 1 ]]; then
  rm -rf "${SVCTRACE_CACHE:-$HOME/.cache/svctrace}/tools"
fi
