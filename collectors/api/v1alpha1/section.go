package v1alpha1

// Section names, as a request's "sections" and the observation's keys spell them.
const (
	SectionProxy     = "proxy"
	SectionIPTables  = "iptables"
	SectionNFTables  = "nftables"
	SectionIPVS      = "ipvs"
	SectionEBPF      = "ebpf"
	SectionConntrack = "conntrack"
	SectionRoute     = "route"
	SectionDNS       = "dns"
	SectionProbe     = "probe"
	SectionSockets   = "sockets"
)

// AllSections lists every section in the order the collector reports them.
var AllSections = []string{
	SectionProxy, SectionIPTables, SectionNFTables, SectionIPVS, SectionEBPF,
	SectionConntrack, SectionRoute, SectionDNS, SectionProbe, SectionSockets,
}

// SectionStatus says how far a section got. It is not a verdict on the
// Service: "ok" means the reader ran, not that what it saw is healthy.
type SectionStatus string

const (
	// StatusOK: the reader ran to the end; Data holds what it saw.
	StatusOK SectionStatus = "ok"
	// StatusError: the reader failed; Error says why, Data may hold a partial result.
	StatusError SectionStatus = "error"
	// StatusUnavailable: the facility does not exist on this node (e.g. a
	// kernel without IPVS); Error holds the reason. Not a failure of the collector.
	StatusUnavailable SectionStatus = "unavailable"
	// StatusNotImplemented: this collector build has no reader for the section.
	StatusNotImplemented SectionStatus = "not-implemented"
)

// Section is one reader's result. Each section carries its own error and
// timing so that one failing reader never hides what the others saw.
type Section[T any] struct {
	Status         SectionStatus `json:"status"`
	Error          string        `json:"error,omitempty"`
	DurationMillis float64       `json:"durationMillis"`
	Data           *T            `json:"data,omitempty"`
}
