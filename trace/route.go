package trace

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// The route layer: whether a node can carry a packet from the Service's
// rules to an endpoint. Besides the routes themselves it judges the node
// facts that break Service traffic while every rule is right: bridged
// replies that skip netfilter, a full neighbour table, overlay tunnels that
// lost a peer or do not fit the underlay, and path-MTU blackholes. Each
// judge returns how many problems it found, so the layer's "healthy" check
// is left out when one did.

// judgeRouteFailModes judges bridge netfilter, the neighbour table, overlays
// and path MTU on one node.
func (nj *nodeJudge) judgeRouteFailModes(node string, obs *collectorapi.Observation, r *collectorapi.RouteObservation) int {
	problems := nj.judgeBridgeNF(node, obs, r)
	problems += nj.judgeNeighbours(node, r.Neighbours)
	problems += nj.judgeOverlays(node, r.Overlays, r.Routes)
	if p := obs.Sections.Probe; p != nil && p.Data != nil {
		problems += nj.judgePathMTU(node, p.Data.PathMTU)
	}
	return problems
}

// judgeBridgeNF: on a bridge CNI, a reply from an endpoint to a client on
// the same bridge is bridged, not routed; only br_netfilter with
// bridge-nf-call-iptables=1 makes it pass conntrack, which reverses the
// Service's DNAT. eBPF datapaths translate before the bridge and do not need it.
func (nj *nodeJudge) judgeBridgeNF(node string, obs *collectorapi.Observation, r *collectorapi.RouteObservation) int {
	if mode, _ := programmed.Owner(obs); programmed.IsEBPF(mode) {
		return 0
	}
	var br *collectorapi.Bridge
	for i, b := range r.Bridges {
		if b.VethPorts > 0 && (br == nil || b.VethPorts > br.VethPorts) {
			br = &r.Bridges[i]
		}
	}
	if br == nil {
		return 0
	}
	var setting string
	switch {
	case r.BrNetfilterLoaded != nil && !*r.BrNetfilterLoaded:
		setting = "the br_netfilter module is not loaded"
	case r.BridgeNFCallIPTables == "absent":
		setting = "net.bridge.bridge-nf-call-iptables does not exist (br_netfilter not loaded)"
	case r.BridgeNFCallIPTables != "1":
		setting = "net.bridge.bridge-nf-call-iptables=" + r.BridgeNFCallIPTables
	default:
		return 0
	}
	var local []string
	for ip, n := range nj.endpointIndex().node {
		if n == node {
			local = append(local, ip)
		}
	}
	if len(local) == 0 {
		return 0
	}
	sort.Strings(local)
	a := report.Args{"bridge": br.Name, "ports": strconv.Itoa(br.VethPorts), "setting": setting, "endpoints": listNames(local)}
	fields := []report.Field{fieldValue("bridge", br.Name), fieldValue("bridgeNFCallIPTables", r.BridgeNFCallIPTables),
		fieldValue("brNetfilterLoaded", boolOrUnknown(r.BrNetfilterLoaded)), fieldItems("localEndpoints", local)}
	if p := nj.clientPod(); p != nil && p.Spec.NodeName == node {
		a["client"] = p.Namespace + "/" + p.Name
		nj.EmitNode(report.CodeRTBridgeNFSameNode, node, a, nil, fields...)
	} else {
		nj.EmitNode(report.CodeRTBridgeNF, node, a, nil, fields...)
	}
	return 1
}

