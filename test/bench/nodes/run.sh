#!/usr/bin/env bash
# Benchmark: a trace with --all-nodes against a single-node trace, on the
# testbed, measured in the same run (alternating, N rounds), medians and the
# ratio printed. Target: all-nodes <= 1.5x single-node, since
# collector Pods run in parallel (--max-parallel).
#   make testbed-up && bash test/bench/nodes/run.sh [ROUNDS]
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
cd "$ROOT"
source test/testbed/lib.sh
rounds=${1:-7}
KC=$ROOT/.testbed/kubeconfig
K="$K8S_BIN/kubectl --kubeconfig $KC"
go build -o bin/kubectl-svctrace ./cmd/kubectl-svctrace
$K apply -f test/demo/demo.yaml >/dev/null
$K -n svctrace-demo rollout status deploy/web --timeout=120s >/dev/null
nodes=$($K get nodes -o jsonpath='{.items[*].metadata.name}')
first=${nodes%% *}
run() { # args → seconds
	local t0 t1
	t0=$(date +%s.%N)
	bin/kubectl-svctrace --kubeconfig "$KC" --image svctrace.local/collector:dev -o json web -n svctrace-demo "$@" >/dev/null || true
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
single=() all=()
for i in $(seq 1 "$rounds"); do
	single+=("$(run --node "$first")")
	all+=("$(run --all-nodes)")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms=$(median "${single[@]}") ma=$(median "${all[@]}")
printf 'nodes: %s\n' "$nodes"
printf 'single-node (--node %s): median %.2fs  runs: %s\n' "$first" "$ms" "${single[*]}"
printf 'all nodes (--all-nodes):   median %.2fs  runs: %s\n' "$ma" "${all[*]}"
printf 'ratio all/single: %.2f (target <= 1.5)\n' "$(echo "$ma / $ms" | bc -l)"
