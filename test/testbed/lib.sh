# shellcheck shell=bash
# Common settings for the svctrace testbed scripts. Sourced, not executed.
# Machine-wide runtime state lives OUTSIDE any work tree so `down` works from any
# checkout and after a crash.

K8S_VERSION=v1.37.2
K8S_STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.0
COREDNS_VERSION=v1.15.0
KUBE_ROUTER_VERSION=v2.1.0
FLANNEL_VERSION=v0.28.10

TESTBED_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$TESTBED_DIR/../.." && pwd)

SVCTRACE_CACHE=${SVCTRACE_CACHE:-$HOME/.cache/svctrace}
K8S_BIN=$SVCTRACE_CACHE/k8s-$K8S_VERSION/bin
ETCD_BIN=$SVCTRACE_CACHE/etcd-$ETCD_VERSION/bin
COREDNS_BIN=$SVCTRACE_CACHE/coredns-$COREDNS_VERSION/bin
KUBE_ROUTER_BIN=$SVCTRACE_CACHE/kube-router-$KUBE_ROUTER_VERSION/bin
FLANNEL_BIN=$SVCTRACE_CACHE/flannel-$FLANNEL_VERSION/bin

STATE=/var/lib/svctrace-testbed      # certs, etcd data, kubelet/containerd roots, configs
RUN=/run/svctrace-testbed            # pid files, sockets
LOGS=$STATE/logs
IMAGES_DIR=$SVCTRACE_CACHE/images    # docker-archive tarballs (rebuilt by `make images`)

# IP families: SVTB_IP_FAMILIES is ipv4, ipv6, or both in primary-first
# order (ipv4,ipv6 or ipv6,ipv4; dual means ipv4,ipv6). The primary family is
# the one a SingleStack Service, the API server's advertise address and the
# first of each Node's and Pod's addresses are in.
IP_FAMILIES_SPEC=${SVTB_IP_FAMILIES:-ipv4}
[[ $IP_FAMILIES_SPEC == dual ]] && IP_FAMILIES_SPEC=ipv4,ipv6
case $IP_FAMILIES_SPEC in
ipv4 | ipv6 | ipv4,ipv6 | ipv6,ipv4) ;;
*) echo "SVTB_IP_FAMILIES=$IP_FAMILIES_SPEC: want ipv4, ipv6, dual, ipv4,ipv6 or ipv6,ipv4" >&2; exit 1 ;;
esac
IFS=, read -r -a IP_FAMILIES <<<"$IP_FAMILIES_SPEC"
PRIMARY_FAMILY=${IP_FAMILIES[0]}
has_family() { [[ ,$IP_FAMILIES_SPEC, == *,$1,* ]]; }
# pick FAM V4 V6: the family's value.
pick() { if [[ $1 == ipv6 ]]; then echo "$3"; else echo "$2"; fi; }
# per_family V4 V6: the values of the cluster's families, primary first, comma separated.
per_family() {
	local f out=""
	for f in "${IP_FAMILIES[@]}"; do out+="${out:+,}$(pick "$f" "$1" "$2")"; done
	echo "$out"
}
# host_port IP PORT: IP:PORT, an IPv6 address in brackets.
host_port() { if [[ $1 == *:* ]]; then echo "[$1]:$2"; else echo "$1:$2"; fi; }

# Topology (stable names; later tests rely on them, see README.md). Hosts are
# on 10.0.0.0/24 and fd00:10::/64 (a ULA prefix), Pods on 10.244.0.0/16 and
# fd00:10:244::/56 (a /24 and a /64 a node), Services on 10.96.0.0/16 and
# fd00:10:96::/112.
HUB_NS=svtb-hub
CP_NS=svtb-cp
CP_IP4=10.0.0.1 CP_IP6=fd00:10::1
CP_IP=$(pick "$PRIMARY_FAMILY" $CP_IP4 $CP_IP6)
BRIDGE=svtb-br0
NODES=(svtb-node1 svtb-node2)
declare -A NODE_IP4=([svtb-node1]=10.0.0.11 [svtb-node2]=10.0.0.12)
declare -A NODE_IP6=([svtb-node1]=fd00:10::11 [svtb-node2]=fd00:10::12)
declare -A NODE_CIDR4=([svtb-node1]=10.244.1.0/24 [svtb-node2]=10.244.2.0/24)
declare -A NODE_CIDR6=([svtb-node1]=fd00:10:244:1::/64 [svtb-node2]=fd00:10:244:2::/64)
declare -A NODE_ZONE=([svtb-node1]=zone-a [svtb-node2]=zone-b)
# NODE_IP and NODE_CIDR are the primary family's; NODE_IPS and NODE_CIDRS
# every family's, primary first, comma separated.
declare -A NODE_IP=() NODE_CIDR=() NODE_IPS=() NODE_CIDRS=()
for _n in "${NODES[@]}"; do
	NODE_IP[$_n]=$(pick "$PRIMARY_FAMILY" "${NODE_IP4[$_n]}" "${NODE_IP6[$_n]}")
	NODE_CIDR[$_n]=$(pick "$PRIMARY_FAMILY" "${NODE_CIDR4[$_n]}" "${NODE_CIDR6[$_n]}")
	NODE_IPS[$_n]=$(per_family "${NODE_IP4[$_n]}" "${NODE_IP6[$_n]}")
	NODE_CIDRS[$_n]=$(per_family "${NODE_CIDR4[$_n]}" "${NODE_CIDR6[$_n]}")