// judgeNeighbours compares each neighbour table with the kernel's GC
// thresholds: above gc_thresh2 the garbage collector runs by force (if the
// last flush is 5 s old), at gc_thresh3 neigh_alloc refuses new entries.
func (nj *nodeJudge) judgeNeighbours(node string, tables []collectorapi.NeighbourTable) int {
	problems := 0
	for _, t := range tables {
		a := report.Args{"family": t.Family, "entries": strconv.Itoa(t.Entries), "thresh2": strconv.Itoa(t.GCThresh2), "thresh3": strconv.Itoa(t.GCThresh3),
			"familyFlag": "4", "familyDir": "ipv4"}
		if t.Family == "IPv6" {
			a["familyFlag"], a["familyDir"] = "6", "ipv6"
		}
		fields := []report.Field{fieldValue("entries", strconv.Itoa(t.Entries)), fieldValue("gcThresh1", strconv.Itoa(t.GCThresh1)),
			fieldValue("gcThresh2", strconv.Itoa(t.GCThresh2)), fieldValue("gcThresh3", strconv.Itoa(t.GCThresh3))}
		switch {
		case t.GCThresh3 > 0 && t.Entries >= t.GCThresh3:
			nj.EmitNode(report.CodeRTNeighOverflow, node, a, nil, fields...)
			problems++
		case t.GCThresh2 > 0 && t.Entries > t.GCThresh2:
			nj.EmitNode(report.CodeRTNeighGC, node, a, nil, fields...)
			problems++
		}
	}
	return problems
}

// Encapsulation overheads over an IPv4 underlay: outer IPv4 20 + UDP 8 +
// VXLAN 8 + inner Ethernet 14 for VXLAN (flannel's encapOverhead is 50),
// the same for Geneve without options, the outer IPv4 header for IP-in-IP.
// An IPv6 underlay adds 20 more.
var encapOverhead = map[string]int{"vxlan": 50, "geneve": 50, "ipip": 20}

// Flannel's node annotations (pkg/subnet/kube/annotations.go, default
// prefix flannel.alpha.coreos.com): the node's VTEP address and the backend's
// lease attributes, {"VNI":1,"VtepMAC":"…"} for vxlan. A dual-stack
// flannel writes the IPv6 tunnel's under their own names
// (pkg/subnet/kube: backend-v6-data, public-ipv6) and runs it on its own
// device, flannel-v6.<VNI> (pkg/backend/vxlan: v6devAttrs).
const (
	flannelPublicIP      = "flannel.alpha.coreos.com/public-ip"
	flannelPublicIPv6    = "flannel.alpha.coreos.com/public-ipv6"
	flannelBackendData   = "flannel.alpha.coreos.com/backend-data"
	flannelBackendV6Data = "flannel.alpha.coreos.com/backend-v6-data"
	flannelBackendType   = "flannel.alpha.coreos.com/backend-type"
)

// remoteVTEP is what one other node's annotations say its tunnel endpoint
// of one IP family is: on which of this node's devices (flannel.<VNI> for
// IPv4, flannel-v6.<VNI> for IPv6) flannel points it, its public address,
// VTEP MAC and Pod subnet of that family.
type remoteVTEP struct {
	node     string
	device   string
	publicIP string
	mac      string
	podCIDR  string
}

