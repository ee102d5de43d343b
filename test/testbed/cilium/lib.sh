# shellcheck shell=bash
# Settings for the Cilium node: a private control plane (netns svcil-cp) and a
# user-mode Linux guest (netns svcil-node) running the real Cilium agent.
# Sourced, not executed. Nothing here overlaps the testbed (svtb-*, 10.0.0.0/24).

CILIUM_VERSION=v1.20.2
CILIUM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTBED_DIR=$(cd "$CILIUM_DIR/.." && pwd)
REPO_ROOT=$(cd "$TESTBED_DIR/../.." && pwd)

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.7.0
SVCTRACE_CACHE=${SVCTRACE_CACHE:-$HOME/.cache/svctrace}
K8S_BIN=$SVCTRACE_CACHE/k8s-$K8S_VERSION/bin
ETCD_BIN=$SVCTRACE_CACHE/etcd-$ETCD_VERSION/bin
CILIUM_CACHE=$SVCTRACE_CACHE/cilium-$CILIUM_VERSION
CILIUM_BIN=$CILIUM_CACHE/bin

STATE=/var/lib/svctrace-cilium
RUN=/run/svctrace-cilium
LOGS=$STATE/logs

CP_NS=svcil-cp
NODE_NS=svcil-node
CP_IF=svcil-cp0        # veth end in the control-plane netns
NODE_IF=svcil-nd0      # veth end in the node netns (the UML guest's TAP peer is bridged to it)
CP_IP=10.77.0.1
NODE_IP=10.77.0.11
NODE_NAME=svcil-node1
POD_CIDR=10.78.1.0/24
SERVICE_CIDR=10.79.0.0/16
API_PORT=6443

log() { printf '[cilium %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
in_ns() { local ns=$1; shift; nsenter --net="/var/run/netns/$ns" -- "$@"; }

KUBECTL_BIN=$K8S_BIN/kubectl
# Guest kernel modules: tc BPF (cls_bpf, the clsact qdisc in sch_ingress),
# veth for cilium_host/cilium_net, and the netlink families the agent opens
# at start (its netlink handles ask for XFRM and NETFILTER: without
# xfrm_user and nfnetlink the route reconciler fails with "protocol not
# supported"); udp_diag for its socket-termination probe; legacy iptables
# (kube-proxy replacement requires the agent's iptables rules; init.sh points
# iptables at the legacy backend, this kernel's nf_tables NAT does not load).
GUEST_MODULES=cls_bpf,sch_ingress,act_bpf,veth,dummy,xfrm_user,nfnetlink,udp_diag,\
nf_conntrack,nf_nat,iptable_nat,iptable_filter,iptable_mangle,iptable_raw,xt_nat,xt_tcpudp,xt_comment,xt_mark,\
xt_MASQUERADE,xt_addrtype,xt_conntrack,xt_CT,xt_socket,xt_TPROXY,xt_set,ip_set
UML_NAME=svcil-node1

# Start a daemon inside a netns, record its PID and binary in $RUN/NAME.{pid,cmd}.
start_daemon() {
	local name=$1 ns=$2; shift 2
	mkdir -p "$RUN" "$LOGS"
	setsid nsenter --net="/var/run/netns/$ns" -- "$@" >>"$LOGS/$name.log" 2>&1 </dev/null 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&- &
	echo $! >"$RUN/$name.pid"
	printf '%s\n' "$1" >"$RUN/$name.cmd"
}

# pid_alive NAME: the recorded PID is alive and still runs the recorded binary.
pid_alive() {
	local name=$1 pid exe
	[[ -f $RUN/$name.pid && -f $RUN/$name.cmd ]] || return 1
	pid=$(<"$RUN/$name.pid")
	[[ -r /proc/$pid/cmdline ]] || return 1
	exe=$(tr '\0' '\n' <"/proc/$pid/cmdline" | head -n1)
	[[ $exe == "$(<"$RUN/$name.cmd")" ]]
}

# stop_daemon NAME: TERM, then KILL after 10 s; only ever the recorded process.
stop_daemon() {
	local name=$1 pid i
	if pid_alive "$name"; then
		pid=$(<"$RUN/$name.pid")
		kill -TERM "$pid" 2>/dev/null || true
		for ((i = 0; i < 100; i++)); do pid_alive "$name" || break; sleep 0.1; done
		pid_alive "$name" && kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$RUN/$name.pid" "$RUN/$name.cmd"
}

KUBECTL() { in_ns "$CP_NS" "$KUBECTL_BIN" --kubeconfig "$STATE/pki/admin.kubeconfig" "$@"; }