done
unset _n
# The IPVS node (ipvs-node.sh): a user-mode Linux kernel with a real kubelet,
# tainted so that only Pods that tolerate it (the IPVS e2e's, collector Pods)
# run there.
IPVS_NODE=svtb-node3
IPVS_NODE_IP4=10.0.0.13 IPVS_NODE_IP6=fd00:10::13
IPVS_NODE_CIDR4=10.244.3.0/24 IPVS_NODE_CIDR6=fd00:10:244:3::/64
IPVS_NODE_IP=$(pick "$PRIMARY_FAMILY" $IPVS_NODE_IP4 $IPVS_NODE_IP6)
IPVS_NODE_CIDR=$(pick "$PRIMARY_FAMILY" $IPVS_NODE_CIDR4 $IPVS_NODE_CIDR6)
IPVS_NODE_ZONE=zone-c
IPVS_NODE_TAINT=svctrace.io/uml-node=ipvs:NoSchedule
CLUSTER_CIDR4=10.244.0.0/16 CLUSTER_CIDR6=fd00:10:244::/56
SERVICE_CIDR4=10.96.0.0/16 SERVICE_CIDR6=fd00:10:96::/112
KUBE_DNS_IP4=10.96.0.10 KUBE_DNS_IP6=fd00:10:96::a
# Every family's, primary first, comma separated.
CLUSTER_CIDR=$(per_family $CLUSTER_CIDR4 $CLUSTER_CIDR6)
SERVICE_CIDR=$(per_family $SERVICE_CIDR4 $SERVICE_CIDR6)
KUBE_DNS_IPS=$(per_family $KUBE_DNS_IP4 $KUBE_DNS_IP6)
# The primary family's: what the kubelets put in the Pods' resolv.conf.
KUBE_DNS_IP=${KUBE_DNS_IPS%%,*}
API_PORT=6443
# Loopback forwarder in the root netns -> apiserver in the control-plane netns.
FWD_PORT=${SVTB_API_FORWARD_PORT:-16443}

# kube-proxy mode per node, in NODES order.
IFS=, read -r -a PROXY_MODES <<<"${SVTB_PROXY_MODES:-iptables,nftables}"
declare -A NODE_PROXY_MODE=()
for _i in "${!NODES[@]}"; do NODE_PROXY_MODE[${NODES[$_i]}]=${PROXY_MODES[$_i]:-iptables}; done
unset _i
# NetworkPolicy enforcement per node (kube-router's firewall only), in NODES
# order: kube-router or none. The ptp CNI enforces nothing by itself.
IFS=, read -r -a NETPOL_MODES <<<"${SVTB_NETPOL:-kube-router,kube-router}"
declare -A NODE_NETPOL=()
for _i in "${!NODES[@]}"; do NODE_NETPOL[${NODES[$_i]}]=${NETPOL_MODES[$_i]:-kube-router}; done
unset _i

# Pod networking between the two kubelet nodes: flannel (the real flanneld,
# VXLAN backend, kube subnet manager; Pods on flannel's bridge cni0) or ptp
# (a veth per Pod and static routes between the nodes' Pod CIDRs). The IPVS
# node is on static routes either way.
CNI_MODE=${SVTB_CNI:-flannel}
case $CNI_MODE in flannel | ptp) ;; *) echo "SVTB_CNI=$CNI_MODE: want flannel or ptp" >&2; exit 1 ;; esac
FLANNEL_VNI=1
FLANNEL_PORT=8472

KUBECONFIG_DIR=$REPO_ROOT/.testbed

