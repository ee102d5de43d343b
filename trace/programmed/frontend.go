package programmed

// Frontend is one entry external traffic enters a Service port by on a
// node, as the node's datapath holds it: the NodePort on one node address
// (or on the agent's stand-in for all of them), an externalIP, a
// load-balancer IP. kube-proxy's IPVS proxier writes one virtual server per
// entry (syncService for each address, syncEndpoint for its real servers);
// Cilium one services-map entry per frontend and scope (pkg/loadbalancer's
// Frontend, written by its BPF reconciler); Felix one NAT frontend entry
// per address and source range (felix/bpf/nat's FrontendKey). kube-proxy's
// iptables and nftables proxiers send every external address of a port
// through one chain (KUBE-EXT-…, external-…), which is then the port's one
// external entry (FrontendExternalChain). Every backend writes the same
// record, and one comparer in trace reads it.
type Frontend struct {
	// Kind is FrontendNodePort, FrontendExternalIP, FrontendLoadBalancerIP
	// or FrontendExternalChain.
	Kind    string
	Address string
	Port    int32
	// Name is how findings name the entry ("nodePort 10.0.0.11:30080",
	// "externalIP 192.0.2.9:80/TCP external scope", …).
	Name string
	// Found says the entry exists; the reader looked it up either way.
	Found bool
	// PolicyLocal is the externalTrafficPolicy the entry itself carries
	// (true: Local): Cilium's SVC_FLAG_EXT_LOCAL_SCOPE, Felix's
	// NATFlgExternalLocal, the endpoint chain an external chain's last
	// rule goes to (KUBE-SVL-… or local-…: Local). nil where the datapath
	// keeps none per entry (an IPVS virtual server holds the endpoints the
	// policy leaves, not the policy), and for an external chain whose last
	// rule goes to neither endpoint chain.
	PolicyLocal *bool
	// Chain is the chain an external chain entry is (KUBE-EXT-…,
	// external-…), "" for the other kinds.
	Chain string
	// Table is where kube-proxy's iptables or nftables mode keeps an
	// externalIP or load-balancer IP entry ("nat KUBE-SERVICES", "map
	// service-ips"); "" for the other datapaths' entries. Such an entry
	// only sends its address to the external chain (or the firewall chain
	// before it), whose own Frontend carries the endpoints and the policy.
	Table string
	// SameAsClusterIP: the entry selects through the ClusterIP's own
	// endpoint chain (an external chain under Cluster policy whose
	// ClusterIP goes to KUBE-SVC-… or service-… too), so its endpoints are
	// the ones the ClusterIP comparison judges.
	SameAsClusterIP bool
	// Endpoints are the endpoints the entry selects for new connections.
	Endpoints []Endpoint
	// Broken are the selectable slots of the entry that lead to no
	// backend, each said in the datapath's own terms.
	Broken []string
	// Internal is the entry's internal scope, for traffic from the node
	// itself, when the datapath keeps one apart (Cilium adds it when the
	// two traffic policies differ); nil when there is none.
	Internal *Frontend
	// TwoScopes: the entry says it has an internal scope (Cilium's
	// SVC_FLAG_TWO_SCOPES), whether or not Internal was found.
	TwoScopes bool
	// Blackhole: the entry drops every packet (Felix's count 0xffffffff for
	// a Service without endpoints).
	Blackhole bool
	Evidence  []string
}

// The kinds of external entries.
const (
	FrontendNodePort       = "nodePort"
	FrontendExternalIP     = "externalIP"
	FrontendLoadBalancerIP = "loadBalancerIP"
	FrontendExternalChain  = "externalChain"
)

// EBPFDetail is what an eBPF agent's maps say of one Service port beyond
// the shared Port and its Frontends: how to name the agent and its map in
// findings, the ClusterIP entry's own slot problems, and the backends the
// agent keeps out of selection on purpose. The judge reports them; the
// translation only reads them.
type EBPFDetail struct {
	// Agent names the datapath in findings: "Cilium", "Calico".
	Agent string
	// Map is the map an entry that is not found is missing from.
	Map string
	// ClusterIP is the ClusterIP entry as a Frontend: its name, the slots
	// it cannot resolve and their evidence.
	ClusterIP Frontend
	// Inactive are the ClusterIP entry's backends it keeps but does not
	// select for new connections, "ip:port state".
	Inactive []string
	// MaglevProblem says why the ClusterIP entry's Maglev table cannot be
	// used, "" when it can or the entry does not use Maglev; the shares are
	// then those of the slots.
	MaglevProblem string
	// Quarantined are the endpoints ("ip:port") the agent's health checker
	// took out of the ClusterIP entry's selection; Maintenance those put in
	// maintenance through its service API.
	Quarantined, Maintenance map[string]bool
	// MaglevTableSize is the size of the ClusterIP entry's Maglev lookup
	// table, 0 when the agent keeps none for it; MaglevEntries are the
	// table entries each endpoint ("ip:port") holds, its share of new
	// flows being entries/size. The share table shows these weights
	// beside the shares the judge compared.
	MaglevTableSize int
	MaglevEntries   map[string]int
}
