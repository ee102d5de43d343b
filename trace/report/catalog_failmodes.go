package report

// Codes of the failure modes users meet most on a node: conntrack races and
// INVALID drops, bridge netfilter, the neighbour table, overlays, path MTU
// and masquerading.
const (
	CodeCTInvalid          = "CT009"
	CodeCTDNSRace          = "CT010"
	CodeCTDNSRaceMitigated = "CT011"

	CodeRTBridgeNFSameNode = "RT010"
	CodeRTBridgeNF         = "RT011"
	CodeRTNeighGC          = "RT012"
	CodeRTNeighOverflow    = "RT013"
	CodeRTOverlayVTEP      = "RT014"
	CodeRTOverlayMTU       = "RT015"
	CodeRTPMTUBlackhole    = "RT016"
	CodeRTOverlayDown      = "RT017"
	CodeRTEncapAnswered    = "RT018"
	CodeRTEncapRefused     = "RT019"
	CodeRTEncapSilent      = "RT024"
	CodeRTPathMTULowered   = "RT025"

	CodeDPMasqMissing  = "DP047"
	CodeDPSourceLost   = "DP048"
	CodeDPSourceKept   = "DP049"
	CodeDPMasqExternal = "DP050"
	CodeDPMasqNoRule   = "DP051"
	CodeDPMasqNoJump   = "DP052"
)

