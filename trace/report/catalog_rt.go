package report

// RT codes judge whether a node can carry a packet to the endpoints:
// routes, neighbours, overlays, path MTU and the probes to the Pods.
const (
	CodeRTHealthy        = "RT001"
	CodeRTNoRoute        = "RT002"
	CodeRTDeviceDown     = "RT003"
	CodeRTForwardOff     = "RT004"
	CodeRTRPFilter       = "RT005"
	CodeRTUnreadable     = "RT006"
	CodeRTPodTimeout     = "RT007"
	CodeRTPodsReached    = "RT008"
	CodeRTPolicyExplains = "RT009"
	// CodeRTPolicyUndetermined: probes failed where the policies' answer
	// for the prober is undetermined (RT031 is the client's own).
	CodeRTPolicyUndetermined = "RT030"

	// Judged from inside the --from Pod's network namespace (the client's
	// own view), and an endpoint Pod reaching itself (hairpin).
	CodeRTClientProbed     = "RT020"
	CodeRTClientSkipped    = "RT021"
	CodeRTClientTimeout    = "RT022"
	CodeRTClientClearsNode = "RT023"
	// CodeRTClientPolicyUndetermined: the client's connections fail where
	// the policies' answer for it is undetermined.
	CodeRTClientPolicyUndetermined = "RT031"

	// Failure modes users meet most on a node while every rule is right.
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

	// A timeout that is not evidence: the collector on that node ran late (a
	// starved node) or its time ran out before it could try again. Emitted
	// with status unknown: the layer is undetermined there, not failed.
	CodeRTProbeInconclusive = "RT026"
	CodeRTEndpointChanged   = "RT027"
)

var rtCatalog = []CheckSpec{
	{Code: CodeRTHealthy, Layer: LayerRoute, Severity: SeverityInfo, Title: "Routes to Pods",
		Message:  "routes to {count} Pod IP(s) via {devices}; ip_forward={forward}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTNoRoute, Layer: LayerRoute, Severity: SeverityError, Title: "No route to Pod",
		Message:  "no usable route to {ips}: {detail}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTDeviceDown, Layer: LayerRoute, Severity: SeverityError, Title: "Route device down",
		Message:  "the route to {ips} uses {device}, which is {state}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTForwardOff, Layer: LayerRoute, Severity: SeverityError, Title: "IP forwarding off",
		Message:  "{sysctl}={forward}: the node does not forward Service traffic to Pods{pods}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTRPFilter, Layer: LayerRoute, Severity: SeverityWarning, Title: "Strict reverse-path filter",
		Message:  "rp_filter is strict on {device}: the kernel applies max(conf.all.rp_filter={all}, conf.{device}.rp_filter={deviceValue}) = 1, so replies that arrive on another interface than the route back are dropped",
		NextStep: nodeSvcCmd},
	{Code: CodeRTUnreadable, Layer: LayerRoute, Severity: SeverityWarning, Title: "Routes not readable",
		Message:  "the collector could not read routes: {error}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTPodTimeout, Layer: LayerRoute, Severity: SeverityError, Title: "Pod IP unreachable",
		Message:  "connections to {targets} time out or are unreachable; the packets do not get to the Pod or back",
		NextStep: nodeSvcCmd},
	{Code: CodeRTPodsReached, Layer: LayerRoute, Severity: SeverityInfo, Title: "Pods reachable",
		Message:  "{count} endpoint(s) answered a direct connection{sample}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTPolicyUndetermined, Layer: LayerRoute, Severity: SeverityWarning, Title: "Probes failed where the policy is undetermined",
		Message:  "node {node}'s probes to {targets} failed, and whether the policies {policies} admit this node there is undetermined ({reason}): a policy drop and a path fault are equally possible, so neither is named",
		NextStep: "kubectl svctrace {service} -n {namespace} --from pod/<client> -o yaml  # a client Pod's own view"},
	{Code: CodeRTPolicyExplains, Layer: LayerRoute, Severity: SeverityInfo, Title: "Probes kept out by NetworkPolicy",
		Message:  "{targets}: no answer to this node's probes, and the NetworkPolicies {policies} do not admit this node's address there; the node is not the client, so this is not counted as a route or datapath fault (these probes cannot tell one from the policy's drop); the policy layer judges the client",
		NextStep: "kubectl describe networkpolicy -n {namespace}"},
	{Code: CodeRTClientProbed, Layer: LayerRoute, Severity: SeverityInfo, Title: "Probed from the client Pod",
		Message:  "probed from inside pod {clientNamespace}/{client}'s network namespace ({netns}, process {pid} {command}) by the collector on node {node} (profile {profile}): {summary}",
		NextStep: clientNetnsCmd},
	{Code: CodeRTClientSkipped, Layer: LayerRoute, Severity: SeverityInfo, Title: "Client Pod's own view not probed",
		Message:  "every probe ran from node {node}'s network namespace, not from pod {clientNamespace}/{client}'s: {reason}",
		NextStep: clientNetnsCmd},
	{Code: CodeRTClientTimeout, Layer: LayerRoute, Severity: SeverityError, Title: "Client cannot reach the Pods",
		Message:  "from pod {clientNamespace}/{client}'s network namespace, connections to {targets} time out or are unreachable, and no NetworkPolicy denies this client there: the packets from this client do not get to the Pods or back",
		NextStep: clientNetnsCmd},
	{Code: CodeRTClientPolicyUndetermined, Layer: LayerRoute, Severity: SeverityError, Title: "Client's connections fail, policy undetermined",
		Message:  "from pod {clientNamespace}/{client}'s network namespace, {targets} got no answer, and whether the policies {policies} admit this client there is undetermined ({reason}): an enforced policy and a path fault are equally possible, so neither is named",
		NextStep: clientNetnsCmd},
	{Code: CodeRTClientClearsNode, Layer: LayerRoute, Severity: SeverityInfo, Title: "Client reaches what the node could not",
		Message:  "node {node}'s own probes to {targets} failed where the NetworkPolicies keep the node out, and pod {clientNamespace}/{client} reached them from its namespace: those node probe failures are not faults",
		NextStep: clientNetnsCmd},
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
	{Code: CodeRTProbeInconclusive, Layer: LayerRoute, Severity: SeverityWarning, Title: "Endpoint probe inconclusive on a slow node",
		Message:  "connections to {targets} timed out, but {why}; whether the packets get to the Pods is not judged from this node",
		NextStep: lateCollectorNextStepCmd},
	{Code: CodeRTEndpointChanged, Layer: LayerRoute, Severity: SeverityInfo, Title: "Endpoint changed during the read",
		Message:  "{targets} did not answer, and {why}: not judged as a route failure",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o wide  # trace again once the rollout settles"},
}
