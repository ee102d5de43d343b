package v1alpha1

// The iptables section: what the iptables reader (collectors/iptables) saw
// of one Service in kube-proxy's iptables mode, in each backend
// (iptables-nft, iptables-legacy) and IP family.

// IPTablesBackendObservation.Backend values.
const (
	IPTablesBackendNFTables = "nf_tables"
	IPTablesBackendLegacy   = "legacy"
)

// IPTablesBackendObservation.Reader values.
const (
	IPTablesReaderNetlink     = "netlink"
	IPTablesReaderNetlinkText = "netlink+text"
	IPTablesReaderKernelBlob  = "kernel-blob"
	IPTablesReaderText        = "text"
)

// IPTablesBackendObservation.EntryProof values.
const (
	// IPTablesEntryProofRules: nat KUBE-SERVICES and KUBE-NODEPORTS were
	// read rule by rule (what an observation without EntryProof means).
	IPTablesEntryProofRules = "rules"
	// IPTablesEntryProofReferences: they were not read; the kernel's
	// reference counts of the Service's own chains accounted for exactly
	// the jumps kube-proxy writes into them (nf_tables only).
	IPTablesEntryProofReferences = "references"
)

// IPTablesObservation is everything the iptables reader saw for one Service.
type IPTablesObservation struct {
	// DefaultMode is the mode of the node's plain `iptables` command
	// ("nf_tables" or "legacy", from `iptables -V`, or from the name of the
	// binary it links to), i.e. what an admin typing iptables sees.
	// DefaultVersion is the version `iptables -V` prints; the kernel readers
	// leave it empty when the binary's name tells the mode (they run no
	// command).
	DefaultMode    string `json:"defaultMode,omitempty"`
	DefaultVersion string `json:"defaultVersion,omitempty"`
	// Backends holds one entry per (backend, family) inspected. Both
	// backends are reported when both hold kube-proxy chains.
	Backends []IPTablesBackendObservation `json:"backends"`
	Errors   []string                     `json:"errors,omitempty"`
}

// IPTablesBackendObservation is one backend × family.
type IPTablesBackendObservation struct {
	Backend string `json:"backend"` // nf_tables | legacy
	Family  string `json:"family"`  // IPv4 | IPv6
	// Method is how the rules were read: "per-chain" (nf_tables, over
	// netlink or with iptables -S), "blob" (legacy, the kernel's table) or
	// "save-stream" (legacy, iptables-legacy-save).
	Method string `json:"method"`
	// Reader is which reader produced the rules: IPTablesReaderNetlink
	// (nf_tables rules dumped per chain over netlink), IPTablesReaderKernelBlob
	// (the legacy table's IPT_SO_GET_ENTRIES blob), IPTablesReaderText
	// (iptables' own listing), or IPTablesReaderNetlinkText when some chains
	// held rules the netlink reader does not render and were listed with
	// iptables (those commands are in Commands).
	Reader string `json:"reader,omitempty"`
	// Commands are the commands that were run, in order of issue.
	Commands []string `json:"commands,omitempty"`
	// EntryProof says how the entry rules were established:
	// IPTablesEntryProofRules (Entry, NodePorts, NodePortsTail hold the
	// rules read) or IPTablesEntryProofReferences (each port's References and
	// EntryReferences hold the counts instead). Empty in observations older
	// than this field: rules.
	EntryProof string `json:"entryProof,omitempty"`
	// EntryProofFallback says why the reference counts were not conclusive,
	// so that KUBE-SERVICES was read after all (e.g. a count that does not
	// match what kube-proxy writes, a chain read with iptables, a ruleset
	// that changed while it was read, a probe of a frontend that failed).
	EntryProofFallback string `json:"entryProofFallback,omitempty"`
	// EntryRereadError says why KUBE-SERVICES could not be read after a
	// frontend's probe failed (the collector's time ran out, a read
	// error): the entry rules stay as the reference counts proved them.
	EntryRereadError string `json:"entryRereadError,omitempty"`
	// Generation is the nf_tables ruleset generation every netlink read saw
	// (NFTA_GEN_ID, the same before and after them).
	Generation uint32 `json:"generation,omitempty"`
	// LegacyTables are the legacy tables that exist (from
	// /proc/net/ip_tables_names); only those were saved.
	LegacyTables []string `json:"legacyTables,omitempty"`

	// KubeProxyChains is true when nat KUBE-SERVICES exists in this backend.
	KubeProxyChains bool `json:"kubeProxyChains"`
	// Canary lists the tables holding KUBE-PROXY-CANARY.
	Canary []string `json:"canary,omitempty"`
	// MarkMasq holds the KUBE-MARK-MASQ rules; MasqMark their mark (e.g.
	// "0x4000/0x4000").
	MarkMasq []IPTablesRule `json:"markMasq,omitempty"`
	MasqMark string         `json:"masqMark,omitempty"`
	// NodePortsTail is the KUBE-SERVICES rule(s) jumping to KUBE-NODEPORTS.
	NodePortsTail []IPTablesRule `json:"nodePortsTail,omitempty"`

	// Postrouting is kube-proxy's masquerade path; nil when it was not
	// collected (observations older than this field).
	Postrouting *IPTablesPostrouting `json:"postrouting,omitempty"`

	// PolicyEnforcer names the NetworkPolicy enforcer whose filter chains
	// exist in this backend (PolicyEnforcerKubeRouter), empty when none;
	// PolicyEnforcerChains are the chains seen.
	PolicyEnforcer       string   `json:"policyEnforcer,omitempty"`
	PolicyEnforcerChains []string `json:"policyEnforcerChains,omitempty"`
	// FilterJumps are the distinct targets (-j and -g, sorted) of the rules
	// of the filter table's INPUT, FORWARD and OUTPUT chains: every policy
	// enforcer that filters with iptables hooks its chains in there (Calico's
	// cali-FORWARD, Antrea's, Weave's, Azure NPM's, kube-router's), so the
	// plugin can name what it sees and tell "nothing there" from "something
	// it does not know". FilterJumpsRead says the three chains were read
	// (false in observations older than these fields).
	FilterJumps     []string `json:"filterJumps,omitempty"`
	FilterJumpsRead bool     `json:"filterJumpsRead,omitempty"`

	Ports []IPTablesPortObservation `json:"ports,omitempty"`
	Error string                    `json:"error,omitempty"`
}

