#!/bin/sh
# kubelet-guest.sh DIR: a real kubelet with containerd, runc and the CNI
# bridge plugin inside user-mode Linux (a uml/lib.sh job run by init.sh as
# root of the guest, or started by node-guest.sh). DIR (a host directory,
# shared over hostfs) holds:
#   env         KUBELET CONTAINERD_BIN IMAGES NODE_NAME NODE_IP POD_CIDR
#               (POD_CIDR's first address is the bridge's), in a cluster with
#               IPv6 also NODE_IPS (every family's, primary first) and
#               POD_CIDR6 (IPv6-only: NODE_IP and POD_CIDR empty), and to register
#               with an API server: KUBECONFIG_FILE CLIENT_CA CLUSTER_DNS
#               RESOLV_CONF NODE_LABELS NODE_TAINTS; READY_FILE (default ready)
#   manifests/  static Pod manifests
# Without KUBECONFIG_FILE the kubelet is standalone (static Pods only).
# DIR receives containerd.log, kubelet.log, pod-logs/, status (one line a
# step) and READY_FILE (once the kubelet's healthz answers). Then it waits
# for the host to stop the guest ($SVTB_OUT/stop).
#
# Everything the kubelet and containerd write lives in the guest: their roots
# are a tmpfs (overlayfs needs a real upper file system, hostfs is not one),
# and tmpfs is mounted over the machine-wide paths they would otherwise
# create or clean on the host through hostfs (/var/log/containers, /var/lib/
# kubelet, /var/lib/cni, /etc/cni, ...): the host's testbed kubelets use them.
set -u
dir=$1
. "$dir/env"
status() { echo "$(cut -d' ' -f1 /proc/uptime) $*" >>"$dir/status"; }
: >"$dir/status"

# cgroup v2 (init.sh mounted it): give the children every controller the
# kernel has; the kubelet and runc use cpu, memory and pids.
read -r controllers </sys/fs/cgroup/cgroup.controllers
for c in $controllers; do echo "+$c" >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || status "controller $c not enabled"; done
status "cgroup controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

state=/run/svctrace-kubelet
mkdir -p "$state"
mount -t tmpfs -o size=600m tmpfs "$state"
for p in /var/log/containers /var/log/pods /var/lib/kubelet /var/lib/cni /etc/cni /usr/libexec/kubernetes /var/lib/containerd /opt/cni /opt/containerd; do
	[ -d "$p" ] && mount -t tmpfs tmpfs "$p"
done
mkdir -p "$state/cni/net.d" "$state/kubelet" "$state/containerd" "$state/containerd-state" "$dir/pod-logs"

# cadvisor (in the kubelet) takes the CPU's clock from cpufreq or from "cpu
# MHz" in /proc/cpuinfo, and UML has neither ("could not detect clock speed"):
# a copy with the line, bound over it in the guest only.
awk '{print} /^processor/{print "cpu MHz\t\t: 1000.000"}' /proc/cpuinfo >"$state/cpuinfo"
mount --bind "$state/cpuinfo" /proc/cpuinfo

# The node's address (the kubelet wants one): a dummy eth0 when the guest
# has no network of its own.
if ! ip link show eth0 >/dev/null 2>&1; then
	ip link add eth0 type dummy
	[ -z "$NODE_IP" ] || ip addr add "$NODE_IP/24" dev eth0
	[ -z "${NODE_IP6:-}" ] || ip -6 addr add "$NODE_IP6/64" dev eth0 nodad
	ip link set eth0 up
	ip route add default dev eth0 2>/dev/null
fi
sysctl -qw net.ipv4.ip_forward=1

cat >"$state/containerd.toml" <<TOML
version = 2
root = "$state/containerd"
state = "$state/containerd-state"
[grpc]
  address = "$state/containerd.sock"
[ttrpc]
  address = "$state/containerd.sock.ttrpc"
[debug]
  level = "info"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "svctrace.local/pause:v1"
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$state/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "${SNAPSHOTTER:-overlayfs}"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$state/runc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$state/opt"
TOML
# One host-local range and default route a family, the primary's first
# (NODE_IPS's order): the kubelet reports a Pod's first address as its podIP.
ranges="" routes=""
for ip in $(echo "${NODE_IPS:-$NODE_IP}" | tr , ' '); do
	case $ip in
	*:*) r="[{\"subnet\": \"$POD_CIDR6\", \"gateway\": \"${POD_CIDR6%/*}1\"}]" d='{"dst": "::/0"}' ;;
	*) r="[{\"subnet\": \"$POD_CIDR\", \"gateway\": \"${POD_CIDR%.*/*}.1\"}]" d='{"dst": "0.0.0.0/0"}' ;;
	esac
	ranges="${ranges:+$ranges, }$r" routes="${routes:+$routes, }$d"
