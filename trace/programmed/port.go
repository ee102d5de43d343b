package programmed

import (
	"net"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Port is one Service port of one IP family as one datapath programmed it,
// in the same shape whichever datapath it came from, so that one comparison
// with the API serves iptables (either backend), nftables, IPVS and the eBPF
// maps alike.
type Port struct {
	Datapath string // "iptables (nf_tables, IPv4)", "nftables (ip)", …
	Family   corev1.IPFamily
	PortName string
	Protocol string
	Port     int32
	NodePort int32

	// Captured: traffic to the ClusterIP:port is sent to an endpoint chain/map.
	Captured bool
	// InternalLocal: the ClusterIP goes to the Local (SVL / local-) chain.
	InternalLocal bool
	// Rejected / DroppedNoLocal: the no-endpoint verdicts for the ClusterIP.
	Rejected       bool
	DroppedNoLocal bool
	// RejectShadowed: iptables mode's "has no endpoints" REJECT sits beside
	// a ClusterIP entry that DNATs to endpoints. kube-proxy hooks filter
	// KUBE-SERVICES from FORWARD and OUTPUT only (iptablesJumpChains in
	// pkg/proxy/iptables/proxier.go), which see a packet after nat's DNAT
	// has rewritten its destination, so that REJECT matches nothing: it is
	// a leftover, not a verdict. kube-proxy never writes both in one sync.
	RejectShadowed bool
	// FilterRestorer names a program on the node that rewrites the whole
	// filter table from its own earlier save (the usual author of such a
	// leftover), "" when none is known.
	FilterRestorer string
	// Endpoints are the DNAT destinations the internal chain chooses from.
	Endpoints []Endpoint
	// Unmatched is the share of new connections no rule selects.
	Unmatched float64
	// AffinitySeconds > 0 when session-affinity rules exist (-1: they
	// exist but carry no readable timeout).
	AffinitySeconds int
	// AffinityTimeouts are the distinct timeouts the affinity rules carry,
	// sorted: more than one means the rules disagree among themselves.
	AffinityTimeouts []int
	NodePortFound    bool
	Evidence         []string
	// Frontends are the entries external traffic enters by: one per
	// address where the datapath keeps one per address (IPVS virtual
	// servers, the eBPF agents' map entries), the one external chain
	// (FrontendExternalChain) where kube-proxy's iptables and nftables
	// modes send every external address through it.
	Frontends []Frontend
	// AddressEntries are kube-proxy's iptables and nftables entries that
	// send one externalIP or load-balancer IP of the port on (Frontend.Table
	// set; Kind empty: nftables cannot tell the two apart, the API can),
	// the ones found and, on nftables, the lookups that found none.
	// AddressEntriesRead says the reader saw every entry of the port, so an
	// address with none here has none on the node; otherwise such an
	// address is undetermined (AddressFrontends).
	AddressEntries     []Frontend
	AddressEntriesRead bool
	// IPVS holds the IPVS-only details (FromIPVS); nil for other datapaths.
	IPVS *IPVSDetail
	// EBPF holds the eBPF agents' details (FromCilium, FromCalico); nil for
	// kube-proxy's datapaths.
	EBPF *EBPFDetail
}

// Endpoint is one DNAT destination of a Port and its share of new
// connections.
type Endpoint struct {
	Endpoint string // ip:port the traffic is DNATed to
	Share    float64
}

// AddAffinityTimeout records one affinity rule's timeout; 0 is no affinity.
func (pp *Port) AddAffinityTimeout(seconds int) {
	if seconds <= 0 {
		return
	}
	if seconds > pp.AffinitySeconds {
		pp.AffinitySeconds = seconds
	}
	if i := sort.SearchInts(pp.AffinityTimeouts, seconds); i == len(pp.AffinityTimeouts) || pp.AffinityTimeouts[i] != seconds {
		pp.AffinityTimeouts = slices.Insert(pp.AffinityTimeouts, i, seconds)
	}
}

// EvidenceOf is pp's evidence, none when the port was not programmed.
func EvidenceOf(pp *Port) []string {
	if pp == nil {
		return nil
	}
	return pp.Evidence
}

// Find is the programmed port for a Service port name, protocol, port and
// family; a port of no known family matches either.
func Find(ports []Port, name, protocol string, port int32, family corev1.IPFamily) *Port {
	for i := range ports {
		p := &ports[i]
		if p.PortName == name && strings.EqualFold(p.Protocol, protocol) && p.Port == port &&
			(p.Family == family || p.Family == "") {
			return p
		}
	}
	return nil
}

// CaptureScore is how much of the Service ports capture: a backend whose
// rules capture more is the live one.
func CaptureScore(ports []Port) int {
	n := 0
	for _, p := range ports {
		if p.Captured {
			n += 1 + len(p.Endpoints)
		}
	}
	return n
}

// PortNameOf extracts the port name from a ServicePortName "ns/name:port".
func PortNameOf(spn string) string {
	if i := strings.LastIndex(spn, ":"); i >= 0 && !strings.Contains(spn[i:], "/") {
		return spn[i+1:]
	}
	return ""
}

// FamilyOf is the IP family an observation's family word names ("IPv4",
// "ip6", …), "" when it names none.
func FamilyOf(s string) corev1.IPFamily {
	switch strings.ToLower(s) {
	case "ipv6", "ip6":
		return corev1.IPv6Protocol
	case "ipv4", "ip":
		return corev1.IPv4Protocol
	}
	return ""
}

// Families are the IP families a datapath may be programmed in, in the
// order they are judged.
var Families = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}

// AddressFamily is the family of an address string, IPv4 when it does not
// parse.
func AddressFamily(addr string) corev1.IPFamily {
	if ip := net.ParseIP(addr); ip != nil && ip.To4() == nil {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}
