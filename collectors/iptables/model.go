// Package iptables reads one Service's kube-proxy iptables state on a node,
// in the cheapest way for each backend: on nf_tables it dumps the Service's
// chains one by one over netlink and renders each rule as `iptables-nft -S`
// prints it (falling back to `iptables-nft -t nat -S CHAIN` for a chain it
// cannot render), on legacy it streams one `iptables-legacy-save` per table
// through a filter that keeps only this Service's lines. Both produce the
// same observation as the text listing, which stays available as the
// reference. It reports what it found, with the rule text as evidence; it
// does not judge (collectors observe, trace judges).
package iptables

import collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"

// Query names the Service to read and how to reach the node's rules.
type Query struct {
	Service collectorapi.ServiceSpec `json:"service"`
	// Endpoints are the Service's endpoints as the API reports them; their
	// IP:port give the KUBE-SEP hashes to look for (chains are also found by
	// following jumps, so endpoints the API no longer lists still show).
	Endpoints []collectorapi.Endpoint `json:"endpoints,omitempty"`

	// Families to read: "IPv4", "IPv6". Empty means the families of the
	// Service's ClusterIPs (IPv4 when it has none).
	Families []string `json:"families,omitempty"`
	// Backends to consider: collectorapi.IPTablesBackendNFTables,
	// collectorapi.IPTablesBackendLegacy. Empty means both.
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
	// Reader forces the text reader (ReaderText: the iptables commands)
	// instead of the kernel readers; empty picks the kernel readers when the
	// rules are read for real (Runner unset).
	Reader string `json:"reader,omitempty"`
	// EntryProof, set to collectorapi.IPTablesEntryProofRules, makes the
	// nf_tables netlink reader read nat KUBE-SERVICES and KUBE-NODEPORTS
	// instead of establishing the entry rules from reference counts (the
	// collector asks for it when a probe of a frontend failed).
	EntryProof string `json:"entryProof,omitempty"`
	// Parallel bounds concurrent per-chain listings on nf_tables (default 4).
	Parallel int `json:"parallel,omitempty"`
}

// ReaderText, as Query.Reader, reads through the iptables commands only.
const ReaderText = collectorapi.IPTablesReaderText
