#!/usr/bin/env bash
# The testbed's IPVS node, svtb-node3: this host's kernel has no IPVS, so the
# node is a user-mode Linux kernel (uml/) started inside the node network
# namespace svtb-node3, whose vector/tap device tap0 is bridged with the
# namespace's eth0 (a veth on the testbed bridge). Inside it: eth0 =
# 10.0.0.13 and fd00:10::13, the real kube-proxy v1.37.2 in ipvs mode
# (iptables and ip6tables on the legacy backend) against the testbed API
# server, and Pod CIDRs 10.244.3.0/24 and fd00:10:244:3::/64: the families
# the cluster runs ($STATE/ip-families, written by up.sh).
# `exec` runs a command inside the node.
#
# By default it runs no kubelet: the node's Pods are two network namespaces
# with the echo server, and there is no Node object (the e2e makes one).
# SVTB_IPVS_KUBELET=1 also runs a real kubelet v1.37.2 with containerd and
# the CNI bridge plugin (uml/kubelet-guest.sh): the Node registers itself,
# Ready, tainted $IPVS_NODE_TAINT so that only Pods that tolerate it run
# there (collector Pods tolerate every taint). Opt-in for its cost: the
# kubelet and containerd in user-mode Linux keep a host core 30-50% busy
# when idle and made the e2e suite twice as long (test/testbed/README.md).
#
#   ipvs-node.sh up | down [--quiet] | status [--quiet] | exec CMD [ARG...] | import TAR... | env
#
# up is idempotent (a healthy node is kept) and removes the leftovers of a
# killed run first; down removes everything up made, also after a crash.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$TESTBED_DIR/uml/lib.sh"
UML_STATE=$STATE/uml
# The node joins the cluster that runs, in its families, whatever this
# shell's SVTB_IP_FAMILIES says.
if [[ -f $STATE/ip-families && $(<"$STATE/ip-families") != "$IP_FAMILIES_SPEC" ]]; then
	SVTB_IP_FAMILIES=$(<"$STATE/ip-families")
	source "$TESTBED_DIR/lib.sh"
fi

IPVS_NODE_GW=10.244.3.1/24 IPVS_NODE_GW6=fd00:10:244:3::1/64
dir=$STATE/nodes/$IPVS_NODE
# `up` builds the node as asked (SVTB_IPVS_KUBELET); status, env, exec and
# import describe the node that runs (its mode is in $dir/kubelet-mode).
KUBELET_MODE=${SVTB_IPVS_KUBELET:-0}
if [[ ${1:-} != up && -f $dir/kubelet-mode ]]; then KUBELET_MODE=$(<"$dir/kubelet-mode"); fi
IPVS_PODS=()
# NAME IPV4 IPV6 (an address is "-" in a cluster without its family).
((KUBELET_MODE)) || IPVS_PODS=("ipvs-pod-a $(has_family ipv4 && echo 10.244.3.10 || echo -) $(has_family ipv6 && echo fd00:10:244:3::a || echo -)"
	"ipvs-pod-b $(has_family ipv4 && echo 10.244.3.11 || echo -) $(has_family ipv6 && echo fd00:10:244:3::b || echo -)")
hv=h-node3