var failModeCatalog = []CheckSpec{
	{Code: CodeCTInvalid, Layer: LayerConntrack, Severity: SeverityWarning, Title: "conntrack INVALID packets",
		Message:  "conntrack marked {delta} packet(s) INVALID during a {interval}ms sample (total {total}); nf_conntrack_tcp_be_liberal={liberal}: {behaviour}",
		NextStep: "kubectl debug node/{node} -it --profile=netadmin --image=<an image with conntrack> -- conntrack -S"},
	{Code: CodeCTDNSRace, Layer: LayerConntrack, Severity: SeverityWarning, Title: "DNS lost to the conntrack insert race",
		Message:  "insert_failed rose by {delta} during a {interval}ms sample while the node holds {dnsFlows} UDP flow(s) to the cluster DNS ({dnsUnreplied} never answered): {client} parallel A and AAAA queries from one UDP socket race in conntrack's insert and one of them is dropped, so lookups stall for the resolver's 5 s timeout; dnsConfig.options single-request-reopen (glibc) or use-vc on the clients, or NodeLocal DNSCache, avoid it",
		NextStep: "kubectl explain pod.spec.dnsConfig.options"},
	{Code: CodeCTDNSRaceMitigated, Layer: LayerConntrack, Severity: SeverityInfo, Title: "DNS insert race mitigated",
		Message:  "insert_failed rose by {delta} during a {interval}ms sample with {dnsFlows} UDP flow(s) to the cluster DNS on the node, but the client {client} resolves with {mitigation}, which keeps its A and AAAA queries from racing (glibc; musl ignores these options)",
		NextStep: nodeSvcCmd},

	{Code: CodeRTBridgeNFSameNode, Layer: LayerRoute, Severity: SeverityError, Title: "Bridged traffic skips kube-proxy",
		Message:  "Pods attach to the bridge {bridge} ({ports} veth ports) and {setting}: the client {client} and the endpoints {endpoints} share this node, so the endpoint's reply is bridged straight back without conntrack reversing the Service's DNAT, and the client drops a reply from an address it never asked",
		NextStep: "kubectl debug node/{node} -it --profile=sysadmin --image=busybox -- sh -c 'modprobe br_netfilter; sysctl -w net.bridge.bridge-nf-call-iptables=1'"},
	{Code: CodeRTBridgeNF, Layer: LayerRoute, Severity: SeverityWarning, Title: "Bridge netfilter off",
		Message:  "Pods attach to the bridge {bridge} ({ports} veth ports) and {setting}: clients on this node that reach the endpoints {endpoints} on the same bridge through the Service get replies that skip conntrack's reverse NAT, and drop them",
		NextStep: "kubectl debug node/{node} -it --profile=sysadmin --image=busybox -- sh -c 'modprobe br_netfilter; sysctl -w net.bridge.bridge-nf-call-iptables=1'"},
	{Code: CodeRTNeighGC, Layer: LayerRoute, Severity: SeverityWarning, Title: "Neighbour table above gc_thresh2",
		Message:  "the {family} neighbour table holds {entries} entries, above gc_thresh2={thresh2} (gc_thresh3={thresh3}): the kernel garbage-collects it by force, so entries of live peers are dropped and re-resolved",
		NextStep: "kubectl debug node/{node} -it --image=busybox -- sh -c 'ip -{familyFlag} neigh | wc -l; sysctl net.{familyDir}.neigh.default'"},
	{Code: CodeRTNeighOverflow, Layer: LayerRoute, Severity: SeverityError, Title: "Neighbour table full",
		Message:  "the {family} neighbour table holds {entries} entries, at gc_thresh3={thresh3}: the kernel refuses new entries (\"neighbour table overflow\" in dmesg) and packets to peers it has not resolved are dropped",
		NextStep: "kubectl debug node/{node} -it --profile=sysadmin --image=busybox -- sysctl -w net.{familyDir}.neigh.default.gc_thresh3=<larger>"},
	{Code: CodeRTOverlayVTEP, Layer: LayerRoute, Severity: SeverityError, Title: "Overlay lacks remote tunnel endpoints",
		Message:  "{device} ({kind}) has no {what} for {nodes}: Pod traffic to those nodes is not encapsulated to them and is lost",
		NextStep: "kubectl debug node/{node} -it --image=busybox -- sh -c 'bridge fdb show dev {device}; ip neigh show dev {device}'"},
	{Code: CodeRTOverlayMTU, Layer: LayerRoute, Severity: SeverityError, Title: "Overlay MTU larger than the underlay allows",
		Message:  "{device} ({kind}) has MTU {mtu}, but its underlay {underlay} has MTU {underlayMTU} and {kind} adds {overhead} bytes: packets of {mtu} bytes become {encapsulated} on the wire, and full-size packets are dropped or fragmented",
		NextStep: "kubectl debug node/{node} -it --image=busybox -- ip -d link show {device}"},
	{Code: CodeRTPMTUBlackhole, Layer: LayerRoute, Severity: SeverityError, Title: "Path MTU blackhole",
		Message:  "{targets}: a {small}-byte don't-fragment probe is answered and a {large}-byte one (the route's MTU {mtu} via {device}) is not, and no \"fragmentation needed\" comes back: connections open, then hang as soon as a full-size packet is sent",
		NextStep: "kubectl debug node/{node} -it --image=busybox -- ping -M do -s {payload} -c 2 <endpoint IP>"},
	{Code: CodeRTPathMTULowered, Layer: LayerRoute, Severity: SeverityWarning, Title: "Path MTU below the route's",
		Message:  "{targets}: a {large}-byte don't-fragment probe (the route's MTU {mtu} via {device}) was answered with \"fragmentation needed\", MTU {pmtu}: a hop between this node and the endpoint carries less than the Pod network's MTU. This node's packets adapt; the endpoint's own packets larger than {pmtu} bytes meet the same hop on their way back, and where that hop is a veth or bridge port next to the endpoint they are dropped without an ICMP error, so connections open and small answers pass while large answers hang",
		NextStep: "kubectl debug node/<the endpoint's node> -it --image=busybox -- ip link  # the MTU of every veth, bridge and tunnel device on the way"},
	{Code: CodeRTOverlayDown, Layer: LayerRoute, Severity: SeverityError, Title: "Overlay device down",
		Message:  "{device} ({kind}) is {state}: Pod traffic to other nodes through it is lost",
		NextStep: "kubectl debug node/{node} -it --image=busybox -- ip -d link show {device}"},

	{Code: CodeRTEncapAnswered, Layer: LayerRoute, Severity: SeverityInfo, Title: "Tunnel answers",
		Message:  "{device} ({kind} VNI {vni}): a datagram the collector encapsulated itself (no local forwarding-database or neighbour entry used) to a closed port of each remote endpoint's overlay address over UDP {port} was answered through the tunnel with \"port unreachable\" from {peers}: UDP {port} passes both ways and the remote devices carry VNI {vni}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTEncapRefused, Layer: LayerRoute, Severity: SeverityError, Title: "Tunnel endpoint not listening",
		Message:  "{device} ({kind} VNI {vni}): {peers} answered a datagram encapsulated to UDP {port} with ICMP port unreachable for UDP {port} itself: nothing listens on UDP {port} there (no {kind} device on that port, or the CNI agent that makes it is not running), so Pod traffic this node tunnels to them is dropped",
		NextStep: "kubectl debug node/{peerNode} -it --image=busybox -- ip -d link show type {kind}"},
	{Code: CodeRTEncapSilent, Layer: LayerRoute, Severity: SeverityWarning, Title: "Tunnel silent",
		Message:  "{device} ({kind} VNI {vni}): no answer from {peers} to a datagram encapsulated to UDP {port} ({sent} datagram(s) each in {timeout}): UDP {port} is filtered between the nodes (a firewall or security group), the remote device does not carry VNI {vni}, the remote lost its own entries for this node (the way back), or it sends no ICMP errors; the remote node's own trace (--all-nodes) shows its side",
		NextStep: "kubectl debug node/{node} -it --profile=netadmin --image=<an image with tcpdump> -- tcpdump -ni any udp port {port}"},

	{Code: CodeDPMasqMissing, Layer: LayerDatapath, Severity: SeverityError, Title: "Masquerade mark chain missing",
		Message:  "{datapath}: {detail}, so Service traffic that must be masqueraded keeps its source, and replies from Pods on other nodes bypass this node and are dropped by the client",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPSourceLost, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Client source IP is masqueraded",
		Message:  "externalTrafficPolicy Cluster on {port}: {datapath} marks external traffic for masquerade ({rule}), so Pods see this node's address, not the client's (SNAT); externalTrafficPolicy Local keeps it",
		NextStep: nodeSvcCmd},
	{Code: CodeDPSourceKept, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Client source IP is kept",
		Message:  "externalTrafficPolicy Local on {port}: {datapath} sends external traffic only to this node's endpoints without masquerading, so Pods see the client's address (traffic from the node itself is still masqueraded)",
		NextStep: nodeSvcCmd},
	{Code: CodeDPMasqExternal, Layer: LayerDatapath, Severity: SeverityError, Title: "External traffic not masqueraded",
		Message:  "externalTrafficPolicy Cluster on {port}, but {datapath}'s external chain {chain} does not mark traffic for masquerade: packets forwarded to Pods on other nodes keep the client's source, the Pod replies directly, and the client drops the reply",
		NextStep: nodeSvcCmd},
	{Code: CodeDPMasqNoRule, Layer: LayerDatapath, Severity: SeverityError, Title: "Masquerade rule missing",
		Message:  "{datapath}: {detail}, so packets kube-proxy marks for masquerade ({mark}) leave this node with their source unchanged: replies from Pods on other nodes, and hairpin replies, go straight back to a client that never sent to them and are dropped",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPMasqNoJump, Layer: LayerDatapath, Severity: SeverityError, Title: "Masquerade chain not reached",
		Message:  "{datapath}: {detail}, so nothing kube-proxy marks for masquerade ({mark}) is masqueraded: replies from Pods on other nodes, and hairpin replies, go straight back to a client that never sent to them and are dropped",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
}