log() { printf '[testbed %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

in_ns() { local ns=$1; shift; nsenter --net="/var/run/netns/$ns" -- "$@"; }

# Start a daemon inside a netns, record its PID in $RUN/<name>.pid.
# Uses nsenter (not `ip netns exec`) so the process shares the host mount namespace.
start_daemon() {
	local name=$1 ns=$2; shift 2
	mkdir -p "$RUN" "$LOGS"
	if [[ -n $ns ]]; then
		setsid nsenter --net="/var/run/netns/$ns" -- "$@" >>"$LOGS/$name.log" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	else
		setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	fi
	local pid=$! i
	echo "$pid" >"$RUN/$name.pid"
	# Remember the exact command line so `down` only ever signals what we started.
	printf '%s\n' "$1" >"$RUN/$name.cmd"
	# Until setsid and nsenter have exec'd the daemon, the pid runs one of
	# them and pid_alive says no: a caller checking liveness right away (a
	# loaded machine makes the window long) would take a start for an exit.
	for ((i = 0; i < 50; i++)); do
		pid_alive "$name" || [[ ! -e /proc/$pid ]] || { sleep 0.1; continue; }
		break
	done
}

# pid_alive NAME: true if the recorded pid is alive and is still our binary.
pid_alive() {
	local name=$1 pid exe
	[[ -f $RUN/$name.pid ]] || return 1
	pid=$(<"$RUN/$name.pid")
	[[ -r /proc/$pid/cmdline ]] || return 1
	exe=$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n1)
	[[ $exe == "$(<"$RUN/$name.cmd")" ]]
}

ctr_node() { local n=$1; shift; ctr --address "$RUN/$n/containerd.sock" -n k8s.io "$@"; }