// flannelVTEPs are the other nodes' flannel vxlan endpoints, per IP family,
// from the Nodes the API side read (not necessarily every node of the
// cluster).
func (nj *nodeJudge) flannelVTEPs(self string) []remoteVTEP {
	var out []remoteVTEP
	for name, n := range nj.in.Nodes {
		if n == nil || name == self || n.Annotations[flannelBackendType] != "vxlan" {
			continue
		}
		for _, fam := range []struct {
			data, publicIP, device string
			v6                     bool
		}{
			{flannelBackendData, flannelPublicIP, "flannel.%d", false},
			{flannelBackendV6Data, flannelPublicIPv6, "flannel-v6.%d", true},
		} {
			var bd struct {
				VNI     int
				VtepMAC string
			}
			if err := json.Unmarshal([]byte(n.Annotations[fam.data]), &bd); err != nil || bd.VtepMAC == "" || n.Annotations[fam.publicIP] == "" {
				continue
			}
			out = append(out, remoteVTEP{node: name, device: fmt.Sprintf(fam.device, bd.VNI), publicIP: n.Annotations[fam.publicIP],
				mac: strings.ToLower(bd.VtepMAC), podCIDR: podCIDROf(n, fam.v6)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].node != out[j].node {
			return out[i].node < out[j].node
		}
		return out[i].device < out[j].device
	})
	return out
}

// podCIDROf is node's Pod CIDR of one family ("" when it has none).
func podCIDROf(n *corev1.Node, v6 bool) string {
	cidrs := n.Spec.PodCIDRs
	if len(cidrs) == 0 && n.Spec.PodCIDR != "" {
		cidrs = []string{n.Spec.PodCIDR}
	}
	for _, c := range cidrs {
		if p, err := netip.ParsePrefix(c); err == nil && p.Addr().Is6() == v6 {
			return c
		}
	}
	return ""
}

// judgeOverlays checks each tunnel device: up, an MTU that fits its
// underlay, and, for flannel's vxlan device, the FDB entry (VtepMAC → the
// node's public IP) and the neighbour entry (the node's subnet address →
// VtepMAC) flannel programs for every other node (pkg/backend/vxlan: AddFDB,
// AddARP).
func (nj *nodeJudge) judgeOverlays(node string, overlays []collectorapi.OverlayDevice, routes []collectorapi.RouteLookup) int {
	problems := 0
	vteps := nj.flannelVTEPs(node)
	epNode := nj.endpointIndex().node
	for _, o := range overlays {
		a := report.Args{"device": o.Name, "kind": o.Kind}
		if !o.AdminUp || o.OperState == "down" {
			a["state"] = "admin " + upDown(o.AdminUp) + ", oper " + o.OperState
			nj.EmitNode(report.CodeRTOverlayDown, node, a, nil)
			problems++
			continue
		}
		if over, ok := encapOverhead[o.Kind]; ok && o.UnderlayMTU > 0 {
			if l, err := netip.ParseAddr(o.Local); err == nil && l.Is6() {
				over += 20
			}
			if o.MTU > o.UnderlayMTU-over {
				a["mtu"], a["underlay"], a["underlayMTU"] = strconv.Itoa(o.MTU), o.Underlay, strconv.Itoa(o.UnderlayMTU)
				a["overhead"], a["encapsulated"] = strconv.Itoa(over), strconv.Itoa(o.MTU+over)
				nj.EmitNode(report.CodeRTOverlayMTU, node, a, nil, fieldValue("mtu", a["mtu"]), fieldValue("underlayMTU", a["underlayMTU"]),
					fieldValue("maxMTU", strconv.Itoa(o.UnderlayMTU-over)))
				problems++
			}
		}
		if o.Kind != "vxlan" {
			continue
		}
		problems += nj.judgeEncap(node, o, routes, epNode)
		var noFDB, noNeigh, raw []string
		if !slices.ContainsFunc(vteps, func(v remoteVTEP) bool { return o.Name == v.device }) {
			noFDB, raw = nj.missingNodeFDB(node, o)
		}
		for _, v := range vteps {
			if o.Name != v.device {
				continue
			}
			if !slices.ContainsFunc(o.FDB, func(f collectorapi.FDBEntry) bool { return strings.EqualFold(f.MAC, v.mac) && f.Dst == v.publicIP }) {
				noFDB = append(noFDB, fmt.Sprintf("%s (%s → %s)", v.node, v.mac, v.publicIP))
				raw = append(raw, fmt.Sprintf("missing: bridge fdb %s dev %s dst %s", v.mac, o.Name, v.publicIP))
			}
			if !slices.ContainsFunc(o.Neighbours, func(n collectorapi.NeighbourEntry) bool {
				return strings.EqualFold(n.MAC, v.mac) && (v.podCIDR == "" || subnetAddr(v.podCIDR) == n.IP)
			}) {
				want := subnetAddr(v.podCIDR)
				noNeigh = append(noNeigh, fmt.Sprintf("%s (%s → %s)", v.node, orNone(want), v.mac))
				raw = append(raw, fmt.Sprintf("missing: ip neigh %s lladdr %s dev %s", orNone(want), v.mac, o.Name))
			}
		}
		// The routes to the endpoints that leave through the device name
		// their tunnel gateway: it needs a neighbour entry, and that
		// entry's MAC an FDB entry. This holds without the other nodes'
		// objects (a trace with --node reads only the nodes it inspects).
		gwFDB, gwNeigh, gwRaw := routeGatewayEntries(o, routes, epNode)
		for i, g := range gwFDB {
			if !slices.ContainsFunc(noFDB, func(s string) bool { return strings.HasPrefix(s, strings.SplitN(g, " ", 2)[0]+" ") }) {
				noFDB, raw = append(noFDB, g), append(raw, gwRaw[i])
			}
		}
		for i, g := range gwNeigh {
			if !slices.ContainsFunc(noNeigh, func(s string) bool { return strings.HasPrefix(s, strings.SplitN(g, " ", 2)[0]+" ") }) {
				noNeigh, raw = append(noNeigh, g), append(raw, gwRaw[len(gwFDB)+i])
			}
		}
		if len(noFDB) > 0 || len(noNeigh) > 0 {
			var what []string
			var nodes []string
			if len(noFDB) > 0 {
				what = append(what, "forwarding-database entry")
				nodes = append(nodes, noFDB...)
			}
			if len(noNeigh) > 0 {
				what = append(what, "neighbour entry")
				if len(noFDB) == 0 {
					nodes = append(nodes, noNeigh...)
				}
			}
			a["what"], a["nodes"] = strings.Join(what, " or "), listNames(nodes)
			nj.EmitNode(report.CodeRTOverlayVTEP, node, a, raw, fieldItems("missingFDB", noFDB), fieldItems("missingNeighbours", noNeigh))
			problems++
		}
	}
	return problems
}

// routeGatewayEntries checks, for each route through the overlay device o
// with a gateway (flannel: "10.244.2.0/24 via 10.244.2.0 dev flannel.1
// onlink"; Calico's vxlan.calico alike), that o holds a neighbour entry for
// the gateway and an FDB entry for that entry's MAC. Each missing entry is
// named by the node of the endpoint the route leads to, else by the gateway;
// raw holds the FDB lines, then the neighbour lines.
func routeGatewayEntries(o collectorapi.OverlayDevice, routes []collectorapi.RouteLookup, epNode map[string]string) (noFDB, noNeigh, raw []string) {
	seen := map[string]bool{}
	var fdbRaw, neighRaw []string
	for _, rt := range routes {
		if rt.Device != o.Name || rt.Gateway == "" || rt.Error != "" || seen[rt.Gateway] {
			continue
		}
		seen[rt.Gateway] = true
		who := epNode[rt.Destination]
		if who == "" {
			who = "gateway " + rt.Gateway
		}
		i := slices.IndexFunc(o.Neighbours, func(n collectorapi.NeighbourEntry) bool { return n.IP == rt.Gateway && n.MAC != "" })
		if i < 0 {
			noNeigh = append(noNeigh, fmt.Sprintf("%s (%s → ?, the route to %s)", who, rt.Gateway, rt.Destination))
			neighRaw = append(neighRaw, fmt.Sprintf("missing: ip neigh %s lladdr <VTEP MAC> dev %s (ip route get %s: via %s dev %s)", rt.Gateway, o.Name, rt.Destination, rt.Gateway, o.Name))
			continue
		}
		mac := o.Neighbours[i].MAC
		if !slices.ContainsFunc(o.FDB, func(f collectorapi.FDBEntry) bool { return strings.EqualFold(f.MAC, mac) && f.Dst != "" }) {
			noFDB = append(noFDB, fmt.Sprintf("%s (%s → ?, the MAC of %s)", who, mac, rt.Gateway))
			fdbRaw = append(fdbRaw, fmt.Sprintf("missing: bridge fdb %s dev %s dst <VTEP address> (neighbour %s lladdr %s)", mac, o.Name, rt.Gateway, mac))
		}
	}
	return noFDB, noNeigh, append(fdbRaw, neighRaw...)
}

// judgeEncap judges the collector's own encapsulated datagram to each
// remote tunnel endpoint of the device (collectorapi.EncapProbe): the
// answers are one info line, "port unreachable" for the tunnel port an
// error, silence a warning (a node that sends no ICMP errors is healthy and
// silent too).
// Probes that could not be sent (no neighbour entry for the peer's MAC) are
// left to the FDB and neighbour check below.
func (nj *nodeJudge) judgeEncap(node string, o collectorapi.OverlayDevice, routes []collectorapi.RouteLookup, epNode map[string]string) int {
	names := nj.underlayNodeNames()
	// Without the peer's Node object (a trace with --node), the route to an
	// endpoint through the peer's overlay address names its node.
	byGateway := map[string]string{}
	for _, rt := range routes {
		if n := epNode[rt.Destination]; rt.Device == o.Name && rt.Gateway != "" && n != "" {
			byGateway[rt.Gateway] = n
		}
	}
	peerName := func(p collectorapi.EncapProbe) string {
		if n := names[p.Peer]; n != "" {
			return n
		}
		if n := byGateway[p.PeerOverlayIP]; n != "" {
			return n
		}
		return p.Peer
	}
	var answered, refused, silent, refusedNodes []string
	var raw []string
	sent := 0
	for _, p := range o.Encap {
		what := fmt.Sprintf("udp %s > %s:33434 in %s VNI %d to %s:%d (inner MAC %s)", p.Source, orNone(p.PeerOverlayIP), o.Kind, o.VNI, p.Peer, p.Port, p.PeerMAC)
		label := fmt.Sprintf("%s (%s:%d)", peerName(p), p.Peer, p.Port)
		switch {
		case p.Error != "":
			raw = append(raw, what+": not sent: "+p.Error)
			continue
		case p.Answered:
			answered = append(answered, fmt.Sprintf("%s in %.1f ms", label, float64(p.RTTMicros)/1000))
			raw = append(raw, fmt.Sprintf("%s: port unreachable from %s in %dµs", what, p.PeerOverlayIP, p.RTTMicros))
		case p.PortUnreachable:
			refused = append(refused, label)
			refusedNodes = append(refusedNodes, peerName(p))
			raw = append(raw, fmt.Sprintf("%s: ICMP port unreachable for %s:%d", what, p.Peer, p.Port))
		default:
			if p.Unreachable != "" {
				label += ": " + p.Unreachable
			}
			silent = append(silent, label)
			raw = append(raw, fmt.Sprintf("%s: no answer to %d datagram(s) %s", what, p.Sent, p.Unreachable))
		}
		sent = max(sent, p.Sent)
	}
	a := report.Args{"device": o.Name, "kind": o.Kind, "vni": strconv.Itoa(o.VNI), "port": strconv.Itoa(o.Port)}
	problems := 0
	if len(refused) > 0 {
		a["peers"], a["peerNode"] = listNames(refused), refusedNodes[0]
		nj.EmitNode(report.CodeRTEncapRefused, node, a, raw, fieldItems("refused", refused), fieldItems("answered", answered))
		problems++
	}
	if len(silent) > 0 {
		a["peers"], a["sent"], a["timeout"] = listNames(silent), strconv.Itoa(sent), strconv.Itoa(o.EncapTimeoutMillis)+" ms"
		nj.EmitNode(report.CodeRTEncapSilent, node, a, raw, fieldItems("silent", silent), fieldItems("answered", answered))
		problems++
	}
	if problems == 0 && len(answered) > 0 {
		a["peers"] = listNames(answered)
		nj.EmitNode(report.CodeRTEncapAnswered, node, a, raw, fieldItems("answered", answered))
	}
	return problems
}

// underlayNodeNames maps the node addresses the API side read (flannel's
// public-ip annotation, InternalIPs) to node names.
func (nj *nodeJudge) underlayNodeNames() map[string]string {
	out := map[string]string{}
	for name, n := range nj.in.Nodes {
		if n == nil {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				out[a.Address] = name
			}
		}
		for _, k := range []string{flannelPublicIP, flannelPublicIPv6} {
			if ip := n.Annotations[k]; ip != "" {
				out[ip] = name
			}
		}
	}
	return out
}

