#!/usr/bin/env bash
# The testbed's IPVS node, svtb-node3: this host's kernel has no IPVS, so the
# node is a user-mode Linux kernel (uml/) started inside the node network
# namespace svtb-node3, whose vector/tap device tap0 is bridged with the
# namespace's eth0 (a veth on the testbed bridge). Inside it: eth0 =
# 10.0.0.13, Pod CIDR 10.244.3.0/24 (Pods are network namespaces running the
# testbed echo server, see uml/node-guest.sh), and the real kube-proxy
# v1.37.2 in ipvs mode (iptables on the legacy backend) against the testbed
# API server. There is no kubelet: no Node object is created here and no
# collector Pod can run on it; `exec` runs a command inside the node instead
# (the e2e runs the collector binary that way).
#
#   ipvs-node.sh up | down [--quiet] | status [--quiet] | exec CMD [ARG...] | pod-ips
#
# up is idempotent (a healthy node is kept) and removes the leftovers of a
# killed run first; down removes everything up made, also after a crash.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$TESTBED_DIR/uml/lib.sh"
UML_STATE=$STATE/uml

IPVS_NODE=svtb-node3
IPVS_NODE_IP=10.0.0.13
IPVS_NODE_CIDR=10.244.3.0/24
IPVS_NODE_GW=10.244.3.1/24
IPVS_NODE_ZONE=zone-c
IPVS_PODS=("ipvs-pod-a 10.244.3.10" "ipvs-pod-b 10.244.3.11")
dir=$STATE/nodes/$IPVS_NODE
hv=h-node3

healthy() {
	uml_alive "$IPVS_NODE" && [[ -e $dir/ready ]] &&
		in_ns "$CP_NS" curl -fsS -m 3 "http://$IPVS_NODE_IP:10256/livez" >/dev/null 2>&1
}

routes() { # add|del
	local n
	in_ns "$CP_NS" ip route "$1" "$IPVS_NODE_CIDR" via "$IPVS_NODE_IP" 2>/dev/null || true
	for n in "${NODES[@]}"; do
		in_ns "$n" ip route "$1" "$IPVS_NODE_CIDR" via "$IPVS_NODE_IP" 2>/dev/null || true
	done
}

down() {
	uml_stop "$IPVS_NODE" 20
	if [[ -e /var/run/netns/$IPVS_NODE ]]; then
		ip netns del "$IPVS_NODE" 2>/dev/null || { umount -l "/var/run/netns/$IPVS_NODE" 2>/dev/null || true; rm -f "/var/run/netns/$IPVS_NODE"; }
	fi
	[[ -e /var/run/netns/$HUB_NS ]] && in_ns "$HUB_NS" ip link del "$hv" 2>/dev/null || true
	[[ -e /var/run/netns/$CP_NS ]] && routes del
	rm -rf "$dir" "$UML_STATE/$IPVS_NODE"
}

up() {
	[[ -e /var/run/netns/$HUB_NS && -e /var/run/netns/$CP_NS ]] || die "the testbed is not up (make testbed-up)"
	if healthy; then
		log "$IPVS_NODE already up"
		return 0
	fi
	local t0
	t0=$(date +%s.%N)
	down
	mkdir -p "$dir/bin" "$dir/spool"
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -o "$dir/bin/echo" ./test/testbed/cmd/echo)
	local routes_list="" n
	for n in "${NODES[@]}"; do routes_list+="${routes_list:++}${NODE_CIDR[$n]}=${NODE_IP[$n]}"; done
	cat >"$dir/env" <<ENV
