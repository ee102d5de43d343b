// Package nftables reads one Service's kube-proxy nftables state on a node:
// the `kube-proxy` tables (ip, ip6), this Service's elements of the
// service-ips / service-nodeports / no-endpoint-* / firewall-ips maps and the
// cluster-ips set, its chains, the `numgen random mod N` endpoint maps and the
// affinity sets. It reads through netlink (github.com/google/nftables), one
// chain and one map element at a time, so the cost follows the size of this
// Service, not of the node; `nft --json` is only a fallback and is reported as
// such. It observes and does not judge.
package nftables

import (
	"github.com/svctrace/kubectl-svctrace/collectors"
	"github.com/svctrace/kubectl-svctrace/collectors/kubeproxy"
)

// Sources of an observation.
const (
	SourceNetlink = "netlink"
	SourceCLI     = "nft-cli"
)

// TableName is kube-proxy's table in both families.
const TableName = "kube-proxy"

// Query names the Service to read and how to reach the node's ruleset.
type Query struct {
	Service   collectors.ServiceSpec `json:"service"`
	Endpoints []collectors.Endpoint  `json:"endpoints,omitempty"`
	// Families: "ip", "ip6". Empty means the families of the Service's
	// ClusterIPs (ip when it has none).
	Families []string `json:"families,omitempty"`
	// NetNS, when set, is a network namespace path (/var/run/netns/x):
	// netlink sockets are opened in it, nft runs under nsenter.
	NetNS string `json:"netns,omitempty"`
	// ForceCLI skips netlink (tests of the fallback).
	ForceCLI bool `json:"forceCLI,omitempty"`
	// Runner runs the nft fallback; nil means exec (with NetNS).
	Runner Runner `json:"-"`
}

// Observation is what the nftables reader saw for one Service.
type Observation struct {
	// Source is "netlink", or "nft-cli" when netlink failed (NetlinkError
	// says why) or ForceCLI was set.
	Source       string             `json:"source"`
	NetlinkError string             `json:"netlinkError,omitempty"`
	Tables       []TableObservation `json:"tables"`
}

// TableObservation is one `kube-proxy` table.
type TableObservation struct {
	Family  string `json:"family"` // ip | ip6
	Name    string `json:"name"`
	Present bool   `json:"present"`
	// ClusterIPs tells, for each of the Service's ClusterIPs of this family,
	// whether it is in the cluster-ips set.
	ClusterIPs []Membership      `json:"clusterIPs,omitempty"`
	Ports      []PortObservation `json:"ports,omitempty"`
	Error      string            `json:"error,omitempty"`
}

// Membership is one key looked up in a set.
type Membership struct {
	Set    string `json:"set"`
	Key    string `json:"key"`
	Member bool   `json:"member"`
}

// PortObservation is one Service port in one table.
type PortObservation struct {
	ServicePortName string              `json:"servicePortName"`
	Protocol        string              `json:"protocol"`
	Port            int32               `json:"port"`
	NodePort        int32               `json:"nodePort,omitempty"`
	ChainNames      kubeproxy.NFTChains `json:"chainNames"`

	// Map elements looked up for this port's keys (ClusterIPs, external and
	// load-balancer IPs; NodePort). Found=false entries are lookups that
	// matched nothing.
	ServiceIPs          []Element `json:"serviceIPs,omitempty"`
	ServiceNodePorts    []Element `json:"serviceNodePorts,omitempty"`
	NoEndpointServices  []Element `json:"noEndpointServices,omitempty"`
	NoEndpointNodePorts []Element `json:"noEndpointNodePorts,omitempty"`
	FirewallIPs         []Element `json:"firewallIPs,omitempty"`

	Service  *Chain `json:"service"`
	Local    *Chain `json:"local"`
	External *Chain `json:"external"`
	Firewall *Chain `json:"firewall"`
	// Other are chains the map elements point to that this port's hash does
	// not name.
	Other []*Chain `json:"other,omitempty"`
	// Endpoints are the endpoint-… chains (session affinity only), reached
	// from the service/local chains or predicted from the query's endpoints.
	Endpoints []*Chain `json:"endpoints,omitempty"`
	// Affinity are the affinity-… sets of those endpoints.
	Affinity []AffinitySet `json:"affinity,omitempty"`
}

// Element is one map element (or a lookup that found none).
type Element struct {
	Map   string `json:"map"`
	Key   string `json:"key"` // "10.96.0.50 . tcp . 80"
	Found bool   `json:"found"`
	// Verdict is "goto <chain>", "jump <chain>", "drop", "accept", …
	Verdict string `json:"verdict,omitempty"`
	Target  string `json:"target,omitempty"` // the chain of goto/jump
	Comment string `json:"comment,omitempty"`
}

// Chain is one chain of the kube-proxy table.
type Chain struct {
	Name    string `json:"name"`
	Exists  bool   `json:"exists"`
	FoundBy string `json:"foundBy,omitempty"` // hash | verdict | jump
	Rules   []Rule `json:"rules,omitempty"`
}

// Rule is one rule with its decoded meaning next to its text.
type Rule struct {
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
	Numgen *NumgenMap `json:"numgen,omitempty"`
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
}

// NumgenMap is kube-proxy's random endpoint choice.
type NumgenMap struct {
	Kind    string `json:"kind"` // dnat | vmap
	Modulus uint32 `json:"modulus"`
	Set     string `json:"set,omitempty"` // anonymous set name (netlink)
	// Entries in index order; Share is 1/Modulus for each present index.
	Entries []NumgenEntry `json:"entries"`
	// UnmatchedShare is the share of indexes with no entry (normally 0).
	UnmatchedShare float64 `json:"unmatchedShare,omitempty"`
}

// NumgenEntry is one index of a numgen map.
type NumgenEntry struct {
	Index   uint32  `json:"index"`
	Address string  `json:"address,omitempty"` // dnat: ip:port
	Verdict string  `json:"verdict,omitempty"` // vmap: goto endpoint-…
	Target  string  `json:"target,omitempty"`
	Share   float64 `json:"share"`
}

// AffinitySet is one affinity-… set.
type AffinitySet struct {
	Name           string `json:"name"`
	Exists         bool   `json:"exists"`
	TimeoutSeconds int64  `json:"timeoutSeconds,omitempty"`
}
