package v1alpha1

// DatapathMode names what programs Services on a node: a kube-proxy mode as
// kube-proxy's /proxyMode reports it, or an eBPF datapath that replaces
// kube-proxy. Fingerprints use the same names, with ModeIPTablesLegacy for
// kube-proxy rules written through iptables-legacy.
type DatapathMode string

const (
	ModeIPTables DatapathMode = "iptables"
	// ModeIPTablesLegacy is only a fingerprint: kube-proxy reports either
	// iptables backend as ModeIPTables.
	ModeIPTablesLegacy DatapathMode = "iptables-legacy"
	ModeNFTables       DatapathMode = "nftables"
	ModeIPVS           DatapathMode = "ipvs"
	// ModeKernelspace is kube-proxy on Windows (HNS load balancers); the
	// collector has no reader for it.
	ModeKernelspace DatapathMode = "kernelspace"
	// ModeCilium and ModeCalico are eBPF datapaths found by their pinned maps.
	ModeCilium DatapathMode = "cilium"
	ModeCalico DatapathMode = "calico"
)
