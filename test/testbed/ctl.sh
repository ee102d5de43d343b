#!/usr/bin/env bash
# Testbed control for end-to-end tests: fault injection and its undo, and running
# commands inside node namespaces. Every fault has an inverse command.
#
#   ctl.sh info                                  KEY=VALUE facts (IP families, nodes, netns, IPs, Pod CIDRs, proxy modes)
#   ctl.sh exec NODE -- CMD...                   run CMD in the node's (or svtb-cp's) network namespace
#   ctl.sh proxy-stop NODE | proxy-start NODE    stop / start that node's kube-proxy (rules stay behind = stale)
#   ctl.sh svc-rules-delete NODE IP PORT [PROTO] delete one Service port's capture rule on NODE (IP of either family)
#                                                (iptables/ip6tables: its nat KUBE-SERVICES jump; nftables: its service-ips element
#                                                in table ip or ip6 kube-proxy).
#                                                kube-proxy puts it back on its next sync: stop kube-proxy first for a lasting fault.
#   ctl.sh legacy-leftovers NODE | legacy-clean NODE
#                                                write / remove stale kube-proxy-looking rules with the OTHER iptables backend (legacy)
#   ctl.sh ip-forward NODE 0|1 [ipv4|ipv6]       (default ipv4)
#   ctl.sh route-del NODE CIDR | route-add NODE CIDR
#                                                delete / restore NODE's route to another node's Pod CIDR of either family
#                                                (with SVTB_CNI=flannel: flannel's route via flannel.1 or flannel-v6.1)
#   ctl.sh fdb-del NODE OTHER [ipv6] | fdb-add NODE OTHER [ipv6]
#                                                delete / restore the flannel.1 (ipv6: flannel-v6.1) FDB entry on NODE for OTHER's VTEP
#   ctl.sh neigh-del NODE OTHER [ipv6] | neigh-add NODE OTHER [ipv6]
#                                                delete / restore the flannel.1 (ipv6: flannel-v6.1) neighbour entry on NODE for OTHER's VTEP
#   ctl.sh encap-block NODE | encap-unblock NODE drop / stop dropping UDP to the VXLAN port arriving at NODE
#   ctl.sh pod-veth NODE POD_IP                  print the node side of a Pod's veth (bridge port on cni0)
#   ctl.sh link-mtu NODE DEV MTU                 set a link's MTU in the node's namespace
#   ctl.sh pod-offload NODE POD_IP on|off        TCP segmentation offload (tso, gso) of the Pod's eth0: off
#                                                makes the Pod send wire-sized packets, as a real NIC's link would carry
#   ctl.sh netpol-stop NODE | netpol-start NODE  stop kube-router's policy controller on NODE and remove what it
#                                                programmed there (an unenforced node) / start it again
set -euo pipefail
source "$(dirname "$0")/lib.sh"

node_arg() {
	local n=${1:-}
	[[ -n $n && -e /var/run/netns/$n ]] || die "unknown or absent node netns '${n}'"
	echo "$n"
}
other_node_for_cidr() {
	local cidr=$1 m
	for m in "${NODES[@]}"; do [[ ${NODE_CIDR4[$m]} == "$cidr" || ${NODE_CIDR6[$m]} == "$cidr" ]] && { echo "$m"; return; }; done
	die "no testbed node owns Pod CIDR $cidr"
}
# family_of ADDR_OR_CIDR: ipv6 or ipv4.
family_of() { if [[ $1 == *:* ]]; then echo ipv6; else echo ipv4; fi; }
# running_families: the IP families the running testbed was brought up with.
running_families() { cat "$STATE/ip-families" 2>/dev/null || echo ipv4; }

# running_cni: the Pod network the running testbed was brought up with.
running_cni() { cat "$STATE/cni-mode" 2>/dev/null || echo ptp; }
# vtep_mac NODE [ipv6]: the VtepMAC flannel annotated NODE with (its IPv6 VTEP's).
vtep_mac() {
	local key=backend-data
	[[ ${2:-} == ipv6 ]] && key=backend-v6-data
	KUBECTL get node "$1" -o jsonpath="{.metadata.annotations.flannel\\.alpha\\.coreos\\.com/$key}" |
		sed -n 's/.*"VtepMAC":"\([^"]*\)".*/\1/p'
}