// missingNodeFDB covers VXLAN devices that other CNIs program per node
// (Calico's vxlan.calico among them): once the device's FDB points at one
// node's InternalIP it must point at every other node's the API side read.
// A flow-based device (Cilium) or one that learns has no such entries and
// is left alone.
func (nj *nodeJudge) missingNodeFDB(self string, o collectorapi.OverlayDevice) (missing, raw []string) {
	// A device tunnels over one family, its local address's: a node's
	// InternalIP of the other family is never its FDB's destination.
	local, localErr := netip.ParseAddr(o.Local)
	internal := map[string]string{}
	for name, n := range nj.in.Nodes {
		if n == nil || name == self {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); localErr == nil && err == nil && ip.Is6() != local.Is6() {
				continue
			}
			internal[a.Address] = name
		}
	}
	dsts := map[string]bool{}
	perNode := false
	for _, f := range o.FDB {
		dsts[f.Dst] = true
		if _, ok := internal[f.Dst]; ok {
			perNode = true
		}
	}
	if !perNode {
		return nil, nil
	}
	for ip, name := range internal {
		if !dsts[ip] {
			missing = append(missing, fmt.Sprintf("%s (dst %s)", name, ip))
			raw = append(raw, fmt.Sprintf("missing: bridge fdb <VTEP MAC of %s> dev %s dst %s", name, o.Name, ip))
		}
	}
	sort.Strings(missing)
	sort.Strings(raw)
	return missing, raw
}

