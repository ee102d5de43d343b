package v1alpha1

// The nftables section: what the nftables reader (collectors/nftables) saw
// of one Service in kube-proxy's nftables mode, in table ip and ip6
// kube-proxy.

// NFTablesObservation.Source values.
const (
	NFTablesSourceNetlink = "netlink"
	NFTablesSourceCLI     = "nft-cli"
)

// NFTablesObservation is what the nftables reader saw for one Service.
type NFTablesObservation struct {
	// Source is NFTablesSourceNetlink, or NFTablesSourceCLI when netlink
	// failed (NetlinkError says why) or the reader was told to use the CLI.
	Source       string                     `json:"source"`
	NetlinkError string                     `json:"netlinkError,omitempty"`
	Tables       []NFTablesTableObservation `json:"tables"`
}

// NFTablesTableObservation is one `kube-proxy` table.
type NFTablesTableObservation struct {
	Family  string `json:"family"` // ip | ip6
	Name    string `json:"name"`
	Present bool   `json:"present"`
	// ClusterIPs tells, for each of the Service's ClusterIPs of this family,
	// whether it is in the cluster-ips set.
	ClusterIPs []NFTablesMembership      `json:"clusterIPs,omitempty"`
	Ports      []NFTablesPortObservation `json:"ports,omitempty"`
	// Masquerading is kube-proxy's "masquerading" chain (masquerade what its
	// "mark set mark or" rules marked, and the hairpin connections) and
	// NATPostrouting its "nat-postrouting" base chain, which jumps there
	// (pkg/proxy/nftables/proxier.go v1.37.2); nil when not collected
	// (observations older than these fields).
	Masquerading   *NFTablesChain `json:"masquerading,omitempty"`
	NATPostrouting *NFTablesChain `json:"natPostrouting,omitempty"`
	Error          string         `json:"error,omitempty"`
}

// NFTablesMembership is one key looked up in a set.
type NFTablesMembership struct {
	Set    string `json:"set"`
	Key    string `json:"key"`
	Member bool   `json:"member"`
}

// NFTablesPortObservation is one Service port in one table.
type NFTablesPortObservation struct {
	ServicePortName string             `json:"servicePortName"`
	Protocol        string             `json:"protocol"`
	Port            int32              `json:"port"`
	NodePort        int32              `json:"nodePort,omitempty"`
	ChainNames      NFTablesChainNames `json:"chainNames"`

	// Map elements looked up for this port's keys (ClusterIPs, external and
	// load-balancer IPs; NodePort). Found=false entries are lookups that
	// matched nothing.
	ServiceIPs          []NFTablesElement `json:"serviceIPs,omitempty"`
	ServiceNodePorts    []NFTablesElement `json:"serviceNodePorts,omitempty"`
	NoEndpointServices  []NFTablesElement `json:"noEndpointServices,omitempty"`
	NoEndpointNodePorts []NFTablesElement `json:"noEndpointNodePorts,omitempty"`
	FirewallIPs         []NFTablesElement `json:"firewallIPs,omitempty"`

	Service  *NFTablesChain `json:"service"`
	Local    *NFTablesChain `json:"local"`
	External *NFTablesChain `json:"external"`
	Firewall *NFTablesChain `json:"firewall"`
	// Other are chains the map elements point to that this port's hash does
	// not name.
	Other []*NFTablesChain `json:"other,omitempty"`
	// Endpoints are the endpoint-… chains (session affinity only), reached
	// from the service/local chains or predicted from the query's endpoints.
	Endpoints []*NFTablesChain `json:"endpoints,omitempty"`
	// Affinity are the affinity-… sets of those endpoints.
	Affinity []NFTablesAffinitySet `json:"affinity,omitempty"`
}

// NFTablesElement is one map element (or a lookup that found none).
type NFTablesElement struct {
	Map   string `json:"map"`
	Key   string `json:"key"` // "10.96.0.50 . tcp . 80"
	Found bool   `json:"found"`
	// Verdict is "goto <chain>", "jump <chain>", "drop", "accept", …
	Verdict string `json:"verdict,omitempty"`
	Target  string `json:"target,omitempty"` // the chain of goto/jump
	Comment string `json:"comment,omitempty"`
}

