package v1alpha1

// DNSFlows counts the node's UDP conntrack entries to the cluster DNS
// (original destination a ClusterDNS address, port 53). Entries without a
// reply are the trace of lost queries, the insert race among them.
type DNSFlows struct {
	Destinations []string `json:"destinations"` // "10.96.0.10:53/UDP"
	Total        int      `json:"total"`
	// Unreplied have no SEEN_REPLY: no answer came back (yet).
	Unreplied int `json:"unreplied"`
	// Backends counts flows per reply source (the DNS endpoint they were NATed to).
	Backends map[string]int `json:"backends,omitempty"`
}

// Bridge is one Linux bridge and the links enslaved to it.
type Bridge struct {
	Name      string `json:"name"`
	MTU       int    `json:"mtu"`
	AdminUp   bool   `json:"adminUp"`
	Ports     int    `json:"ports"`
	VethPorts int    `json:"vethPorts"`
	// PortNames lists the first ports (capped); Ports stays exact.
	PortNames []string `json:"portNames,omitempty"`
}

// OverlayDevice is an encapsulating link and what the kernel knows about
// the remote tunnel endpoints.
type OverlayDevice struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"` // vxlan, geneve, ipip
	AdminUp   bool   `json:"adminUp"`
	OperState string `json:"operState"`
	MTU       int    `json:"mtu"`
	// VNI and Port are the VXLAN/Geneve network identifier and UDP port.
	VNI  int `json:"vni,omitempty"`
	Port int `json:"port,omitempty"`
	// Local is the tunnel's source address; Underlay the device it is bound
	// to, or the device of the route to Local when unbound.
	Local       string `json:"local,omitempty"`
	Underlay    string `json:"underlay,omitempty"`
	UnderlayMTU int    `json:"underlayMTU,omitempty"`
	// MAC is the device's own address (flannel's VtepMAC).
	MAC        string           `json:"mac,omitempty"`
	FDB        []FDBEntry       `json:"fdb,omitempty"`
	Neighbours []NeighbourEntry `json:"neighbours,omitempty"`
	// Addresses are the device's own IP addresses (flannel: the first
	// address of the node's subnet, /32).
	Addresses []string `json:"addresses,omitempty"`
	// Encap is one echo through the tunnel to each remote endpoint the
	// device's FDB holds (VXLAN only); EncapSkipped says why there is none.
	Encap        []EncapProbe `json:"encap,omitempty"`
	EncapSkipped string       `json:"encapSkipped,omitempty"`
	// EncapPeers counts the remote endpoints in the FDB; more than Encap
	// holds when the probes were capped.
	EncapPeers int `json:"encapPeers,omitempty"`
	// EncapTimeoutMillis is how long the probes waited for answers.
	EncapTimeoutMillis int `json:"encapTimeoutMillis,omitempty"`
}

// EncapProbe is a UDP datagram to a closed port (33434) of a remote tunnel
// endpoint's own overlay address, encapsulated by the collector itself
// (VXLAN header, inner Ethernet frame to the endpoint's MAC, inner IPv4 from
// this device's address) and sent as a UDP datagram to Peer:Port. It does
// not pass this node's FDB or neighbour entries; the remote kernel
// decapsulates it and answers "port unreachable" through its own tunnel,
// which this node's device decapsulates. Answered proves UDP Port reaches
// Peer's tunnel socket, the remote device carries the VNI, and the way back
// (the remote's entries for this node, and Port inbound here) works.
// PortUnreachable is the remote's ICMP "port unreachable" for Port itself:
// nothing listens on it there. Silence is a tunnel broken in either
// direction (UDP Port filtered, a wrong VNI, the remote's entries for this
// node missing) or a remote that sends no ICMP errors.
type EncapProbe struct {
	Peer          string `json:"peer"` // the FDB entry's underlay address
	Port          int    `json:"port"`
	PeerMAC       string `json:"peerMAC"`
	PeerOverlayIP string `json:"peerOverlayIP,omitempty"` // the neighbour entry with PeerMAC
	Source        string `json:"source,omitempty"`        // this device's address, the inner source
	Answered      bool   `json:"answered"`
	RTTMicros     int64  `json:"rttMicros,omitempty"`
	Sent          int    `json:"sent"`
	// PortUnreachable and Unreachable are ICMP errors the connected UDP
	// socket received (ECONNREFUSED; EHOSTUNREACH and the like).
	PortUnreachable bool   `json:"portUnreachable,omitempty"`
	Unreachable     string `json:"unreachable,omitempty"`
	Error           string `json:"error,omitempty"`
}

// FDBEntry is one forwarding-database entry of an overlay device: frames
// to MAC are encapsulated to Dst.
type FDBEntry struct {
	MAC   string `json:"mac"`
	Dst   string `json:"dst,omitempty"`
	State string `json:"state,omitempty"` // permanent, reachable, stale, …
}

// NeighbourEntry is one neighbour (ARP/NDP) entry on a device.
type NeighbourEntry struct {
	IP    string `json:"ip"`
	MAC   string `json:"mac,omitempty"`
	State string `json:"state,omitempty"`
}

// NeighbourTable is one family's neighbour table size against
// net.ipv4/ipv6.neigh.default.gc_thresh1/2/3 (0 when unread).
type NeighbourTable struct {
	Family    string `json:"family"` // IPv4, IPv6
	Entries   int    `json:"entries"`
	GCThresh1 int    `json:"gcThresh1"`
	GCThresh2 int    `json:"gcThresh2"`
	GCThresh3 int    `json:"gcThresh3"`
	Error     string `json:"error,omitempty"`
}

// PathMTUProbe is two ICMP echo requests with don't-fragment set to one
// endpoint IP: one small, one the size of the route's MTU. A small answer
// without a large one, and no "fragmentation needed" back, is a PMTU blackhole.
type PathMTUProbe struct {
	Address   string `json:"address"`
	Device    string `json:"device,omitempty"`
	RouteMTU  int    `json:"routeMTU"`
	SmallSize int    `json:"smallSize"`
	LargeSize int    `json:"largeSize"`
	SmallOK   bool   `json:"smallOK"`
	LargeOK   bool   `json:"largeOK"`
	// LargeError is the large probe's error: a timeout, or "message too
	// long" with the MTU the kernel learnt (FragNeededMTU) when an ICMP
	// "fragmentation needed" came back.
	LargeError    string `json:"largeError,omitempty"`
	FragNeededMTU int    `json:"fragNeededMTU,omitempty"`
	Error         string `json:"error,omitempty"`
}