// subnetAddr is the network address of a CIDR ("10.244.1.0/24" → "10.244.1.0"),
// the address flannel gives the remote node's flannel.1 in its neighbour entry.
func subnetAddr(cidr string) string {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return ""
	}
	return p.Masked().Addr().String()
}

// judgePathMTU: a small don't-fragment probe answered and a full-size one
// lost, with no "fragmentation needed" back, is a blackhole.
func (nj *nodeJudge) judgePathMTU(node string, probes []collectorapi.PathMTUProbe) int {
	var hit, lowered []collectorapi.PathMTUProbe
	for _, p := range probes {
		switch {
		case p.Error != "" || !p.SmallOK || p.LargeOK:
		case p.FragNeededMTU == 0:
			hit = append(hit, p)
		case p.FragNeededMTU < p.RouteMTU:
			lowered = append(lowered, p)
		}
	}
	problems := nj.judgePathMTULowered(node, lowered)
	if len(hit) == 0 {
		return problems
	}
	var targets, raw []string
	for _, p := range hit {
		targets = append(targets, p.Address)
		raw = append(raw, fmt.Sprintf("%s dev %s: %d bytes answered, %d bytes: %s", p.Address, orNone(p.Device), p.SmallSize, p.LargeSize, orNone(p.LargeError)))
	}
	f := hit[0]
	nj.EmitNode(report.CodeRTPMTUBlackhole, node, report.Args{"targets": listNames(targets), "small": strconv.Itoa(f.SmallSize),
		"large": strconv.Itoa(f.LargeSize), "mtu": strconv.Itoa(f.RouteMTU), "device": orNone(f.Device),
		"payload": strconv.Itoa(f.LargeSize - icmpEchoHeaders)}, raw,
		fieldItems("targets", targets), fieldValue("smallSize", strconv.Itoa(f.SmallSize)), fieldValue("largeSize", strconv.Itoa(f.LargeSize)))
	return problems + 1
}

