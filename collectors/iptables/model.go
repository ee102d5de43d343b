// Package iptables reads one Service's kube-proxy iptables state on a node,
// in the cheapest way for each backend: on nf_tables it lists the Service's
// chains one by one (`iptables-nft -t nat -S CHAIN`), on legacy it streams one
// `iptables-legacy-save` per table through a filter that keeps only this
// Service's lines. It reports what it found, with the rule text as evidence;
// it does not judge (collectors observe, trace judges).
package iptables

import "github.com/svctrace/kubectl-svctrace/collectors"

// Backend names.
const (
	BackendNFTables = "nf_tables"
	BackendLegacy   = "legacy"
)

// Query names the Service to read and how to reach the node's rules.
type Query struct {
	Service collectors.ServiceSpec `json:"service"`
	// Endpoints are the Service's endpoints as the API reports them; their
	// IP:port give the KUBE-SEP hashes to look for (chains are also found by
	// following jumps, so endpoints the API no longer lists still show).
	Endpoints []collectors.Endpoint `json:"endpoints,omitempty"`

	// Families to read: "IPv4", "IPv6". Empty means the families of the
	// Service's ClusterIPs (IPv4 when it has none).
	Families []string `json:"families,omitempty"`
	// Backends to consider: BackendNFTables, BackendLegacy. Empty means both.
	Backends []string `json:"backends,omitempty"`

	// NetNS, when set, runs every command in that network namespace
	// (nsenter --net=NetNS). Ignored when Runner is set.
	NetNS string `json:"netns,omitempty"`
	// Runner overrides how commands run (tests replay recorded outputs).
	Runner Runner `json:"-"`
	// LockFile is handed to legacy commands as XTABLES_LOCKFILE (legacy
	// listing needs a writable lock file; the collector Pod's root is
	// read-only). Empty means a file in os.TempDir().
	LockFile string `json:"lockFile,omitempty"`
	// Parallel bounds concurrent per-chain listings on nf_tables (default 4).
	Parallel int `json:"parallel,omitempty"`
}

// Observation is everything the iptables reader saw for one Service.
type Observation struct {
	// DefaultMode is the mode of the node's plain `iptables` command
	// ("nf_tables" or "legacy", from `iptables -V`), i.e. what an admin
	// typing iptables sees.
	DefaultMode    string `json:"defaultMode,omitempty"`
	DefaultVersion string `json:"defaultVersion,omitempty"`
	// Backends holds one entry per (backend, family) inspected. Both
	// backends are reported when both hold kube-proxy chains.
	Backends []BackendObservation `json:"backends"`
	Errors   []string             `json:"errors,omitempty"`
}

// BackendObservation is one backend × family.
type BackendObservation struct {
	Backend string `json:"backend"` // nf_tables | legacy
	Family  string `json:"family"`  // IPv4 | IPv6
	// Method is how the rules were read: "per-chain" (nf_tables) or
	// "save-stream" (legacy).
	Method string `json:"method"`
	// Commands are the commands that were run, in order of issue.
	Commands []string `json:"commands,omitempty"`
	// LegacyTables are the legacy tables that exist (from
	// /proc/net/ip_tables_names); only those were saved.
	LegacyTables []string `json:"legacyTables,omitempty"`

	// KubeProxyChains is true when nat KUBE-SERVICES exists in this backend.
	KubeProxyChains bool `json:"kubeProxyChains"`
	// Canary lists the tables holding KUBE-PROXY-CANARY.
	Canary []string `json:"canary,omitempty"`
	// MarkMasq holds the KUBE-MARK-MASQ rules; MasqMark their mark (e.g.
	// "0x4000/0x4000").
	MarkMasq []Rule `json:"markMasq,omitempty"`
	MasqMark string `json:"masqMark,omitempty"`
	// NodePortsTail is the KUBE-SERVICES rule(s) jumping to KUBE-NODEPORTS.
	NodePortsTail []Rule `json:"nodePortsTail,omitempty"`

	Ports []PortObservation `json:"ports,omitempty"`
	Error string            `json:"error,omitempty"`
}

// PortObservation is one Service port in one backend × family.
type PortObservation struct {
	ServicePortName string `json:"servicePortName"`
	Protocol        string `json:"protocol"`
	Port            int32  `json:"port"`
	NodePort        int32  `json:"nodePort,omitempty"`

	// Entry are the nat KUBE-SERVICES rules for this port (ClusterIP,
	// external IP, load-balancer IP).
	Entry []EntryRule `json:"entry,omitempty"`
	// NodePorts are the nat KUBE-NODEPORTS rules for this port.
	NodePorts []Rule `json:"nodePorts,omitempty"`

	Service  *Chain `json:"service"`  // KUBE-SVC-…
	Local    *Chain `json:"local"`    // KUBE-SVL-…
	External *Chain `json:"external"` // KUBE-EXT-…
	Firewall *Chain `json:"firewall"` // KUBE-FW-…
	// Other are chains the entry rules jump to that are not named by this
	// port's hash (found by comment).
	Other []*Chain `json:"other,omitempty"`

	// Endpoints are the KUBE-SEP chains, referenced from the SVC/SVL chains
	// or named by the hash of an endpoint in the query.
	Endpoints []EndpointChain `json:"endpoints,omitempty"`

	// Filter are the filter-table rules about this port: REJECT "has no
	// endpoints", DROP "has no local endpoints", health check ACCEPT,
	// firewall DROP.
	Filter []Rule `json:"filter,omitempty"`
}

// EntryRule is one KUBE-SERVICES rule with what it captures.
type EntryRule struct {
	// Kind: clusterIP, externalIP, loadBalancerIP, or other.
	Kind string `json:"kind"`
	Rule
}

// Chain is one per-Service chain.
type Chain struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	// FoundBy: "hash" (name computed from the Service), "comment" (reached
	// from an entry rule found by its comment), "jump" (reached from another
	// chain).
	FoundBy string `json:"foundBy,omitempty"`
	Rules   []Rule `json:"rules,omitempty"`

	// Masquerade is the "-j KUBE-MARK-MASQ" rule of an SVC/SVL chain.
	Masquerade *Rule `json:"masquerade,omitempty"`
	// Affinity are the "-m recent --rcheck" rules (session affinity).
	Affinity []AffinityRule `json:"affinity,omitempty"`
	// Selection are the rules choosing an endpoint chain, in order, each
	// with its probability turned into the share of new connections.
	Selection []EndpointJump `json:"selection,omitempty"`
	// UnmatchedShare is what no selection rule catches (normally 0).
	UnmatchedShare float64 `json:"unmatchedShare,omitempty"`
}

// AffinityRule is one session-affinity rcheck rule.
type AffinityRule struct {
	Target   string `json:"target"`
	Endpoint string `json:"endpoint,omitempty"` // from the comment "<spn> -> <ep>"
	Name     string `json:"name"`               // recent list name
	Seconds  int    `json:"seconds"`
	Reap     bool   `json:"reap,omitempty"`
	Raw      string `json:"raw"`
}

// EndpointJump is one endpoint-selection rule.
type EndpointJump struct {
	Target string `json:"target"`
	// Endpoint is from the comment "<spn> -> <ep>"; empty when kube-proxy
	// dropped comments (more than 1000 endpoints).
	Endpoint    string   `json:"endpoint,omitempty"`
	Probability string   `json:"probability,omitempty"` // as printed; empty = no statistic match
	Share       float64  `json:"share"`
	Raw         string   `json:"raw"`
	probability *float64 `json:"-"`
}

// EndpointChain is one KUBE-SEP chain.
type EndpointChain struct {
	Chain
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
