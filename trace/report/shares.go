package report

// ShareTable says, for each Service port and inspected node, which
// endpoints get what share of the node's new connections to the ClusterIP,
// and why the node uses that set. It is in every trace that inspected a
// node, healthy or not. Nil when no node was inspected.
type ShareTable struct {
	Ports []SharePort `json:"ports"`
}

// SharePort is one Service port and IP family.
type SharePort struct {
	// Port is the ServicePortName and number, e.g. "default/web:http (80/TCP)".
	Port  string       `json:"port"`
	Nodes []NodeShares `json:"nodes"`
}

// Share sources.
const (
	// ShareProgrammed: read from the node's datapath.
	ShareProgrammed = "programmed"
	// ShareExpected: kube-proxy's expectation for the node, when its
	// datapath could not be read per endpoint.
	ShareExpected = "expected"
)

// NodeShares is one node's split of new connections.
type NodeShares struct {
	Node string `json:"node"`
	// Datapath is what programmed the split, e.g. "iptables (nf_tables, IPv4)".
	Datapath string `json:"datapath,omitempty"`
	// Source is ShareProgrammed or ShareExpected.
	Source string `json:"source"`
	// Balancer is how the datapath picks: "random (statistic)", "numgen
	// random", "IPVS rr", "Maglev (16381 entries)", …
	Balancer string `json:"balancer,omitempty"`
	// Why says why these endpoints: the traffic policy, topology hints,
	// the terminating fallback, session affinity.
	Why       []string        `json:"why"`
	Endpoints []EndpointShare `json:"endpoints"`
	// Reason says why no share is known (Endpoints empty).
	Reason string `json:"reason,omitempty"`
	// SameAs names an earlier node of the port with the identical split,
	// whose endpoints this row then leaves out. Set only when the port's
	// rows would list more than 20,000 endpoint shares.
	SameAs string `json:"sameAs,omitempty"`
}

// EndpointShare is one endpoint's share of new connections, 0 to 1.
type EndpointShare struct {
	Endpoint string  `json:"endpoint"`
	Share    float64 `json:"share"`
	// Weight is the IPVS real server's weight, or the endpoint's Maglev
	// table entries; nil for datapaths without one.
	Weight *int `json:"weight,omitempty"`
	// Node is the node the endpoint runs on, when the slices say.
	Node string `json:"node,omitempty"`
}