// judgePathMTULowered: the large probe came back as "fragmentation needed"
// with an MTU below the route's. Within one Pod network every hop should
// carry the route's MTU, so a lower one is a mismatch; it is a warning, as
// this node's own packets adapt and only the way back may drop silently.
func (nj *nodeJudge) judgePathMTULowered(node string, probes []collectorapi.PathMTUProbe) int {
	if len(probes) == 0 {
		return 0
	}
	var targets, raw []string
	for _, p := range probes {
		targets = append(targets, p.Address)
		raw = append(raw, fmt.Sprintf("%s dev %s: %d bytes answered, %d bytes: fragmentation needed, path MTU %d (%s)", p.Address, orNone(p.Device), p.SmallSize, p.LargeSize, p.FragNeededMTU, orNone(p.LargeError)))
	}
	f := probes[0]
	nj.EmitNode(report.CodeRTPathMTULowered, node, report.Args{"targets": listNames(targets), "large": strconv.Itoa(f.LargeSize),
		"mtu": strconv.Itoa(f.RouteMTU), "device": orNone(f.Device), "pmtu": strconv.Itoa(f.FragNeededMTU)}, raw,
		fieldItems("targets", targets), fieldValue("routeMTU", strconv.Itoa(f.RouteMTU)), fieldValue("pathMTU", strconv.Itoa(f.FragNeededMTU)))
	return 1
}

