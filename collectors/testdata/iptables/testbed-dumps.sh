#!/usr/bin/env bash
# Takes real kube-proxy dumps from the project testbed (test/testbed): creates
# the Services and EndpointSlices of testbed-objects.json in the namespace
# nf-fixtures, waits until both nodes' kube-proxies programmed them, dumps
# node1 (iptables mode) with iptables-nft-save and node2 (nftables mode) with
# nft, records the API objects, and deletes the namespace. Read-only on the
# nodes; touches nothing else in the cluster. Needs root and a healthy testbed.
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=collectors/testdata
K=${KUBECTL:-$HOME/.cache/svctrace/k8s-v1.37.2/bin/kubectl}
export KUBECONFIG=${KUBECONFIG:-$PWD/.testbed/kubeconfig}
n1=/var/run/netns/svtb-node1 n2=/var/run/netns/svtb-node2
trap '"$K" delete namespace nf-fixtures --wait=false >/dev/null 2>&1 || true' EXIT
"$K" create -f $out/iptables/testbed-objects.json
for i in $(seq 1 60); do
	a=$(nsenter --net=$n1 iptables-nft-save -t nat 2>/dev/null | grep -c 'nf-fixtures/big:http -> \|nf-fixtures/web:http cluster IP' || true)
	b=$(nsenter --net=$n2 nft list table ip kube-proxy 2>/dev/null | grep -c 'chain service-.*nf-fixtures/\(big\|web\)/' || true)
	# big has no endpoint comments (> 1000 endpoints): wait for its SEP count instead.
	c=$(nsenter --net=$n1 iptables-nft-save -t nat 2>/dev/null | grep -c '^:KUBE-SEP-' || true)
	[[ $a -ge 1 && $b -ge 2 && $c -ge 1001 ]] && break
	sleep 2
done
sleep 2
"$K" -n nf-fixtures get services,endpointslices -o json > $out/iptables/testbed-api.json
strip() { grep -v '^# \(Generated\|Completed\|Warning\)'; }
nsenter --net=$n1 iptables-nft-save | strip > $out/iptables/testbed-node1.save
nsenter --net=$n1 cat /proc/self/net/ip_tables_names > $out/iptables/testbed-node1.ip_tables_names || true
nsenter --net=$n2 nft list table ip kube-proxy > $out/nftables/testbed-node2.list
nsenter --net=$n2 nft --json list table ip kube-proxy > $out/nftables/testbed-node2.json
nsenter --net=$n2 nft list table ip6 kube-proxy > $out/nftables/testbed-node2-ip6.list 2>/dev/null || true
nsenter --net=$n2 iptables-nft-save -t nat 2>&1 | strip > $out/iptables/testbed-node2-nat.save || true
echo "dumps taken"
