#!/usr/bin/env bash
# make e2e: bring the testbed up if needed, then run the end-to-end suite.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$TESTBED_DIR/up.sh"
cd "$REPO_ROOT"
export GOFLAGS=-mod=mod SVCTRACE_E2E=1 SVCTRACE_KUBECONFIG=$KUBECONFIG_DIR/kubeconfig
go test ./test/e2e/... -count=1 -timeout 30m ${E2E_RUN:+-run "$E2E_RUN"} ${E2E_VERBOSE:+-v}