// icmpEchoHeaders is the IPv4 and ICMP header bytes of an echo request:
// ping -s takes the payload, the probe sizes are whole IP packets.
const icmpEchoHeaders = 28

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func boolOrUnknown(b *bool) string {
	if b == nil {
		return "unknown"
	}
	return strconv.FormatBool(*b)
}

func (nj *nodeJudge) judgeRouteAndProbes(node string, obs *collectorapi.Observation) {
	eps := nj.endpointIndex()
	routeFailed := map[string]bool{}
	if !nj.skipped(report.LayerRoute) {
		routeFailed = nj.judgeRoutes(node, obs, eps.node)
	}
	nj.judgeProbes(node, obs, eps.ready, routeFailed, eps.pod)
}

// judgeForwarding reports a family whose forwarding is off on the node:
// IPv4 always (net.ipv4.ip_forward), IPv6 (net.ipv6.conf.all.forwarding)
// when the Service has an IPv6 ClusterIP, whose traffic to Pods crosses
// the node's IPv6 forwarding path (a dual-stack or IPv6-only cluster). It
// returns the number of findings.
func (nj *nodeJudge) judgeForwarding(node string, r *collectorapi.RouteObservation, epNode map[string]string) int {
	problems := 0
	for _, f := range []struct {
		family        corev1.IPFamily
		value, sysctl string
	}{
		{corev1.IPv4Protocol, r.IPv4Forward, "net.ipv4.ip_forward"},
		{corev1.IPv6Protocol, r.IPv6Forward, "net.ipv6.conf.all.forwarding"},
	} {
		if f.value != "0" || (f.family == corev1.IPv6Protocol && (nj.in.Service == nil || !slices.Contains(expect.ServiceFamilies(nj.in.Service), f.family))) {
			continue
		}
		var local []string
		for ip, n := range epNode {
			if n == node && programmed.AddressFamily(ip) == f.family {
				local = append(local, ip)
			}
		}
		sort.Strings(local)
		pods := ""
		if len(local) > 0 {
			pods = "; endpoints on this node (" + strings.Join(local, ", ") + ") are unreachable from other nodes and from outside"
		}
		nj.EmitNode(report.CodeRTForwardOff, node, report.Args{"sysctl": f.sysctl, "forward": f.value, "pods": pods, report.ArgFamily: string(f.family)},
			[]string{f.sysctl + " = " + f.value})
		problems++
	}
	return problems
}

