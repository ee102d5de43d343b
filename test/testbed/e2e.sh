#!/usr/bin/env bash
# make e2e: bring the testbed up if needed, then run the end-to-end suite, then
# (unless SVTB_E2E_TEARDOWN=0) the testbed lifecycle test, which takes the
# cluster down and up again (also after kill -9) and leaves it up.
# Packages run one at a time (-p 1): fault-injection tests change shared nodes.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$TESTBED_DIR/up.sh"
# A testbed that was already up holds images from an older checkout: rebuild
# them (the collector above all) from this tree and import them.
"$TESTBED_DIR/images.sh"
cd "$REPO_ROOT"
export SVCTRACE_E2E=1 SVCTRACE_KUBECONFIG=$KUBECONFIG_DIR/kubeconfig
rc=0
go test -p 1 ./test/e2e/... -count=1 -timeout 60m ${E2E_RUN:+-run "$E2E_RUN"} ${E2E_VERBOSE:+-v} || rc=$?
if [[ ${SVTB_E2E_TEARDOWN:-1} == 1 ]]; then
	SVCTRACE_E2E_TEARDOWN=1 go test ./test/e2e/teardown -count=1 -timeout 30m -v || rc=$?
fi
exit $rc
