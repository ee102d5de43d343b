#!/usr/bin/env bash
# Bring the svctrace testbed up: a control plane and two real kubelet nodes, each
# in its own network namespace, all hung off a bridge in a hub namespace. Nothing
# in the root network namespace changes except one loopback TCP forwarder.
# Idempotent: if the testbed is healthy it says so and exits.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || die "must run as root"
# Packages first: a missing one must stop us in seconds, not after the build.
"$TESTBED_DIR/deps.sh"
testbed_lock

t_start=$(date +%s)
modes_match() { # the running kube-proxies, enforcers and Pod network are the requested ones
	local n
	[[ $(cat "$STATE/cni-mode" 2>/dev/null) == "$CNI_MODE" ]] || return 1
	[[ $(cat "$STATE/ip-families" 2>/dev/null || echo ipv4) == "$IP_FAMILIES_SPEC" ]] || return 1
	for n in "${NODES[@]}"; do
		[[ $(awk '/^mode:/{print $2}' "$(node_dir "$n")/kube-proxy.yaml" 2>/dev/null) == "${NODE_PROXY_MODE[$n]}" ]] || return 1
		[[ ${NODE_NETPOL[$n]} == kube-router ]] || ! pid_alive "kube-router-$n" || return 1
	done
}
if "$TESTBED_DIR/status.sh" --quiet && ! modes_match; then
	log "testbed is up with other modes than SVTB_PROXY_MODES=${PROXY_MODES[*]} SVTB_NETPOL=${NETPOL_MODES[*]} SVTB_CNI=$CNI_MODE SVTB_IP_FAMILIES=$IP_FAMILIES_SPEC: recreating it"
elif "$TESTBED_DIR/status.sh" --quiet; then
	mkdir -p "$KUBECONFIG_DIR"
	install -m 600 "$STATE/pki/admin.kubeconfig" "$KUBECONFIG_DIR/kubeconfig"
	install -m 600 "$STATE/pki/restricted.kubeconfig" "$KUBECONFIG_DIR/kubeconfig-restricted"
	echo "$KUBECONFIG_DIR" >>"$STATE/kubeconfig-dirs"
	# The shipped RBAC may have changed since the cluster came up: the
	# restricted kubeconfig must always hold exactly deploy/rbac.yaml.
	KUBECTL apply -f "$TESTBED_DIR/../../deploy/rbac.yaml" >/dev/null
	KUBECTL apply -f "$TESTBED_DIR/manifests/rbac-svctrace.yaml" >/dev/null
	# The IPVS node is not part of the health check above: bring it up (or
	# keep it) without recreating the cluster.
	if [[ ${SVTB_IPVS_NODE:-1} != 0 ]]; then "$TESTBED_DIR/ipvs-node.sh" up; fi
	log "testbed already up and healthy; kubeconfig: $KUBECONFIG_DIR/kubeconfig"
	exit 0
fi

"$TESTBED_DIR/build.sh"
"$TESTBED_DIR/images.sh" --optional-collector --no-import

t_up=$(date +%s)
# Whatever is left of an earlier (maybe killed) run goes first.
"$TESTBED_DIR/down.sh" --quiet

mkdir -p "$STATE" "$RUN" "$LOGS"
# The families this testbed runs: ctl.sh and ipvs-node.sh (started below)
# follow it, whatever their caller's SVTB_IP_FAMILIES.
echo "$IP_FAMILIES_SPEC" >"$STATE/ip-families"
# Machine-wide paths the kubelets/containerds create outside their configured dirs; the ones that do
# not exist yet are ours to remove at down.
for pth in /run/containerd /var/lib/cni /var/lib/kubelet /usr/libexec/kubernetes /var/log/containers; do
	[[ -e $pth ]] || echo "$pth" >>"$STATE/created-paths"
done
# The kubelet rewrites these global sysctls; down.sh restores them.
for s in vm.overcommit_memory kernel.panic kernel.panic_on_oops; do
	echo "$s=$(sysctl -n "$s")"