// IPTablesPostrouting is where kube-proxy masquerades what KUBE-MARK-MASQ
// marked: the nat table's built-in POSTROUTING jumps to KUBE-POSTROUTING
// ("kubernetes postrouting rules"), which returns unmarked packets, clears
// the mark (MARK --xor-mark) and masquerades the rest ("kubernetes service
// traffic requiring SNAT", MASQUERADE --random-fully): pkg/proxy/iptables/
// proxier.go v1.37.2.
type IPTablesPostrouting struct {
	// Jumps are the nat POSTROUTING rules that jump to KUBE-POSTROUTING.
	Jumps []IPTablesRule `json:"jumps,omitempty"`
	// Exists is true when nat KUBE-POSTROUTING exists; Rules are all its
	// rules, in order.
	Exists bool           `json:"exists"`
	Rules  []IPTablesRule `json:"rules,omitempty"`
}

// PolicyEnforcerKubeRouter is kube-router's network-policy controller
// (pkg/controllers/netpol): its top-level filter chains are KUBE-ROUTER-INPUT,
// KUBE-ROUTER-FORWARD and KUBE-ROUTER-OUTPUT, jumped to from the built-in ones.
const PolicyEnforcerKubeRouter = "kube-router"

// IPTablesPortObservation is one Service port in one backend × family.
type IPTablesPortObservation struct {
	ServicePortName string `json:"servicePortName"`
	Protocol        string `json:"protocol"`
	Port            int32  `json:"port"`
	NodePort        int32  `json:"nodePort,omitempty"`

	// Entry are the nat KUBE-SERVICES rules for this port (ClusterIP,
	// external IP, load-balancer IP).
	Entry []IPTablesEntryRule `json:"entry,omitempty"`
	// NodePorts are the nat KUBE-NODEPORTS rules for this port.
	NodePorts []IPTablesRule `json:"nodePorts,omitempty"`

	Service  *IPTablesChain `json:"service"`  // KUBE-SVC-…
	Local    *IPTablesChain `json:"local"`    // KUBE-SVL-…
	External *IPTablesChain `json:"external"` // KUBE-EXT-…
	Firewall *IPTablesChain `json:"firewall"` // KUBE-FW-…
	// Other are chains the entry rules jump to that are not named by this
	// port's hash (found by comment).
	Other []*IPTablesChain `json:"other,omitempty"`

	// Endpoints are the KUBE-SEP chains, referenced from the SVC/SVL chains
	// or named by the hash of an endpoint in the query.
	Endpoints []IPTablesEndpointChain `json:"endpoints,omitempty"`

	// References are the kernel's reference counts of this port's chains
	// and EntryReferences the entry rules they establish, when the backend's
	// EntryProof is IPTablesEntryProofReferences (then Entry and, unless
	// KUBE-NODEPORTS had to be read, NodePorts are empty).
	References      []IPTablesChainReferences `json:"references,omitempty"`
	EntryReferences []IPTablesEntryReference  `json:"entryReferences,omitempty"`

	// Filter are the filter-table rules about this port: REJECT "has no
	// endpoints", DROP "has no local endpoints", health check ACCEPT,
	// firewall DROP.
	Filter []IPTablesRule `json:"filter,omitempty"`
}

