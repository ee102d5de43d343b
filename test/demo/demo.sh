#!/usr/bin/env bash
# make demo: bring up the project's local cluster (unless KUBECONFIG points
# at another one), deploy a demo app with a deliberate fault, and run
# kubectl svctrace on it with the pinned kubectl, as a newcomer would.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"

source test/testbed/lib.sh
KUBECTL_BIN="$K8S_BIN/kubectl"
if [[ -n "${SVCTRACE_DEMO_KUBECONFIG:-}" ]]; then
	kc=$SVCTRACE_DEMO_KUBECONFIG
	image_flag=()
else
	make --no-print-directory testbed-up
	kc=$ROOT/.testbed/kubeconfig
	image_flag=(--image svctrace.local/collector:dev)
fi
[[ -x "$KUBECTL_BIN" ]] || bash test/testbed/build.sh
go build -trimpath -o bin/kubectl-svctrace ./cmd/kubectl-svctrace

"$KUBECTL_BIN" --kubeconfig "$kc" apply -f test/demo/demo.yaml
"$KUBECTL_BIN" --kubeconfig "$kc" -n svctrace-demo rollout status deploy/web --timeout=120s
"$KUBECTL_BIN" --kubeconfig "$kc" -n svctrace-demo get pods,svc -o wide
echo
echo "+ kubectl svctrace web -n svctrace-demo"
# kubectl finds the plugin on PATH, exactly as after a krew install.
set +e
KUBECONFIG=$kc PATH="$ROOT/bin:$PATH" "$KUBECTL_BIN" svctrace web -n svctrace-demo "${image_flag[@]}"
code=$?
set -e
echo
echo "kubectl svctrace exited $code (3 = a layer failed: the demo's deliberate fault)."
[[ $code == 3 ]]