# The Node object is Ready and its kubelet is the one running now (its
# heartbeat is newer than this boot).
node_ready() {
	local st
	st=$(KUBECTL get node "$IPVS_NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) || return 1
	[[ $st == True ]]
}

healthy() {
	[[ $(cat "$dir/kubelet-mode" 2>/dev/null) == "$KUBELET_MODE" ]] || return 1
	[[ $(cat "$dir/ip-families" 2>/dev/null || echo ipv4) == "$IP_FAMILIES_SPEC" ]] || return 1
	uml_alive "$IPVS_NODE" && [[ -e $dir/ready ]] &&
		in_ns "$CP_NS" curl -fsS -m 3 "http://$(host_port "$IPVS_NODE_IP" 10256)/livez" >/dev/null 2>&1 || return 1
	((KUBELET_MODE)) || return 0
	[[ -e $dir/kubelet-ready ]] && node_ready
}

routes() { # add|del: the other hosts' routes to the node's Pod CIDRs
	local ns
	for ns in "$CP_NS" "${NODES[@]}"; do
		has_family ipv4 && { in_ns "$ns" ip route "$1" "$IPVS_NODE_CIDR4" via "$IPVS_NODE_IP4" 2>/dev/null || true; }
		has_family ipv6 && { in_ns "$ns" ip -6 route "$1" "$IPVS_NODE_CIDR6" via "$IPVS_NODE_IP6" 2>/dev/null || true; }
	done
	return 0
}

down() {
	uml_stop "$IPVS_NODE" 20
	if [[ -e /var/run/netns/$IPVS_NODE ]]; then
		ip netns del "$IPVS_NODE" 2>/dev/null || { umount -l "/var/run/netns/$IPVS_NODE" 2>/dev/null || true; rm -f "/var/run/netns/$IPVS_NODE"; }
	fi
	[[ -e /var/run/netns/$HUB_NS ]] && in_ns "$HUB_NS" ip link del "$hv" 2>/dev/null || true
	[[ -e /var/run/netns/$CP_NS ]] && routes del
	# The kubelet (or, without one, the e2e) registered the Node: without the
	# node it would stay, NotReady.
	if [[ -f $STATE/pki/admin.kubeconfig ]]; then
		KUBECTL delete node "$IPVS_NODE" --ignore-not-found --wait=false --request-timeout=5s >/dev/null 2>&1 || true
	fi
	rm -rf "$dir" "$UML_STATE/$IPVS_NODE"
}

up() {
	[[ -e /var/run/netns/$HUB_NS && -e /var/run/netns/$CP_NS ]] || die "the testbed is not up (make testbed-up)"
	if healthy; then
		log "$IPVS_NODE already up"
		return 0
	fi
	local t0 timeout=${SVTB_IPVS_NODE_TIMEOUT:-180}
	# containerd, the image import and the kubelet come after kube-proxy.
	((KUBELET_MODE)) && timeout=${SVTB_IPVS_NODE_TIMEOUT:-300}
	t0=$(date +%s.%N)
	down
	mkdir -p "$dir/bin" "$dir/spool" "$dir/manifests"
	echo "$KUBELET_MODE" >"$dir/kubelet-mode"
	echo "$IP_FAMILIES_SPEC" >"$dir/ip-families"
	(cd "$REPO_ROOT" && CGO_ENABLED=0 go build -trimpath -o "$dir/bin/echo" ./test/testbed/cmd/echo)
	# A testbed made before the node had a kubelet has no certificate for it.
	[[ -f $STATE/pki/kubelet-$IPVS_NODE.kubeconfig ]] || "$TESTBED_DIR/pki.sh" node "$IPVS_NODE"
	local images=""
	if ((KUBELET_MODE)); then
		local img
		for img in pause echo collector; do
			if [[ -f $IMAGES_DIR/$img.tar ]]; then
				images+="${images:+ }$IMAGES_DIR/$img.tar"
			elif [[ $img == collector ]]; then
				log "$IPVS_NODE: no collector image yet; collector Pods cannot start there until the next up (make images)"
			else
				die "image $IMAGES_DIR/$img.tar missing (make images)"
			fi
		done
	fi
	local routes_list="" routes6_list="" n
	for n in "${NODES[@]}"; do
		routes_list+="${routes_list:++}${NODE_CIDR4[$n]}=${NODE_IP4[$n]}"
		routes6_list+="${routes6_list:++}${NODE_CIDR6[$n]}=${NODE_IP6[$n]}"
	done
	# Each family's settings are empty in a cluster without it.
	local v4=1 v6=1
	has_family ipv4 || v4=0
	has_family ipv6 || v6=0
	cat >"$dir/env" <<ENV
NODE_NAME=$IPVS_NODE
NODE_IP=$( ((v4)) && echo $IPVS_NODE_IP4)
NODE_IP6=$( ((v6)) && echo $IPVS_NODE_IP6)
NODE_IPS=$(per_family $IPVS_NODE_IP4 $IPVS_NODE_IP6)
GATEWAY=$( ((v4)) && echo $CP_IP4)
GATEWAY6=$( ((v6)) && echo $CP_IP6)
ROUTES=$( ((v4)) && echo "$routes_list")
ROUTES6=$( ((v6)) && echo "$routes6_list")
POD_CIDR_GW=$( ((v4)) && echo $IPVS_NODE_GW)
POD_CIDR_GW6=$( ((v6)) && echo $IPVS_NODE_GW6)
BIN_ECHO=$dir/bin/echo
KUBE_PROXY=$K8S_BIN/kube-proxy
KUBELET=$( ((KUBELET_MODE)) && echo "$K8S_BIN/kubelet")
CONTAINERD_BIN=/usr/bin/containerd
IMAGES="$images"
POD_CIDR=$( ((v4)) && echo $IPVS_NODE_CIDR4)
POD_CIDR6=$( ((v6)) && echo $IPVS_NODE_CIDR6)
KUBECONFIG_FILE=$STATE/pki/kubelet-$IPVS_NODE.kubeconfig
CLIENT_CA=$STATE/pki/ca.crt
CLUSTER_DNS=$KUBE_DNS_IP
RESOLV_CONF=$STATE/resolv.conf
NODE_LABELS=topology.kubernetes.io/zone=$IPVS_NODE_ZONE,svctrace.io/testbed-node=$IPVS_NODE,svctrace.dev/ipvs-node=uml
NODE_TAINTS=$IPVS_NODE_TAINT
READY_FILE=kubelet-ready
ENV
	printf '%s\n' "${IPVS_PODS[@]}" >"$dir/pods"
	cat >"$dir/kube-proxy.yaml" <<KP
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: ipvs
hostnameOverride: $IPVS_NODE
clusterCIDR: $CLUSTER_CIDR
bindAddress: $IPVS_NODE_IP
# On the node's address too: the e2e reads its sync times from outside,
# since every exec inside user-mode Linux costs its one CPU 0.2-0.4 s.
metricsBindAddress: 0.0.0.0:10249
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
		UML_MODULES=$UML_IPVS_MODULES$(has_family ipv6 && echo ",$UML_IPVS_MODULES6")$( ((KUBELET_MODE)) && echo ,overlay) uml_boot_until "$IPVS_NODE" "$timeout" healthy "$TESTBED_DIR/uml/node-guest.sh" "$dir" || rc=$?
	if ((rc != 0)); then
		tail -n 20 "$UML_STATE/$IPVS_NODE/out/job.log" "$dir/kube-proxy.log" >&2 || true
		((KUBELET_MODE)) && tail -n 20 "$dir/status" "$dir/kubelet.log" >&2 2>/dev/null
		((rc == 2)) && die "$IPVS_NODE: kube-proxy$( ((KUBELET_MODE)) && echo ' or the kubelet') not healthy after ${timeout}s"
		die "$IPVS_NODE: the UML kernel exited"
	fi
	local what="kubelet, Node Ready"
	((KUBELET_MODE)) || what="no kubelet, ${#IPVS_PODS[@]} pod netns"
	log "$IPVS_NODE up (UML $(linux --version 2>/dev/null), kube-proxy ipvs, $what) in $(printf '%.1f' "$(echo "$(date +%s.%N) - $t0" | bc)")s"
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

# import TAR...: load image tarballs into the node's containerd (a testbed
# that was up keeps the images of an older checkout, as on the other nodes).
node_import() {
	((KUBELET_MODE)) || return 0
	local t
	for t in "$@"; do
		node_exec ctr -a /run/svctrace-kubelet/containerd.sock -n k8s.io images import "$t" >/dev/null || die "import $t into $IPVS_NODE failed"
	done
	log "images imported into $IPVS_NODE"
}

case ${1:-} in
up) [[ $(id -u) == 0 ]] || die "must run as root"; testbed_lock; up ;;
down) [[ $(id -u) == 0 ]] || die "must run as root"; testbed_lock; down; [[ ${2:-} == --quiet ]] || log "$IPVS_NODE down" ;;
status)
	if healthy; then [[ ${2:-} == --quiet ]] || echo "  running  $IPVS_NODE (UML pid $(<"$UML_STATE/$IPVS_NODE/pid"), kube-proxy ipvs, $( ((KUBELET_MODE)) && echo "kubelet, ")$IPVS_NODE_IP)"; exit 0; fi
	[[ ${2:-} == --quiet ]] || echo "  DOWN     $IPVS_NODE (UML kernel / kube-proxy ipvs$( ((KUBELET_MODE)) && echo " / kubelet"))"; exit 1 ;;
