#!/usr/bin/env bash
# Manifests for the fleet bench, as a YAML stream on stdout:
#   gen.sh nodes FROM TO            kwok nodes fleet-FROM … fleet-(TO-1)
#   gen.sh agents FROM TO           one agent Pod per node, as the DaemonSet would make
#   gen.sh service ENDPOINTS NODES  Service default/web, its endpoints in slices of 100 spread over NODES nodes
set -euo pipefail
node() { printf 'fleet-%04d' "$1"; }
case $1 in
nodes)
	for ((i = $2; i < $3; i++)); do
		cat <<Y
---
apiVersion: v1
kind: Node
metadata:
  name: $(node $i)
  annotations: {kwok.x-k8s.io/node: fake}
  labels: {kubernetes.io/hostname: $(node $i), type: kwok}
Y
	done
	;;
agents)
	for ((i = $2; i < $3; i++)); do
		cat <<Y
---
apiVersion: v1
kind: Pod
metadata:
  name: svctrace-agent-$(node $i)
  namespace: svctrace-system
  labels: {app.kubernetes.io/name: svctrace-agent, app.kubernetes.io/managed-by: svctrace}
spec:
  nodeName: $(node $i)
  automountServiceAccountToken: false
  hostNetwork: true
  containers:
  - name: agent
    image: svctrace.local/collector:dev
    command: [/svctrace-collector, --wait]
Y
	done
	;;
service)
	eps=$2 nodes=$3
	cat <<Y
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  clusterIP: 10.96.0.50
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
Y
	for ((s = 0; s * 100 < eps; s++)); do
		printf -- '---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-%03d\n  namespace: default\n  labels: {kubernetes.io/service-name: web, endpointslice.kubernetes.io/managed-by: fleet-bench}\naddressType: IPv4\nports: [{name: http, port: 8080, protocol: TCP}]\nendpoints:\n' "$s"
		for ((e = s * 100; e < (s + 1) * 100 && e < eps; e++)); do
			printf -- '- addresses: ["10.%d.%d.%d"]\n  nodeName: %s\n  conditions: {ready: true}\n' $((244 + e / 65536)) $((e / 256 % 256)) $((e % 256)) "$(node $((e % nodes)))"
		done
	done
	;;
*) echo "usage: gen.sh nodes|agents|service …" >&2; exit 2 ;;
esac