done
cat >"$state/cni/net.d/10-bridge.conflist" <<CNI
{
  "cniVersion": "1.0.0",
  "name": "$NODE_NAME",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {
        "type": "host-local",
        "dataDir": "$state/cni-ipam",
        "ranges": [$ranges],
        "routes": [$routes]
      }
    }
  ]
}
CNI

"$CONTAINERD_BIN" --config "$state/containerd.toml" >"$dir/containerd.log" 2>&1 &
for i in $(seq 100); do [ -S "$state/containerd.sock" ] && break; sleep 0.2; done
status "containerd: $( [ -S "$state/containerd.sock" ] && echo up || echo 'no socket')"
for img in $IMAGES; do
	ctr -a "$state/containerd.sock" -n k8s.io images import "$img" >>"$dir/import.log" 2>&1 || status "import $img failed"
done
status "images: $(ctr -a "$state/containerd.sock" -n k8s.io images ls -q 2>&1 | grep -c svctrace.local)"

if [ -n "${KUBECONFIG_FILE:-}" ]; then
	# Registered: served on the node's address for the API server (logs,
	# exec), authenticated and authorized by it, as the testbed's other
	# kubelets are.
	node_ips=${NODE_IPS:-$NODE_IP}
	auth="address: ${node_ips%%,*}
port: 10250
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: \"$CLIENT_CA\"}
authorization: {mode: Webhook}
clusterDNS: [$CLUSTER_DNS]
clusterDomain: cluster.local
resolvConf: $RESOLV_CONF
nodeStatusReportFrequency: 10s
maxPods: 30"
	register="--kubeconfig=$KUBECONFIG_FILE --node-labels=${NODE_LABELS:-} --register-with-taints=${NODE_TAINTS:-}"
else
	auth="address: 127.0.0.1
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization: {mode: AlwaysAllow}"
	register=""
fi
cat >"$state/kubelet.yaml" <<KCFG
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
$auth
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
cgroupDriver: cgroupfs
failSwapOn: false
containerRuntimeEndpoint: unix://$state/containerd.sock
staticPodPath: $dir/manifests
volumePluginDir: $state/volume-plugins
podLogsDir: $dir/pod-logs
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "20Mi", nodefs.available: "1%", nodefs.inodesFree: "1%", imagefs.available: "1%"}
fileCheckFrequency: 2s
seccompDefault: true
KCFG
status "kubelet starting${register:+ (registering with the API server)}"
# shellcheck disable=SC2086 # $register is a list of flags
"$KUBELET" --config="$state/kubelet.yaml" --root-dir="$state/kubelet" --cert-dir="$state/kubelet/pki" \
	--hostname-override="$NODE_NAME" --node-ip="${NODE_IPS:-$NODE_IP}" $register -v=2 >"$dir/kubelet.log" 2>&1 &
kubelet=$!
for i in $(seq 600); do
	if curl -fsS -m 2 http://127.0.0.1:10248/healthz >/dev/null 2>&1; then status "kubelet healthy"; : >"$dir/${READY_FILE:-ready}"; break; fi
	kill -0 "$kubelet" 2>/dev/null || { status "kubelet exited"; break; }
	sleep 0.5
done

# Report what runs, for a person debugging from the host: every 30 s, as
# each command here is an exec in user-mode Linux (ctr a Go binary) and the
# guest's CPU is the host's. The stop is noticed within 2 s.
n=0
while [ ! -e "$SVTB_OUT/stop" ]; do
	if [ $((n % 15)) -eq 0 ]; then
		{
			echo "# $(cut -d' ' -f1 /proc/uptime)"
			ctr -a "$state/containerd.sock" -n k8s.io containers ls 2>&1
			ctr -a "$state/containerd.sock" -n k8s.io tasks ls 2>&1
			ls "$state/cni-ipam/$NODE_NAME" 2>/dev/null
			ip -br addr 2>&1
		} >"$dir/guest-state.tmp" 2>&1
		mv "$dir/guest-state.tmp" "$dir/guest-state"
	fi
	n=$((n + 1))
	sleep 2
done
kill "$kubelet" 2>/dev/null
