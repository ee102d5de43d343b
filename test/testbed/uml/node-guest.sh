#!/bin/bash
# node-guest.sh DIR: the job of the testbed's IPVS node inside user-mode
# Linux (started by test/testbed/ipvs-node.sh through uml/lib.sh). DIR (a host
# directory, shared over hostfs) holds:
#   env              NODE_IP GATEWAY ROUTES POD_CIDR_GW (IPv4), NODE_IP6 GATEWAY6
#                    ROUTES6 POD_CIDR_GW6 (IPv6; each family's empty in a
#                    cluster without it), BIN_ECHO KUBE_PROXY, and KUBELET
#                    with kubelet-guest.sh's settings for a real kubelet
#   kube-proxy.yaml  the real kube-proxy's configuration (mode ipvs)
#   pods             without a kubelet: one "NAME IPV4 IPV6" a line ("-" for a
#                    family the cluster has not), a Pod network namespace
#                    with the testbed echo server (HTTP 8080, TCP 9000, UDP 9001)
#   spool/           commands from the host: ID.cmd is run with sh, its
#                    output goes to ID.out / ID.err and its status to ID.rc
# It configures eth0 (the vector/tap device on the testbed bridge), starts
# kube-proxy and the kubelet (kubelet-guest.sh: containerd, the CNI bridge
# cni0 holding the Pod CIDR's gateway) or, without a kubelet, a Pod bridge
# with the Pod network namespaces; then it serves the spool until the host
# asks the guest to stop ($SVTB_OUT/stop).
set -u
dir=$1
. "$dir/env"
log() { echo "node-guest $(cut -d' ' -f1 /proc/uptime): $*"; }

# The vector device is vec0; it is the node's eth0.
ip link set vec0 name eth0
[ -z "$NODE_IP" ] || ip addr add "$NODE_IP/24" dev eth0
# nodad: usable at once, as on the other testbed hosts.
[ -z "${NODE_IP6:-}" ] || ip -6 addr add "$NODE_IP6/64" dev eth0 nodad
ip link set eth0 up
[ -z "$GATEWAY" ] || ip route add default via "$GATEWAY"
[ -z "${GATEWAY6:-}" ] || ip -6 route add default via "$GATEWAY6"
for r in $(echo "$ROUTES" | tr + ' '); do ip route add "${r%=*}" via "${r#*=}"; done
for r in $(echo "${ROUTES6:-}" | tr + ' '); do ip -6 route add "${r%=*}" via "${r#*=}"; done
sysctl -qw net.ipv4.ip_forward=1
[ -z "${NODE_IP6:-}" ] || sysctl -qw net.ipv6.conf.all.forwarding=1
sysctl -qw net.ipv4.conf.all.rp_filter=0

if [ -z "${KUBELET:-}" ]; then
	# Pods: a bridge holding the Pod CIDR's gateway, one veth per Pod.
	ip link add cbr0 type bridge
	[ -z "$POD_CIDR_GW" ] || ip addr add "$POD_CIDR_GW" dev cbr0
	[ -z "${POD_CIDR_GW6:-}" ] || ip -6 addr add "$POD_CIDR_GW6" dev cbr0 nodad
	ip link set cbr0 up
	i=0
	while read -r name ip ip6; do
		[ -n "$name" ] || continue
		i=$((i + 1))
		ip netns add "$name"
		ip link add "vp$i" type veth peer name eth0 netns "$name"
		ip link set "vp$i" master cbr0 up
		ip -n "$name" link set lo up
		if [ "$ip" != - ]; then ip -n "$name" addr add "$ip/${POD_CIDR_GW#*/}" dev eth0; fi
		if [ -n "$ip6" ] && [ "$ip6" != - ]; then ip -n "$name" -6 addr add "$ip6/${POD_CIDR_GW6#*/}" dev eth0 nodad; fi
		ip -n "$name" link set eth0 up
		if [ "$ip" != - ]; then ip -n "$name" route add default via "${POD_CIDR_GW%/*}"; fi
		if [ -n "$ip6" ] && [ "$ip6" != - ]; then ip -n "$name" -6 route add default via "${POD_CIDR_GW6%/*}"; fi
		[ "$ip" != - ] || ip=$ip6
		POD_NAME=$name POD_IP=$ip NODE_NAME=$NODE_NAME ip netns exec "$name" "$BIN_ECHO" serve >"$dir/pod-$name.log" 2>&1 &
	done <"$dir/pods"
	log "network and $i pod(s) up"
else
	# Pods on the CNI bridge reaching a ClusterIP served by a Pod on the same
	# bridge: the reply must cross the node's conntrack to be un-NATed (the
	# setting kube-proxy's IPVS mode expects on bridge CNIs).
	sysctl -qw net.bridge.bridge-nf-call-iptables=1 || log "bridge-nf-call-iptables not set"
	[ -z "${NODE_IP6:-}" ] || sysctl -qw net.bridge.bridge-nf-call-ip6tables=1 || log "bridge-nf-call-ip6tables not set"
fi

# kube-proxy exits when its Node object is deleted (and on some errors);
# restart it as the kubelet restarts a kube-proxy Pod.
(
	while [ ! -e "$SVTB_OUT/stop" ]; do
		"$KUBE_PROXY" --config="$dir/kube-proxy.yaml" -v=1 >>"$dir/kube-proxy.log" 2>&1 &
		echo $! >/run/kube-proxy.pid
		wait $!
		echo "node-guest: kube-proxy exited ($?), restarting" >>"$dir/kube-proxy.log"
		sleep 1
	done
) &
kp_loop=$!
log "kube-proxy started"
: >"$dir/ready"

# The kubelet (its containerd, images and CNI) comes up on its own; it
# writes $dir/kubelet-ready once its healthz answers.
kubelet_job=""
if [ -n "${KUBELET:-}" ]; then
	"$(dirname "$0")/kubelet-guest.sh" "$dir" >"$dir/kubelet-guest.log" 2>&1 &
	kubelet_job=$!
	log "kubelet-guest started"
fi

# The host's exec requests: polled every 0.1 s for 3 s after the last one,
# every 0.5 s when idle. The pause is a read that times out on a FIFO nobody
# writes, a bash builtin, not a forked sleep: an exec in user-mode Linux
# costs its one CPU 0.2-0.4 s on a busy host, and the poller's 2-10 sleeps a
# second kept that CPU so busy that kube-proxy's IPVS syncs took 30-47 s.
mkdir -p "$dir/spool"
mkfifo /run/spool-wait
exec 9<>/run/spool-wait
nap() { read -r -t "$1" -u 9 _ || :; }
idle=0
while [ ! -e "$SVTB_OUT/stop" ]; do
	for f in "$dir"/spool/*.cmd; do
		[ -e "$f" ] || continue
		id=${f%.cmd}
		mv "$f" "$id.run"
		sh "$id.run" >"$id.out" 2>"$id.err" </dev/null
		echo $? >"$id.rc.tmp"
		mv "$id.rc.tmp" "$id.rc"
		idle=0
	done
	if [ "$idle" -lt 30 ]; then idle=$((idle + 1)); nap 0.1; else nap 0.5; fi
done
log "stopping"
kill "$(cat /run/kube-proxy.pid)" 2>/dev/null
wait "$kp_loop"
[ -z "$kubelet_job" ] || wait "$kubelet_job"
# The Pods' echo servers.
for name in $(cut -d' ' -f1 "$dir/pods"); do ip netns pids "$name" 2>/dev/null | xargs -r kill 2>/dev/null; done
