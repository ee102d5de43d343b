#!/bin/sh
# guest.sh DIR: the job of the Cilium node inside user-mode Linux (started by
# node.sh through uml/lib.sh). The guest's root is the host's file system
# (hostfs, read-write), so everything the agent writes must land on a mount of
# the guest's own: /run is a guest tmpfs (init.sh), /sys/fs/bpf a guest bpffs,
# /sys/fs/cgroup the guest's cgroup2 (the socket-LB hooks attach there, in the
# UML kernel only), and the agent's --lib-dir and --state-dir are under /run.
# DIR (a host directory, shared over hostfs) holds:
#   env        NODE_IP GATEWAY CILIUM_BPF
#   agent.sh   the agent's command line (written by node.sh)
#   agent.off  present: keep the agent stopped (node.sh agent stop)
#   spool/     commands from the host: ID.cmd is run with sh, its output goes
#              to ID.out / ID.err and its status to ID.rc
set -u
dir=$1
. "$dir/env"
log() { echo "cilium-guest $(cut -d' ' -f1 /proc/uptime): $*"; }

ip link set vec0 name eth0
ip addr add "$NODE_IP/24" dev eth0
ip link set eth0 up
ip route add default via "$GATEWAY"

mount -t bpf bpffs /sys/fs/bpf || log "mount bpffs failed"
mkdir -p /run/cilium-lib /run/cilium /run/cilium-bin /run/cilium-home
# The agent writes generated headers into its lib dir's bpf/ tree.
cp -r "$CILIUM_BPF" /run/cilium-lib/bpf
# The agent runs plain `clang`; Debian installs clang-19.
ln -sf /usr/bin/clang-19 /run/cilium-bin/clang
log "network up, bpffs and lib dir ready"

# The agent, restarted as a DaemonSet's Pod would be, unless held off by agent.off.
(
	while [ ! -e "$SVTB_OUT/stop" ]; do
		if [ -e "$dir/agent.off" ]; then sleep 0.2; continue; fi
		date +%s.%N >"$dir/agent.started"
		PATH=/run/cilium-bin:$PATH sh "$dir/agent.sh" >>"$dir/agent.log" 2>&1 &
		echo $! >/run/cilium-agent.pid
		wait $!
		echo "cilium-guest: agent exited ($?)" >>"$dir/agent.log"
		rm -f /run/cilium-agent.pid
		sleep 1
	done
) &
sup=$!
: >"$dir/ready"

mkdir -p "$dir/spool"
while [ ! -e "$SVTB_OUT/stop" ]; do
	for f in "$dir"/spool/*.cmd; do
		[ -e "$f" ] || continue
		id=${f%.cmd}
		mv "$f" "$id.run"
		sh "$id.run" >"$id.out" 2>"$id.err" </dev/null
		echo $? >"$id.rc.tmp"
		mv "$id.rc.tmp" "$id.rc"
	done
	sleep 0.1
done
log "stopping"
[ -e /run/cilium-agent.pid ] && kill "$(cat /run/cilium-agent.pid)" 2>/dev/null
wait "$sup"
