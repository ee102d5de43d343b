#!/usr/bin/env bash
# Records the route section the real collector read on the project testbed's
# flannel overlay (SVTB_CNI=flannel: flanneld v0.28.10, VXLAN, kube subnet
# manager), with the Nodes' flannel annotations it is judged against:
#   testbed-flannel-healthy.json     as flannel programs it
#   testbed-flannel-fdb-missing.json svtb-node1 lost its flannel.1 FDB entry for svtb-node2
#   testbed-flannel-encap-blocked.json UDP 8472 arriving at svtb-node2 dropped
# Each file: {"nodes": {NAME: Node}, "route": {NODE: RouteObservation}}, both
# unedited from a `kubectl svctrace --all-nodes --save` bundle. It deploys two
# echo Pods (one per kubelet node) in the namespace route-fixtures, undoes
# every fault it makes (ctl.sh) and deletes the namespace.
# Needs root, jq and a healthy flannel testbed.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=collectors/testdata/route
K=${KUBECTL:-$HOME/.cache/svctrace/k8s-v1.37.2/bin/kubectl}
export KUBECONFIG=${KUBECONFIG:-$PWD/.testbed/kubeconfig}
ctl=test/testbed/ctl.sh
[[ $(bash $ctl info | sed -n 's/^CNI=//p') == flannel ]] || { echo "the testbed does not run flannel" >&2; exit 1; }
tmp=$(mktemp -d)
cleanup() {
	bash $ctl fdb-add svtb-node1 svtb-node2 >/dev/null 2>&1 || true
	bash $ctl encap-unblock svtb-node2 >/dev/null 2>&1 || true
	"$K" delete namespace route-fixtures --wait=false >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/kubectl-svctrace" ./cmd/kubectl-svctrace
"$K" create namespace route-fixtures
"$K" -n route-fixtures apply -f - <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: web}}}
      containers:
      - name: echo
        image: svctrace.local/echo:v1
        imagePullPolicy: Never
        args: [serve, --http-port, "8080"]
        readinessProbe: {httpGet: {path: /healthz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
YAML
"$K" -n route-fixtures rollout status deploy/web --timeout=120s
sleep 3
record() { # name
	"$tmp/kubectl-svctrace" web -n route-fixtures --all-nodes --image svctrace.local/collector:dev -o json --save "$tmp/$1" >/dev/null || true
	jq -n --slurpfile in "$tmp/$1/input.json" --slurpfile nodes "$tmp/$1/nodes.json" '{
		nodes: ($in[0].nodes // $in[0].Nodes),
		route: ([$nodes[0].nodes[] | select(.observation.sections.route.data != null) | {key: .node, value: .observation.sections.route.data}] | from_entries)
	}' >"$out/testbed-flannel-$1.json"
	echo "recorded $out/testbed-flannel-$1.json"
}
record healthy
bash $ctl fdb-del svtb-node1 svtb-node2
record fdb-missing
bash $ctl fdb-add svtb-node1 svtb-node2
bash $ctl encap-block svtb-node2
record encap-blocked
bash $ctl encap-unblock svtb-node2