cmd=${1:-}; shift || true
case $cmd in
info)
	# The running testbed's families (SVTB_IP_FAMILIES of its up), not this
	# shell's: the *_IP, *_POD_CIDR, SERVICE_CIDR and KUBE_DNS_IP keys are
	# the primary family's, the plural keys every family's, primary first.
	SVTB_IP_FAMILIES=$(running_families) exec bash "$0" info-families
	;;
info-families)
	echo "IP_FAMILIES=$IP_FAMILIES_SPEC"
	echo "NODES=${NODES[*]}"
	echo "CP_NETNS=$CP_NS"
	echo "CP_IP=$CP_IP"
	echo "CP_IPS=$(per_family $CP_IP4 $CP_IP6)"
	echo "HUB_NETNS=$HUB_NS"
	for n in "${NODES[@]}"; do
		k=${n//-/_}; k=${k^^}
		echo "${k}_NETNS=$n"
		echo "${k}_IP=${NODE_IP[$n]}"
		echo "${k}_IPS=${NODE_IPS[$n]}"
		echo "${k}_POD_CIDR=${NODE_CIDR[$n]}"
		echo "${k}_POD_CIDRS=${NODE_CIDRS[$n]}"
		echo "${k}_ZONE=${NODE_ZONE[$n]}"
		echo "${k}_PROXY_MODE=$(awk '/^mode:/{print $2}' "$(node_dir "$n")/kube-proxy.yaml" 2>/dev/null || echo "${NODE_PROXY_MODE[$n]}")"
	done
	echo "CNI=$(cat "$STATE/cni-mode" 2>/dev/null || echo ptp)"
	echo "FLANNEL_PORT=$FLANNEL_PORT"
	echo "SERVICE_CIDR=${SERVICE_CIDR%%,*}"
	echo "SERVICE_CIDRS=$SERVICE_CIDR"
	echo "KUBE_DNS_IP=$KUBE_DNS_IP"
	echo "KUBE_DNS_IPS=$KUBE_DNS_IPS"
	echo "KUBECTL=$K8S_BIN/kubectl"
	echo "ECHO_CLIENT=$IMAGES_DIR/echo"
	echo "STATE_DIR=$STATE"
	echo "RUN_DIR=$RUN"
	;;
exec)
	n=$(node_arg "${1:-}"); shift
	[[ ${1:-} == -- ]] && shift
	exec nsenter --net="/var/run/netns/$n" -- "$@"
	;;
proxy-stop)
	n=$(node_arg "${1:-}")
	pid_alive "kube-proxy-$n" || die "kube-proxy on $n is not running"
	stop_daemon "kube-proxy-$n" 10
	log "kube-proxy on $n stopped (its rules stay in place)"
	;;
proxy-start)
	n=$(node_arg "${1:-}")
	if pid_alive "kube-proxy-$n"; then log "kube-proxy on $n already running"; exit 0; fi
	start_kube_proxy "$n"
	for i in $(seq 1 100); do
		in_ns "$n" "$IMAGES_DIR/echo" get http://127.0.0.1:10256/healthz >/dev/null 2>&1 && break
		pid_alive "kube-proxy-$n" || die "kube-proxy on $n exited (see $LOGS/kube-proxy-$n.log)"
		sleep 0.1
	done
	log "kube-proxy on $n started"
	;;
svc-rules-delete)
	n=$(node_arg "${1:-}"); ip=${2:?IP}; port=${3:?PORT}; proto=${4:-tcp}
	mode=$(awk '/^mode:/{print $2}' "$(node_dir "$n")/kube-proxy.yaml")
	if [[ $(family_of "$ip") == ipv6 ]]; then table=ip6 ipt=ip6tables len=128; else table=ip ipt=iptables len=32; fi
	if [[ $mode == nftables ]]; then
		in_ns "$n" nft delete element "$table" kube-proxy service-ips "{ $ip . $proto . $port }"
	else
		rule=$(in_ns "$n" "$ipt" -t nat -S KUBE-SERVICES | grep -E -- "-d $ip/$len .*--dport $port " | grep -- "-p $proto" | head -n1)
		[[ -n $rule ]] || die "no KUBE-SERVICES rule for $ip:$port/$proto on $n"
		# shellcheck disable=SC2086
		eval "in_ns \"\$n\" $ipt -t nat ${rule/-A /-D }"
	fi
	log "deleted the $mode capture rule for $ip:$port/$proto on $n"
	;;