func (nj *nodeJudge) judgeRoutes(node string, obs *collectorapi.Observation, epNode map[string]string) map[string]bool {
	failed := map[string]bool{}
	s := obs.Sections.Route
	if s == nil || s.Data == nil {
		msg := "section not collected"
		if s != nil && s.Error != "" {
			msg = s.Error
		}
		nj.EmitNode(report.CodeRTUnreadable, node, report.Args{"error": msg}, nil)
		return failed
	}
	r := s.Data
	problems := nj.judgeForwarding(node, r, epNode)
	var noRoute, raw []string
	down := map[string][]string{}
	devices := map[string]bool{}
	strict, strictDev := "", ""
	for _, rt := range r.Routes {
		line := fmt.Sprintf("%s dev %s via %s type %s", rt.Destination, orNone(rt.Device), orNone(rt.Gateway), orNone(rt.Type))
		switch {
		case rt.Error != "":
			noRoute = append(noRoute, rt.Destination)
			raw = append(raw, rt.Destination+": "+rt.Error)
			failed[rt.Destination] = true
		case rt.Type != "" && rt.Type != "unicast" && rt.Type != "local":
			noRoute = append(noRoute, rt.Destination)
			raw = append(raw, line)
			failed[rt.Destination] = true
		case rt.Link != nil && (!rt.Link.AdminUp || rt.Link.OperState == "down"):
			key := rt.Link.Name + " (admin " + upDown(rt.Link.AdminUp) + ", oper " + rt.Link.OperState + ")"
			down[key] = append(down[key], rt.Destination)
			failed[rt.Destination] = true
		default:
			if rt.Device != "" {
				devices[rt.Device] = true
			}
			if strict == "" && effectiveRPFilter(r.RPFilterAll, rt.RPFilterDevice) == 1 {
				strict, strictDev = rt.Device, rt.RPFilterDevice
			}
		}
	}
	if len(noRoute) > 0 {
		nj.EmitNode(report.CodeRTNoRoute, node, report.Args{"ips": listNames(noRoute), "detail": strings.Join(capLines(raw, maxListed), "; ")}, raw)
		problems++
	}
	for link, ips := range down {
		nj.EmitNode(report.CodeRTDeviceDown, node, report.Args{"ips": listNames(ips), "device": strings.SplitN(link, " ", 2)[0], "state": link}, nil)
		problems++
	}
	if strict != "" {
		// Strict rp_filter is only a problem with asymmetric paths; keep it
		// visible as a warning so it is on the list when Pods time out.
		nj.EmitNode(report.CodeRTRPFilter, node, report.Args{"device": strict, "all": r.RPFilterAll, "deviceValue": strictDev}, nil)
		problems++
	}
	problems += nj.judgeRouteFailModes(node, obs, r)
	if problems == 0 {
		nj.EmitNode(report.CodeRTHealthy, node, report.Args{"count": strconv.Itoa(len(r.Routes)), "devices": strings.Join(sortedKeys(devices), ", "), "forward": r.IPv4Forward}, nil)
	}
	return failed
}

// effectiveRPFilter is the reverse-path filter mode the kernel applies on a
// device: IN_DEV_RPFILTER is IN_DEV_MAXCONF(idev, RP_FILTER), the larger of
// net.ipv4.conf.all.rp_filter and net.ipv4.conf.<dev>.rp_filter, which
// __fib_validate_source (net/ipv4/fib_frontend.c) checks; 1 is strict, 2
// loose, 0 off. It is -1 when either value is unknown, since the other
// alone cannot rule out loose mode.
func effectiveRPFilter(all, dev string) int {
	a, errA := strconv.Atoi(strings.TrimSpace(all))
	d, errD := strconv.Atoi(strings.TrimSpace(dev))
	if errA != nil || errD != nil {
		return -1
	}
	return max(a, d)
}