// IPTablesEntryRule is one KUBE-SERVICES rule with what it captures.
type IPTablesEntryRule struct {
	// Kind: clusterIP, externalIP, loadBalancerIP, or other.
	Kind string `json:"kind"`
	IPTablesRule
}

// IPTablesChainReferences is one chain's reference count as nf_tables keeps
// it: NFTA_CHAIN_USE counts the chain's own rules plus every jump or goto to
// it, so Use - Rules - FromRead is the number of jumps from chains that were
// not read.
type IPTablesChainReferences struct {
	Chain  string `json:"chain"`
	Exists bool   `json:"exists"`
	Use    uint32 `json:"use"`
	// Rules is the number of rules in the chain.
	Rules int `json:"rules"`
	// FromRead counts the jumps to the chain from the chains that were read.
	FromRead int `json:"fromRead"`
	// Unread is Use - Rules - FromRead.
	Unread int `json:"unread"`
}

// IPTablesEntryReference is an entry rule established from reference counts:
// Count jumps of this kind from From to Target. kube-proxy writes each kind
// into a fixed chain (cluster IP: KUBE-SERVICES to KUBE-SVC/SVL; external IP
// and load-balancer IP: KUBE-SERVICES to KUBE-EXT or KUBE-FW; node port:
// KUBE-NODEPORTS to KUBE-EXT), so a count that equals what kube-proxy writes
// names them; the kernel proves the count per target, not the rules' match.
type IPTablesEntryReference struct {
	Kind   string `json:"kind"` // clusterIP, externalIP, loadBalancerIP, nodePort
	From   string `json:"from"`
	Target string `json:"target"`
	Count  int    `json:"count"`
}

// IPTablesChain is one per-Service chain.
type IPTablesChain struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	// FoundBy: "hash" (name computed from the Service), "comment" (reached
	// from an entry rule found by its comment), "jump" (reached from another
	// chain).
	FoundBy string         `json:"foundBy,omitempty"`
	Rules   []IPTablesRule `json:"rules,omitempty"`

	// Masquerade is the "-j KUBE-MARK-MASQ" rule of an SVC/SVL chain.
	Masquerade *IPTablesRule `json:"masquerade,omitempty"`
	// Affinity are the "-m recent --rcheck" rules (session affinity).
	Affinity []IPTablesAffinityRule `json:"affinity,omitempty"`
	// Selection are the rules choosing an endpoint chain, in order, each
	// with its probability turned into the share of new connections.
	Selection []IPTablesEndpointJump `json:"selection,omitempty"`
	// UnmatchedShare is what no selection rule catches (normally 0).
	UnmatchedShare float64 `json:"unmatchedShare,omitempty"`
}

// IPTablesAffinityRule is one session-affinity rcheck rule.
type IPTablesAffinityRule struct {
	Target   string `json:"target"`
	Endpoint string `json:"endpoint,omitempty"` // from the comment "<spn> -> <ep>"
	Name     string `json:"name"`               // recent list name
	Seconds  int    `json:"seconds"`
	Reap     bool   `json:"reap,omitempty"`
	Raw      string `json:"raw"`
}