// NFTablesChain is one chain of the kube-proxy table.
type NFTablesChain struct {
	Name    string         `json:"name"`
	Exists  bool           `json:"exists"`
	FoundBy string         `json:"foundBy,omitempty"` // hash | verdict | jump
	Rules   []NFTablesRule `json:"rules,omitempty"`
}

// NFTablesRule is one rule with its decoded meaning next to its text.
type NFTablesRule struct {
	Handle uint64 `json:"handle,omitempty"`
	// Text is an nft-like rendering (netlink) or the expression JSON
	// (nft-cli); it is evidence, not an exact `nft list` line.
	Text    string `json:"text"`
	Comment string `json:"comment,omitempty"`
	// Verdict / Target: the rule's final verdict and its chain.
	Verdict string `json:"verdict,omitempty"`
	Target  string `json:"target,omitempty"`
	// DNAT is a fixed "ip:port" destination.
	DNAT string `json:"dnat,omitempty"`
	// Numgen is a `numgen random mod N` map (DNAT map or verdict map).
	Numgen *NFTablesNumgenMap `json:"numgen,omitempty"`
	// AffinityMatch is the set matched against the source address
	// ("ip saddr @affinity-…").
	AffinityMatch string `json:"affinityMatch,omitempty"`
	// Update is the set a "update @set { ip saddr }" adds to.
	Update string `json:"update,omitempty"`
	// Mark is a "meta mark set meta mark | X" value.
	Mark string `json:"mark,omitempty"`
	// SourceMatch is an "ip saddr [!=] X" match (pod CIDR short-circuit,
	// firewall source ranges), as text.
	SourceMatch string `json:"sourceMatch,omitempty"`
	// MarkMatch is a "meta mark [& mask] ==|!= value" match.
	MarkMatch *NFTablesMarkMatch `json:"markMatch,omitempty"`
	// Conditions counts the rule's matches (comparisons, ranges, set
	// lookups), MarkMatch included: a rule with none applies to every packet
	// that reaches it.
	Conditions int `json:"conditions,omitempty"`
	// Masquerade is true for a rule with a masquerade statement.
	Masquerade bool `json:"masquerade,omitempty"`
}

// NFTablesMarkMatch is "meta mark & Mask <Op> Value" (Mask 0xffffffff when
// the rule masks nothing).
type NFTablesMarkMatch struct {
	Mask  uint32 `json:"mask"`
	Op    string `json:"op"` // == or !=
	Value uint32 `json:"value"`
}

// NFTablesNumgenMap is kube-proxy's random endpoint choice.
type NFTablesNumgenMap struct {
	Kind    string `json:"kind"` // dnat | vmap
	Modulus uint32 `json:"modulus"`
	Set     string `json:"set,omitempty"` // anonymous set name (netlink)
	// Entries in index order; Share is 1/Modulus for each present index.
	Entries []NFTablesNumgenEntry `json:"entries"`
	// UnmatchedShare is the share of indexes with no entry (normally 0).
	UnmatchedShare float64 `json:"unmatchedShare,omitempty"`
}

// NFTablesNumgenEntry is one index of a numgen map.
type NFTablesNumgenEntry struct {
	Index   uint32  `json:"index"`
	Address string  `json:"address,omitempty"` // dnat: ip:port
	Verdict string  `json:"verdict,omitempty"` // vmap: goto endpoint-…
	Target  string  `json:"target,omitempty"`
	Share   float64 `json:"share"`
}

// NFTablesAffinitySet is one affinity-… set.
type NFTablesAffinitySet struct {
	Name           string `json:"name"`
	Exists         bool   `json:"exists"`
	TimeoutSeconds int64  `json:"timeoutSeconds,omitempty"`
}

// NFTablesChainNames are the chain names kube-proxy's nftables mode gives
// one Service port (collectors/kubeproxy.NFTServiceChains computes them).
type NFTablesChainNames struct {
	Base     string `json:"base"`     // <h8>-ns/name/proto/port
	Service  string `json:"service"`  // service-<base>
	Local    string `json:"local"`    // local-<base>
	External string `json:"external"` // external-<base>
	Firewall string `json:"firewall"` // firewall-<base>
}