exec) shift; node_exec "$@" ;;
import) shift; node_import "$@" ;;
env)
	# IPVS_NODE_IP, IPVS_NODE_CIDR, IPVS_POD: the primary family's;
	# IPVS_NODE_IPS: every family's, primary first; IPVS_POD6: the Pods'
	# IPv6 addresses in a cluster with IPv6.
	echo "IPVS_NODE=$IPVS_NODE IPVS_NODE_IP=$IPVS_NODE_IP IPVS_NODE_IPS=$(per_family $IPVS_NODE_IP4 $IPVS_NODE_IP6) IPVS_NODE_CIDR=$IPVS_NODE_CIDR IPVS_NODE_ZONE=$IPVS_NODE_ZONE IPVS_NODE_DIR=$dir IPVS_NODE_KUBELET=$KUBELET_MODE IPVS_NODE_TAINT=$IPVS_NODE_TAINT"
	for p in "${IPVS_PODS[@]}"; do
		read -r name ip4 ip6 <<<"$p"
		echo "IPVS_POD=$name=$(pick "$PRIMARY_FAMILY" "$ip4" "$ip6")"
		[[ $ip6 == - ]] || echo "IPVS_POD6=$name=$ip6"
	done ;;
*) echo "usage: $0 up | down [--quiet] | status [--quiet] | exec CMD [ARG...] | import TAR... | env" >&2; exit 2 ;;
esac