// IPTablesEndpointJump is one endpoint-selection rule.
type IPTablesEndpointJump struct {
	Target string `json:"target"`
	// Endpoint is from the comment "<spn> -> <ep>"; empty when kube-proxy
	// dropped comments (more than 1000 endpoints).
	Endpoint    string  `json:"endpoint,omitempty"`
	Probability string  `json:"probability,omitempty"` // as printed; empty = no statistic match
	Share       float64 `json:"share"`
	Raw         string  `json:"raw"`
}

// IPTablesEndpointChain is one KUBE-SEP chain.
type IPTablesEndpointChain struct {
	IPTablesChain
	// Endpoint is the endpoint string the chain belongs to, from the query's
	// endpoints (hash match), the SVC comment, or the DNAT target.
	Endpoint string `json:"endpoint,omitempty"`
	// EndpointFrom: "hash", "comment", or "dnat".
	EndpointFrom string `json:"endpointFrom,omitempty"`
	// DNAT is the --to-destination of the DNAT rule.
	DNAT string `json:"dnat,omitempty"`
	// Hairpin is the source of the "-s <epIP> -j KUBE-MARK-MASQ" rule.
	Hairpin string `json:"hairpin,omitempty"`
	// AffinitySet is the recent list the DNAT rule adds clients to.
	AffinitySet string `json:"affinitySet,omitempty"`
	// ReferencedBy lists the SVC/SVL chains that jump here.
	ReferencedBy []string `json:"referencedBy,omitempty"`
}

// IPTablesRule is one iptables-save / `iptables -S` rule line, split into the fields
// a judge needs, next to the raw text it came from. Fields are filled only
// when the rule carries them; Options keeps every option in order so nothing
// the parser does not know about is lost.
type IPTablesRule struct {
	Raw   string `json:"raw"`
	Chain string `json:"chain"`

	Comment     string `json:"comment,omitempty"`
	Source      string `json:"source,omitempty"`
	NotSource   bool   `json:"notSource,omitempty"`
	Destination string `json:"destination,omitempty"`
	NotDest     bool   `json:"notDestination,omitempty"`
	Protocol    string `json:"protocol,omitempty"`
	DPort       string `json:"dport,omitempty"`
	// DstType / SrcType come from -m addrtype (e.g. LOCAL).
	DstType    string `json:"dstType,omitempty"`
	NotDstType bool   `json:"notDstType,omitempty"`
	SrcType    string `json:"srcType,omitempty"`

	// Probability is the --probability text exactly as printed (iptables-save
	// prints 11 decimals of the kernel's stored value) and ProbabilityValue its
	// numeric value; nil when the rule has no statistic match.
	Probability      string   `json:"probability,omitempty"`
	ProbabilityValue *float64 `json:"probabilityValue,omitempty"`

	Recent *IPTablesRecent `json:"recent,omitempty"`

	// Jump is the -j target, Goto the -g target.
	Jump string `json:"jump,omitempty"`
	Goto string `json:"goto,omitempty"`
	// ToDestination is DNAT's --to-destination.
	ToDestination string `json:"toDestination,omitempty"`
	// Mark is MARK's --set-xmark (or --or-mark/--xor-mark as written) value,
	// or the value of a "-m mark --mark" match.
	Mark       string `json:"mark,omitempty"`
	RejectWith string `json:"rejectWith,omitempty"`

	Options []IPTablesOption `json:"options,omitempty"`
}

// IPTablesRecent is an xt_recent match: kube-proxy's session affinity.
type IPTablesRecent struct {
	Name    string `json:"name"`
	Check   bool   `json:"rcheck,omitempty"`
	Set     bool   `json:"set,omitempty"`
	Seconds int    `json:"seconds,omitempty"`
	Reap    bool   `json:"reap,omitempty"`
	Mask    string `json:"mask,omitempty"`
	Source  bool   `json:"rsource,omitempty"`
}

// IPTablesOption is one option of a rule as written: its name with dashes
// ("-m", "--dport"), whether a "!" preceded it, and its arguments.
type IPTablesOption struct {
	Name    string   `json:"name"`
	Negated bool     `json:"negated,omitempty"`
	Args    []string `json:"args,omitempty"`
}

// Target returns the jump or goto target.
func (r *IPTablesRule) Target() string {
	if r.Jump != "" {
		return r.Jump
	}
	return r.Goto
}