# import_images NODE: load every built image tarball into the node's containerd.
import_images() {
	local n=$1 t
	for t in "$IMAGES_DIR"/*.tar; do
		[[ -e $t ]] || continue
		ctr_node "$n" images import "$t" >/dev/null || die "import $t into $n failed"
	done
	log "images imported into $n"
}

KUBECTL() { "$K8S_BIN/kubectl" --kubeconfig "$STATE/pki/admin.kubeconfig" "$@"; }

# nodes_ready NODE...: how many of these Node objects are Ready (others,
# such as the IPVS node registering on its own, are not counted).
nodes_ready() {
	KUBECTL get nodes -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' 2>/dev/null |
		awk -v want=" $* " 'index(want, " " $1 " ") && $2 == "True" {n++} END {print n + 0}'
}

# node_dir NODE: per-node state directory.
node_dir() { echo "$STATE/nodes/$1"; }
node_run() { echo "$RUN/$1"; }

# start_containerd NODE
start_containerd() {
	local n=$1 d r
	d=$(node_dir "$n") r=$(node_run "$n")
	mkdir -p "$r"
	start_daemon "containerd-$n" "$n" /usr/bin/containerd --config "$d/containerd.toml"
	local i
	for i in $(seq 1 100); do
		[[ -S $r/containerd.sock ]] && ctr_node "$n" version >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "containerd on $n did not start (see $LOGS/containerd-$n.log)"
}

# start_kubelet NODE
start_kubelet() {
	local n=$1 d
	d=$(node_dir "$n")
	start_daemon "kubelet-$n" "$n" "$K8S_BIN/kubelet" \
		--config="$d/kubelet.yaml" --kubeconfig="$d/kubelet.kubeconfig" \
		--hostname-override="$n" --node-ip="${NODE_IPS[$n]}" \
		--root-dir="$d/kubelet" --cert-dir="$d/kubelet-pki" \
		--node-labels="topology.kubernetes.io/zone=${NODE_ZONE[$n]},svctrace.io/testbed-node=$n" -v=1
}

# start_kube_proxy NODE: mode comes from $STATE/nodes/NODE/kube-proxy.yaml
start_kube_proxy() {
	local n=$1
	start_daemon "kube-proxy-$n" "$n" "$K8S_BIN/kube-proxy" --config="$(node_dir "$n")/kube-proxy.yaml" -v=1
}

# start_kube_router NODE: kube-router's network-policy controller alone, in the
# node's netns, where it programs the filter table (KUBE-ROUTER-*, KUBE-NWPLCY-*,
# KUBE-POD-FW-*) and ipsets for the Pods routed through that node, with
# iptables and ip6tables for the cluster's families (its IPv6 ipsets are named
# inet6:KUBE-*). Routing and the service proxy stay with the CNI and kube-proxy.
start_kube_router() {
	local n=$1
	[[ ${NODE_NETPOL[$n]} == kube-router ]] || return 0
	start_daemon "kube-router-$n" "$n" "$KUBE_ROUTER_BIN/kube-router" \
		--kubeconfig="$STATE/pki/kube-router.kubeconfig" --hostname-override="$n" \
		--run-firewall=true --run-router=false --run-service-proxy=false \
		--enable-ipv4="$(has_family ipv4 && echo true || echo false)" --enable-ipv6="$(has_family ipv6 && echo true || echo false)" \
		--service-cluster-ip-range="$SERVICE_CIDR" --health-port=20244 --metrics-port=0 \
		--iptables-sync-period=1m -v=1
}

# start_flanneld NODE: the real flanneld in the node's netns with the kube
# subnet manager, as user system:flannel: it leases the Node's spec.podCIDR,
# creates flannel.1 (VXLAN VNI $FLANNEL_VNI, UDP $FLANNEL_PORT, on eth0),
# annotates the Node with its VTEP (public-ip, backend-data) and, for every
# other flannel node, programs the route, FDB and neighbour entries. --ip-masq
# and the FORWARD accept rules as the upstream manifest (kube-flannel.yml) has them.
start_flanneld() {
	local n=$1 r
	r=$(node_run "$n")
	mkdir -p "$r/flannel"
	NODE_NAME=$n start_daemon "flanneld-$n" "$n" "$FLANNEL_BIN/flanneld" \
		--kube-subnet-mgr --kubeconfig-file="$STATE/pki/flannel.kubeconfig" --iface=eth0 --ip-masq \
		--net-config-path="$STATE/flannel-net-conf.json" --subnet-file="$r/flannel/subnet.env" \
		--healthz-port=0 --v=1
}

# flannel_subnet_env NODE KEY: a value of the subnet file flanneld wrote.
flannel_subnet_env() {
	sed -n "s/^$2=//p" "$(node_run "$1")/flannel/subnet.env" 2>/dev/null
}

# write_flannel_conflist NODE: what flannel's CNI plugin hands to the bridge
# plugin (its delegate with kube-flannel.yml's hairpinMode and
# isDefaultGateway), written from the subnet file flanneld wrote: Pods on the
# bridge cni0 with flannel's MTU, gateway the bridge, one host-local range a
# family (primary first: the kubelet reports the Pod's first address as its
# podIP). flannel's CNI plugin itself (github.com/flannel-io/cni-plugin) is
# not on the module proxy, so the conflist names its delegate, Debian's
# bridge plugin, directly.
write_flannel_conflist() {
	local n=$1 d mtu f subnet network want ranges="" routes=""
	d=$(node_dir "$n")
	mtu=$(flannel_subnet_env "$n" FLANNEL_MTU)
	[[ -n $mtu ]] || die "flanneld's subnet file on $n has no FLANNEL_MTU"
	for f in "${IP_FAMILIES[@]}"; do
		subnet=$(flannel_subnet_env "$n" "$(pick "$f" FLANNEL_SUBNET FLANNEL_IPV6_SUBNET)")
		network=$(flannel_subnet_env "$n" "$(pick "$f" FLANNEL_NETWORK FLANNEL_IPV6_NETWORK)")
		want=$(pick "$f" "${NODE_CIDR4[$n]}" "${NODE_CIDR6[$n]}")
		[[ -n $subnet && -n $network ]] || die "flanneld's subnet file on $n has no $f subnet"
		# FLANNEL_SUBNET is the bridge's address in the lease (10.244.1.1/24,
		# fd00:10:244:1::1/64); host-local wants the network, the Node's
		# podCIDR of that family that flanneld leased.
		[[ $subnet == "$(pick "$f" "${want%.0/*}.1" "${want%/*}1")/${want#*/}" ]] ||
			die "flanneld on $n leased $subnet, not the Node's podCIDR $want"
		ranges+="${ranges:+, }[{\"subnet\": \"$want\"}]"
		routes+="${routes:+, }{\"dst\": \"$network\"}"
	done
	cat >"$d/cni/net.d/10-$n.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "$n",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "mtu": $mtu,
      "ipMasq": false,
      "isGateway": true,
      "isDefaultGateway": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$d/cni-ipam",
        "ranges": [$ranges],
        "routes": [$routes]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}
  ]
}
CNI
}

# stop_daemon NAME [timeout-seconds]: SIGTERM the recorded PID (only if it is still
# the binary we started), then SIGKILL after the timeout.
stop_daemon() {
	local name=$1 t=${2:-10} pid i
	pid_alive "$name" || { rm -f "$RUN/$name.pid"; return 0; }
	pid=$(<"$RUN/$name.pid")
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < t * 10; i++)); do
		pid_alive "$name" || break
		# kube-apiserver sometimes stops listening on the first SIGTERM and lingers.
		((i == 30)) && kill -TERM "$pid" 2>/dev/null
		sleep 0.1
	done
	if pid_alive "$name"; then kill -KILL "$pid" 2>/dev/null || true; sleep 0.2; fi
	rm -f "$RUN/$name.pid"
}

# testbed_lock: serialise up/down across checkouts and concurrent callers
# (machine-wide lock file, the conventional place; it is left in place on purpose).
testbed_lock() {
	[[ -n ${SVTB_LOCKED:-} ]] && return 0
	mkdir -p /run/lock
	exec 8>/run/lock/svctrace-testbed.lock
	if ! flock -n 8; then
		log "waiting for another testbed up/down to finish ..."
		flock 8
	fi
	export SVTB_LOCKED=1
}