done >"$STATE/sysctls.saved"

log "generating PKI"
"$TESTBED_DIR/pki.sh"

# ---------------------------------------------------------------- network
log "creating namespaces"
ip netns add "$HUB_NS"
in_ns "$HUB_NS" ip link set lo up
in_ns "$HUB_NS" ip link add "$BRIDGE" type bridge
in_ns "$HUB_NS" ip link set "$BRIDGE" up
attach() { # ns ipv4 ipv6: the addresses of the cluster's families on eth0
	local ns=$1 hv=h-${1#svtb-}
	ip netns add "$ns"
	in_ns "$ns" ip link set lo up
	in_ns "$HUB_NS" ip link add "$hv" type veth peer name eth0 netns "$ns"
	in_ns "$HUB_NS" ip link set "$hv" master "$BRIDGE" up
	has_family ipv4 && in_ns "$ns" ip addr add "$2/24" dev eth0
	# nodad: the address is usable at once (duplicate address detection
	# would hold it tentative for a second or two; nothing else is on this
	# bridge's prefix).
	has_family ipv6 && in_ns "$ns" ip -6 addr add "$3/64" dev eth0 nodad
	in_ns "$ns" ip link set eth0 up
}
# route_add NS CIDR4 CIDR6 VIA4 VIA6: a route per family of the cluster.
route_add() {
	has_family ipv4 && in_ns "$1" ip route add "$2" via "$4"
	has_family ipv6 && in_ns "$1" ip -6 route add "$3" via "$5"
	return 0
}
attach "$CP_NS" "$CP_IP4" "$CP_IP6"
# The control plane does not forward: a node that lost a route must not be rescued through it.
in_ns "$CP_NS" sysctl -qw net.ipv4.ip_forward=0
has_family ipv6 && in_ns "$CP_NS" sysctl -qw net.ipv6.conf.all.forwarding=0
for n in "${NODES[@]}"; do
	attach "$n" "${NODE_IP4[$n]}" "${NODE_IP6[$n]}"
	in_ns "$n" sysctl -qw net.ipv4.ip_forward=1
	# IPv6 forwarding inside the node's namespace only (the root namespace
	# stays as it is).
	has_family ipv6 && in_ns "$n" sysctl -qw net.ipv6.conf.all.forwarding=1
	# Without a default route ClusterIP traffic from the node fails before NAT.
	route_add "$n" default default "$CP_IP4" "$CP_IP6"
	route_add "$CP_NS" "${NODE_CIDR4[$n]}" "${NODE_CIDR6[$n]}" "${NODE_IP4[$n]}" "${NODE_IP6[$n]}"
	# With flannel, the routes between the kubelet nodes' Pod CIDRs are
	# flanneld's (via flannel.1, and flannel-v6.1 for IPv6); the control
	# plane and the IPVS node stay on these static routes.
	[[ $CNI_MODE == flannel ]] && continue
	for m in "${NODES[@]}"; do
		[[ $m == "$n" ]] || route_add "$n" "${NODE_CIDR4[$m]}" "${NODE_CIDR6[$m]}" "${NODE_IP4[$m]}" "${NODE_IP6[$m]}"
	done
done

# The kubelets' resolv.conf (the IPVS node's kubelet starts first).
cat >"$STATE/resolv.conf" <<RC
# svctrace testbed: no upstream DNS; cluster DNS only
nameserver $KUBE_DNS_IP
RC

# The IPVS node (user-mode Linux: kube-proxy ipvs and a kubelet;
# test/testbed/ipvs-node.sh) boots now, while the control plane and the other
# nodes start: its kernel boot, containerd and image import need no API
# server, and its kube-proxy and kubelet retry until there is one.
# SVTB_IPVS_NODE=0 leaves it out.
ipvs_pid=""
if [[ ${SVTB_IPVS_NODE:-1} != 0 ]]; then
	t_ipvs=$(date +%s)
	"$TESTBED_DIR/ipvs-node.sh" up >"$LOGS/ipvs-node-up.log" 2>&1 &
	ipvs_pid=$!
fi

# ---------------------------------------------------------------- control plane
P=$STATE/pki
log "starting etcd, kube-apiserver"
start_daemon etcd "$CP_NS" "$ETCD_BIN/etcd" --name svtb --data-dir "$STATE/etcd" \
	--listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster svtb=http://127.0.0.1:2380 --log-level warn --quota-backend-bytes 4294967296
start_daemon kube-apiserver "$CP_NS" "$K8S_BIN/kube-apiserver" \
	--etcd-servers=http://127.0.0.1:2379 --advertise-address="$CP_IP" --bind-address="$(has_family ipv6 && echo :: || echo 0.0.0.0)" --secure-port="$API_PORT" \
	--tls-cert-file="$P/apiserver.crt" --tls-private-key-file="$P/apiserver.key" --client-ca-file="$P/ca.crt" \
	--kubelet-client-certificate="$P/apiserver-kubelet-client.crt" --kubelet-client-key="$P/apiserver-kubelet-client.key" \
	--kubelet-preferred-address-types=InternalIP,Hostname \
	--service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--service-cluster-ip-range="$SERVICE_CIDR" --authorization-mode=Node,RBAC --allow-privileged=true \
	--profiling=false -v=1

# Loopback forwarder: root netns 127.0.0.1:$FWD_PORT -> unix socket -> apiserver in the cp netns.
# nodelay on both TCP ends: without it a client request waited 40-50 ms per round trip on Nagle and
# delayed ACKs (a trace through the node agent: 0.15 s of 0.7 s spent reading the Service and nodes).
start_daemon fwd-cp "$CP_NS" /usr/bin/socat "UNIX-LISTEN:$RUN/apiserver.sock,fork,unlink-early,mode=600" "TCP:$(host_port "$CP_IP" "$API_PORT"),nodelay"
start_daemon fwd-root "" /usr/bin/socat "TCP-LISTEN:$FWD_PORT,bind=127.0.0.1,fork,reuseaddr,nodelay" "UNIX-CONNECT:$RUN/apiserver.sock"

for i in $(seq 1 600); do
	KUBECTL get --raw /readyz >/dev/null 2>&1 && break
	pid_alive kube-apiserver || die "kube-apiserver exited (see $LOGS/kube-apiserver.log)"
	((i == 600)) && die "kube-apiserver not ready after 60s (see $LOGS/kube-apiserver.log)"
	sleep 0.1
done
log "kube-apiserver ready after $(($(date +%s) - t_up))s"

start_daemon kube-controller-manager "$CP_NS" "$K8S_BIN/kube-controller-manager" \
	--kubeconfig="$P/controller-manager.kubeconfig" --authentication-kubeconfig="$P/controller-manager.kubeconfig" \
	--authorization-kubeconfig="$P/controller-manager.kubeconfig" --bind-address=127.0.0.1 \
	--service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" --use-service-account-credentials=true \
	--service-cluster-ip-range="$SERVICE_CIDR" --cluster-cidr="$CLUSTER_CIDR" --allocate-node-cidrs=false \
	--leader-elect=false -v=1
start_daemon kube-scheduler "$CP_NS" "$K8S_BIN/kube-scheduler" \
	--kubeconfig="$P/scheduler.kubeconfig" --authentication-kubeconfig="$P/scheduler.kubeconfig" \
	--authorization-kubeconfig="$P/scheduler.kubeconfig" --bind-address=127.0.0.1 --leader-elect=false -v=1

# ---------------------------------------------------------------- nodes
for n in "${NODES[@]}"; do
	d=$(node_dir "$n") r=$(node_run "$n")
	mkdir -p "$d/cni/net.d" "$d/manifests" "$d/pod-logs" "$d/kubelet" "$d/kubelet-pki" "$r"
	# The kubelet's cgroupRoot must exist in every hierarchy before it starts.
	for h in /sys/fs/cgroup/*/; do
		[[ -d $h ]] || continue
		mkdir -p "$h$n"
		if [[ -f ${h}cpuset.cpus ]]; then
			cat "${h}cpuset.cpus" >"$h$n/cpuset.cpus"
			cat "${h}cpuset.mems" >"$h$n/cpuset.mems"
		fi
	done
	cat >"$d/containerd.toml" <<TOML
version = 2
root = "$d/containerd"
state = "$r/containerd-state"
[grpc]
  address = "$r/containerd.sock"
[ttrpc]
  address = "$r/containerd.sock.ttrpc"
[debug]
  level = "warn"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "svctrace.local/pause:v1"
  disable_apparmor = true
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$d/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$r/runc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$d/opt"
TOML
	# flannel: the conflist comes once flanneld has written its subnet file
	# (write_flannel_conflist); the kubelet reports NotReady until then.
	[[ $CNI_MODE == flannel ]] || cat >"$d/cni/net.d/10-$n.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "$n",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "mtu": 1500,
      "ipam": {
        "type": "host-local",
        "dataDir": "$d/cni-ipam",
        "ranges": [$(for f in "${IP_FAMILIES[@]}"; do printf '%s[{"subnet": "%s"}]' "$([[ $f == "$PRIMARY_FAMILY" ]] || echo ', ')" "$(pick "$f" "${NODE_CIDR4[$n]}" "${NODE_CIDR6[$n]}")"; done)],
        "routes": [$(for f in "${IP_FAMILIES[@]}"; do printf '%s{"dst": "%s"}' "$([[ $f == "$PRIMARY_FAMILY" ]] || echo ', ')" "$(pick "$f" 0.0.0.0/0 ::/0)"; done)]
      }
    }
  ]
}
CNI
	cat >"$d/kubelet.yaml" <<KCFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: ${NODE_IP[$n]}
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$P/ca.crt"}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: /$n
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://$r/containerd.sock
clusterDNS: [$KUBE_DNS_IP]
clusterDomain: cluster.local
resolvConf: $STATE/resolv.conf
staticPodPath: $d/manifests
volumePluginDir: $d/volume-plugins
podLogsDir: $d/pod-logs
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "50Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
nodeStatusReportFrequency: 10s
maxPods: 60
KCFG
	cp "$P/kubelet-$n.kubeconfig" "$d/kubelet.kubeconfig"
	cat >"$d/kube-proxy.yaml" <<KP
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: ${NODE_PROXY_MODE[$n]}
hostnameOverride: $n
clusterCIDR: $CLUSTER_CIDR
bindAddress: ${NODE_IP[$n]}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 0.0.0.0:10256
clientConnection: {kubeconfig: "$P/kube-proxy.kubeconfig"}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
KP
	log "starting $n: containerd, kubelet, kube-proxy (${NODE_PROXY_MODE[$n]})"
	start_containerd "$n"
	import_images "$n"
	start_kubelet "$n"
	start_kube_proxy "$n"
done

# ---------------------------------------------------------------- cluster add-ons
KUBECTL apply -f "$TESTBED_DIR/../../deploy/rbac.yaml" >/dev/null
KUBECTL apply -f "$TESTBED_DIR/manifests/rbac-svctrace.yaml" >/dev/null
# kube-router gives up if its informers cannot sync: its RBAC goes first.
KUBECTL apply -f "$TESTBED_DIR/manifests/rbac-kube-router.yaml" >/dev/null
# kube-router identifies its node by the Node object (--hostname-override
# names it) and exits if the kubelet has not registered it yet; flanneld
# leases the Node's spec.podCIDR. Both start once their Node exists.
wait_registered() {
	local n=$1 i
	for i in $(seq 1 300); do
		KUBECTL get node "$n" >/dev/null 2>&1 && return 0
		((i == 300)) && die "node $n not registered after 30s (see $LOGS/kubelet-$n.log)"
		sleep 0.1
	done
}
for n in "${NODES[@]}"; do
	[[ ${NODE_NETPOL[$n]} == kube-router ]] || continue
	wait_registered "$n"
	start_kube_router "$n"
done

if [[ $CNI_MODE == flannel ]]; then
	KUBECTL apply -f "$TESTBED_DIR/manifests/rbac-flannel.yaml" >/dev/null
	cat >"$STATE/flannel-net-conf.json" <<NETCONF
{"EnableIPv4": $(has_family ipv4 && echo true || echo false), "EnableIPv6": $(has_family ipv6 && echo true || echo false), $(has_family ipv4 && echo "\"Network\": \"$CLUSTER_CIDR4\", ")$(has_family ipv6 && echo "\"IPv6Network\": \"$CLUSTER_CIDR6\", ")"Backend": {"Type": "vxlan", "VNI": $FLANNEL_VNI, "Port": $FLANNEL_PORT}}
NETCONF
	# Nothing sets the Node's spec.podCIDR here (--allocate-node-cidrs=false
	# keeps each node on its fixed CIDR): set it before flanneld starts.
	for n in "${NODES[@]}"; do
		wait_registered "$n"
		KUBECTL patch node "$n" --type=merge -p "{\"spec\":{\"podCIDR\":\"${NODE_CIDR[$n]}\",\"podCIDRs\":[\"${NODE_CIDRS[$n]//,/\",\"}\"]}}" >/dev/null
		start_flanneld "$n"
	done
	for n in "${NODES[@]}"; do
		for i in $(seq 1 600); do
			[[ -n $(flannel_subnet_env "$n" FLANNEL_MTU) ]] && break
			pid_alive "flanneld-$n" || die "flanneld on $n exited (see $LOGS/flanneld-$n.log)"
			((i == 600)) && die "flanneld on $n wrote no subnet file after 60s (see $LOGS/flanneld-$n.log)"
			sleep 0.1
		done
		write_flannel_conflist "$n"
	done
fi

log "waiting for nodes Ready"
for i in $(seq 1 1200); do
	(($(nodes_ready "${NODES[@]}") == ${#NODES[@]})) && break
	((i == 1200)) && die "nodes not Ready after 120s (see $LOGS/kubelet-*.log)"
	sleep 0.1
done
log "nodes Ready after $(($(date +%s) - t_up))s"
# CoreDNS after the nodes, so its replicas spread over both.
# kube-dns gets an address in each of the cluster's families (the primary's
# first, the one the kubelets hand to Pods); the API wants clusterIP set to
# the first of clusterIPs when it holds two.
sed "s|^  clusterIP: $KUBE_DNS_IP4\$|  clusterIP: $KUBE_DNS_IP\\n  clusterIPs: [${KUBE_DNS_IPS//,/, }]\\n  ipFamilyPolicy: $( ((${#IP_FAMILIES[@]} > 1)) && echo RequireDualStack || echo SingleStack)|" \
	"$TESTBED_DIR/manifests/coredns.yaml" | KUBECTL apply -f - >/dev/null
KUBECTL -n kube-system rollout status deploy/coredns --timeout=180s >/dev/null || die "CoreDNS not available (kubectl -n kube-system get pods)"
# Every kube-dns address answers from every node, and with the address of
# each family of kube-dns itself (A and AAAA records).
for i in $(seq 1 300); do
	ok=1
	for n in "${NODES[@]}"; do
		for ip in ${KUBE_DNS_IPS//,/ }; do
			got=$(in_ns "$n" "$IMAGES_DIR/echo" dns kube-dns.kube-system.svc.cluster.local "$(host_port "$ip" 53)" 2>/dev/null) || { ok=0; continue; }
			for want in ${KUBE_DNS_IPS//,/ }; do grep -qxF "$want" <<<"$got" || ok=0; done
		done
	done
	((ok)) && break
	((i == 300)) && die "CoreDNS does not answer on $KUBE_DNS_IPS from the nodes with kube-dns's addresses of every family"
	sleep 0.2
done
t_ready=$(date +%s)

mkdir -p "$KUBECONFIG_DIR"
install -m 600 "$P/admin.kubeconfig" "$KUBECONFIG_DIR/kubeconfig"
install -m 600 "$P/restricted.kubeconfig" "$KUBECONFIG_DIR/kubeconfig-restricted"
echo "$KUBECONFIG_DIR" >>"$STATE/kubeconfig-dirs"
echo "bringup_seconds=$((t_ready - t_up))" >"$STATE/bringup.txt"
echo "$CNI_MODE" >"$STATE/cni-mode"
ipvs_line="  ipvs node     : off (SVTB_IPVS_NODE=0)"
if [[ -n $ipvs_pid ]]; then
	if ! wait "$ipvs_pid"; then
		# Seen once in CI right after a down: the UML kernel exited during
		# boot and the next up worked. Try once more, alone, before failing.
		cat "$LOGS/ipvs-node-up.log" >&2
		log "the IPVS node did not come up; trying once more"
		"$TESTBED_DIR/ipvs-node.sh" up >"$LOGS/ipvs-node-up.log" 2>&1 ||
			{ cat "$LOGS/ipvs-node-up.log" >&2; die "the IPVS node did not come up (SVTB_IPVS_NODE=0 leaves it out)"; }
	fi
	cat "$LOGS/ipvs-node-up.log" >&2
	echo "ipvs_node_seconds=$(($(date +%s) - t_ipvs)) ipvs_node_extra_seconds=$(($(date +%s) - t_ready))" >>"$STATE/bringup.txt"
	ipvs_line="  ipvs node     : netns $IPVS_NODE ($(per_family $IPVS_NODE_IP4 $IPVS_NODE_IP6), pods $(per_family $IPVS_NODE_CIDR4 $IPVS_NODE_CIDR6), $IPVS_NODE_ZONE): user-mode Linux 6.1, kube-proxy ipvs ($(per_family IPv4 IPv6)), $( [[ ${SVTB_IPVS_KUBELET:-0} != 0 ]] && echo "kubelet, taint $IPVS_NODE_TAINT" || echo "no kubelet") (up in $(($(date +%s) - t_ipvs))s, in parallel; +$(($(date +%s) - t_ready))s after the rest)"
fi
t_done=$(date +%s)

cat <<MSG
svctrace testbed is up ($((t_ready - t_up))s to nodes Ready + CoreDNS answering; $((t_done - t_start))s total)
  IP families   : $IP_FAMILIES_SPEC (primary ${PRIMARY_FAMILY}); Services $SERVICE_CIDR, kube-dns $KUBE_DNS_IPS
  control plane : netns $CP_NS ($(per_family $CP_IP4 $CP_IP6)): etcd, kube-apiserver :$API_PORT, kube-controller-manager, kube-scheduler
$(for n in "${NODES[@]}"; do echo "  node          : netns $n (${NODE_IPS[$n]}, pods ${NODE_CIDRS[$n]}, ${NODE_ZONE[$n]}): containerd, kubelet, kube-proxy ${NODE_PROXY_MODE[$n]}, policies: ${NODE_NETPOL[$n]}, CNI: $CNI_MODE$([[ $CNI_MODE == flannel ]] && echo " (VXLAN VNI $FLANNEL_VNI, MTU $(flannel_subnet_env "$n" FLANNEL_MTU))")"; done)
$ipvs_line
  forwarder     : 127.0.0.1:$FWD_PORT -> $CP_IP:$API_PORT
  kubeconfig    : $KUBECONFIG_DIR/kubeconfig   (restricted: $KUBECONFIG_DIR/kubeconfig-restricted)
  kubectl       : $K8S_BIN/kubectl --kubeconfig $KUBECONFIG_DIR/kubeconfig get nodes
  logs          : $LOGS
MSG