legacy-leftovers)
	n=$(node_arg "${1:-}")
	in_ns "$n" iptables-legacy -t nat -N KUBE-SERVICES 2>/dev/null || true
	in_ns "$n" iptables-legacy -t nat -N KUBE-SVC-SVTBLEFTOVER0000 2>/dev/null || true
	in_ns "$n" iptables-legacy -t nat -A KUBE-SERVICES -d 10.96.255.254/32 -p tcp --dport 80 \
		-m comment --comment "svtb/leftover:http cluster IP" -j KUBE-SVC-SVTBLEFTOVER0000
	in_ns "$n" iptables-legacy -t nat -A KUBE-SVC-SVTBLEFTOVER0000 -p tcp -j DNAT --to-destination 10.244.99.99:8080
	in_ns "$n" iptables-legacy -t nat -C OUTPUT -j KUBE-SERVICES 2>/dev/null ||
		in_ns "$n" iptables-legacy -t nat -A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
	log "wrote leftover kube-proxy rules with iptables-legacy on $n"
	;;
legacy-clean)
	n=$(node_arg "${1:-}")
	in_ns "$n" iptables-legacy -t nat -D OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES 2>/dev/null || true
	for c in KUBE-SERVICES KUBE-SVC-SVTBLEFTOVER0000; do in_ns "$n" iptables-legacy -t nat -F "$c" 2>/dev/null || true; done
	for c in KUBE-SERVICES KUBE-SVC-SVTBLEFTOVER0000; do in_ns "$n" iptables-legacy -t nat -X "$c" 2>/dev/null || true; done
	log "removed the iptables-legacy leftovers on $n"
	;;
ip-forward)
	n=$(node_arg "${1:-}"); v=${2:?0|1}
	if [[ ${3:-ipv4} == ipv6 ]]; then key=net.ipv6.conf.all.forwarding; else key=net.ipv4.ip_forward; fi
	in_ns "$n" sysctl -qw "$key=$v"
	log "$key=$v on $n"
	;;
route-del | route-add)
	n=$(node_arg "${1:-}"); cidr=${2:?CIDR}
	o=$(other_node_for_cidr "$cidr")
	if [[ $(family_of "$cidr") == ipv6 ]]; then via=(via "${NODE_IP6[$o]}") dev=flannel-v6.$FLANNEL_VNI; else via=(via "${NODE_IP4[$o]}") dev=flannel.$FLANNEL_VNI; fi
	# flannel's route: the remote VTEP's address (the CIDR's first address) on flannel.1 or flannel-v6.1.
	[[ $(running_cni) == flannel ]] && via=(via "${cidr%/*}" dev "$dev" onlink)
	if [[ $cmd == route-del ]]; then in_ns "$n" ip route del "$cidr" "${via[@]}"; else in_ns "$n" ip route replace "$cidr" "${via[@]}"; fi
	log "$cmd $cidr ${via[*]} on $n"
	;;