NODE_NAME=$IPVS_NODE
NODE_IP=$IPVS_NODE_IP
GATEWAY=$CP_IP
ROUTES=$routes_list
POD_CIDR_GW=$IPVS_NODE_GW
BIN_ECHO=$dir/bin/echo
KUBE_PROXY=$K8S_BIN/kube-proxy
ENV
	printf '%s\n' "${IPVS_PODS[@]}" >"$dir/pods"
	cat >"$dir/kube-proxy.yaml" <<KP
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: ipvs
hostnameOverride: $IPVS_NODE
clusterCIDR: $CLUSTER_CIDR
bindAddress: $IPVS_NODE_IP
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 0.0.0.0:10256
clientConnection: {kubeconfig: "$STATE/pki/kube-proxy.kubeconfig"}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
# Periodic resync every 10 min instead of 30 s, so that a fault the e2e makes
# by hand (ipvsadm, ip addr del) stays until it is traced; every API change
# still syncs at once.
ipvs: {syncPeriod: 10m}
KP
	# The wire: the namespace's eth0 on the testbed bridge, bridged with the
	# tap device the UML kernel opens.
	ip netns add "$IPVS_NODE"
	in_ns "$IPVS_NODE" ip link set lo up
	in_ns "$HUB_NS" ip link add "$hv" type veth peer name eth0 netns "$IPVS_NODE"
	in_ns "$HUB_NS" ip link set "$hv" master "$BRIDGE" up
	in_ns "$IPVS_NODE" ip tuntap add dev tap0 mode tap
	in_ns "$IPVS_NODE" ip link add br0 type bridge
	in_ns "$IPVS_NODE" ip link set eth0 master br0 up
	in_ns "$IPVS_NODE" ip link set tap0 master br0 up
	in_ns "$IPVS_NODE" ip link set br0 up
	routes add
	# The host kernel sometimes kills a UML process while it boots under
	# load (signal frame overflowing its sigaltstack, see uml/README.md):
	# uml_boot_until boots once more then, and only then.
	local rc=0
	UML_NETNS=$IPVS_NODE UML_NET="vec0:transport=tap,ifname=tap0" UML_WAIT=stop UML_MEM=${SVTB_IPVS_NODE_MEM:-1G} \
		UML_MODULES=$UML_IPVS_MODULES uml_boot_until "$IPVS_NODE" 120 healthy "$TESTBED_DIR/uml/node-guest.sh" "$dir" || rc=$?
	if ((rc != 0)); then
		tail -n 20 "$UML_STATE/$IPVS_NODE/out/job.log" "$dir/kube-proxy.log" >&2 || true
		((rc == 2)) && die "$IPVS_NODE: kube-proxy not healthy after 120s"
		die "$IPVS_NODE: the UML kernel exited"
	fi
	log "$IPVS_NODE up (UML $(linux --version 2>/dev/null), kube-proxy ipvs, ${#IPVS_PODS[@]} pods) in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")s"
}

# exec CMD...: run a command inside the node (through the guest's spool).
node_exec() {
	uml_alive "$IPVS_NODE" || die "$IPVS_NODE is not running"
	local id i rc q=""
	id=$(date +%s%N)-$$
	for a in "$@"; do q+=" $(printf '%q' "$a")"; done
	printf '%s\n' "exec$q" >"$dir/spool/$id.tmp"
	mv "$dir/spool/$id.tmp" "$dir/spool/$id.cmd"
	for ((i = 0; i < ${SVTB_EXEC_TIMEOUT:-120} * 20; i++)); do
		[[ -e $dir/spool/$id.rc ]] && break
		sleep 0.05
	done
	[[ -e $dir/spool/$id.rc ]] || die "exec in $IPVS_NODE timed out: $*"
	cat "$dir/spool/$id.out"
	cat "$dir/spool/$id.err" >&2
	rc=$(<"$dir/spool/$id.rc")
	rm -f "$dir/spool/$id".*
	return "$rc"
}

case ${1:-} in
up) [[ $(id -u) == 0 ]] || die "must run as root"; testbed_lock; up ;;
down) [[ $(id -u) == 0 ]] || die "must run as root"; testbed_lock; down; [[ ${2:-} == --quiet ]] || log "$IPVS_NODE down" ;;
status)
	if healthy; then [[ ${2:-} == --quiet ]] || echo "  running  $IPVS_NODE (UML pid $(<"$UML_STATE/$IPVS_NODE/pid"), kube-proxy ipvs, $IPVS_NODE_IP)"; exit 0; fi
	[[ ${2:-} == --quiet ]] || echo "  DOWN     $IPVS_NODE (UML kernel / kube-proxy ipvs)"; exit 1 ;;
exec) shift; node_exec "$@" ;;
env)
	echo "IPVS_NODE=$IPVS_NODE IPVS_NODE_IP=$IPVS_NODE_IP IPVS_NODE_CIDR=$IPVS_NODE_CIDR IPVS_NODE_ZONE=$IPVS_NODE_ZONE IPVS_NODE_DIR=$dir"
	for p in "${IPVS_PODS[@]}"; do echo "IPVS_POD=${p// /=}"; done ;;
*) echo "usage: $0 up | down [--quiet] | status [--quiet] | exec CMD [ARG...] | env" >&2; exit 2 ;;
esac
