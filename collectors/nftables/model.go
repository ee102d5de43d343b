// Package nftables reads one Service's kube-proxy nftables state on a node:
// the `kube-proxy` tables (ip, ip6), this Service's elements of the
// service-ips / service-nodeports / no-endpoint-* / firewall-ips maps and the
// cluster-ips set, its chains, the `numgen random mod N` endpoint maps and the
// affinity sets. It reads through netlink (github.com/google/nftables), one
// chain and one map element at a time, so the cost follows the size of this
// Service, not of the node; `nft --json` is only a fallback and is reported as
// such. It observes and does not judge.
package nftables

import collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"

// TableName is kube-proxy's table in both families.
const TableName = "kube-proxy"

// Query names the Service to read and how to reach the node's ruleset.
type Query struct {
	Service   collectorapi.ServiceSpec `json:"service"`
	Endpoints []collectorapi.Endpoint  `json:"endpoints,omitempty"`
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