fdb-del | fdb-add | neigh-del | neigh-add)
	n=$(node_arg "${1:-}"); o=$(node_arg "${2:-}"); fam=${3:-ipv4}
	[[ $(running_cni) == flannel ]] || die "$cmd: the testbed does not run flannel"
	mac=$(vtep_mac "$o" "$fam")
	[[ -n $mac ]] || die "node $o has no flannel $fam VtepMAC annotation"
	if [[ $fam == ipv6 ]]; then
		dev=flannel-v6.$FLANNEL_VNI dst=${NODE_IP6[$o]} gw=${NODE_CIDR6[$o]%/*}
	else
		dev=flannel.$FLANNEL_VNI dst=${NODE_IP4[$o]} gw=${NODE_CIDR4[$o]%/*}
	fi
	case $cmd in
	fdb-del) in_ns "$n" bridge fdb del "$mac" dev "$dev" dst "$dst" self ;;
	fdb-add) in_ns "$n" bridge fdb replace "$mac" dev "$dev" dst "$dst" self permanent ;;
	neigh-del) in_ns "$n" ip neigh del "$gw" dev "$dev" ;;
	neigh-add) in_ns "$n" ip neigh replace "$gw" lladdr "$mac" dev "$dev" nud permanent ;;
	esac
	log "$cmd on $n for $o ($fam, $mac)"
	;;
encap-block)
	n=$(node_arg "${1:-}")
	in_ns "$n" nft -f - <<NFT
table inet svtb-encap-fault {
	chain input {
		type filter hook input priority -300; policy accept;
		udp dport $FLANNEL_PORT counter drop
	}
}
NFT
	log "UDP $FLANNEL_PORT arriving at $n is dropped"
	;;
encap-unblock)
	n=$(node_arg "${1:-}")
	in_ns "$n" nft delete table inet svtb-encap-fault 2>/dev/null || true
	log "UDP $FLANNEL_PORT arriving at $n passes again"
	;;
pod-veth)
	n=$(node_arg "${1:-}"); ip=${2:?POD_IP}
	mac=$(in_ns "$n" ip neigh show "$ip" dev cni0 | awk '{for (i = 1; i < NF; i++) if ($i == "lladdr") print $(i + 1)}')
	[[ -n $mac ]] || die "no neighbour entry for $ip on cni0 of $n"
	dev=$(in_ns "$n" bridge fdb show br cni0 | awk -v m="$mac" '$1 == m && $2 == "dev" && !/self/ {print $3; exit}')
	[[ -n $dev ]] || die "no cni0 port has learnt $mac ($ip) on $n"
	echo "$dev"
	;;
pod-offload)
	n=$(node_arg "${1:-}"); ip=${2:?POD_IP}; v=${3:?on|off}
	found=""
	for f in "$(node_run "$n")"/containerd-state/io.containerd.grpc.v1.cri/netns/cni-*; do
		if nsenter --net="$f" ip -o -4 addr show dev eth0 2>/dev/null | grep -q " $ip/"; then found=$f; break; fi
	done
	[[ -n $found ]] || die "no Pod network namespace on $n holds $ip"
	nsenter --net="$found" ethtool -K eth0 tso "$v" gso "$v"
	log "tso/gso $v on eth0 of the Pod $ip on $n"
	;;
link-mtu)
	n=$(node_arg "${1:-}"); dev=${2:?DEV}; mtu=${3:?MTU}
	in_ns "$n" ip link set dev "$dev" mtu "$mtu"
	log "$dev on $n: MTU $mtu"
	;;
netpol-stop)
	n=$(node_arg "${1:-}")
	stop_daemon "kube-router-$n" 10
	# What kube-router's policy controller leaves when it stops: its jumps from
	# the built-in chains, its own chains (KUBE-ROUTER-*, KUBE-NWPLCY-*,
	# KUBE-POD-FW-*) and ipsets. Removed in one iptables-restore so quoted
	# comments need no re-parsing here.
	for v in 4 6; do
		save=iptables-save restore=iptables-restore
		[[ $v == 6 ]] && save=ip6tables-save restore=ip6tables-restore
		dump=$(in_ns "$n" "$save" -t filter)
		chains=$(awk '/^:(KUBE-ROUTER-|KUBE-NWPLCY-|KUBE-POD-FW-)/{print substr($1, 2)}' <<<"$dump")
		[[ -n $chains ]] || continue
		{
			echo '*filter'
			awk '/^-A (INPUT|FORWARD|OUTPUT) .*-j (KUBE-ROUTER-|KUBE-NWPLCY-|KUBE-POD-FW-)/{sub(/^-A/, "-D"); print}' <<<"$dump"
			for c in $chains; do echo "-F $c"; done
			for c in $chains; do echo "-X $c"; done
			echo COMMIT
		} | in_ns "$n" "$restore" --noflush
	done
	for set in $(in_ns "$n" ipset list -n 2>/dev/null | grep -E '^(inet6:)?KUBE-(SRC|DST)-'); do
		in_ns "$n" ipset destroy "$set" 2>/dev/null || true
	done
	log "kube-router's policy controller on $n stopped and its chains and ipsets removed"
	;;
netpol-start)
	n=$(node_arg "${1:-}")
	[[ ${NODE_NETPOL[$n]} == kube-router ]] || die "$n runs no policy enforcer (SVTB_NETPOL)"
	if pid_alive "kube-router-$n"; then log "kube-router on $n already running"; exit 0; fi
	start_kube_router "$n"
	for i in $(seq 1 300); do
		in_ns "$n" iptables -S KUBE-ROUTER-FORWARD >/dev/null 2>&1 && break
		pid_alive "kube-router-$n" || die "kube-router on $n exited (see $LOGS/kube-router-$n.log)"
		sleep 0.1
	done
	log "kube-router on $n started"
	;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
