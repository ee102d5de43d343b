package programmed

import collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"

// IsEBPF says whether mode is an eBPF datapath that replaces kube-proxy:
// its Service state lives in BPF maps, written by its own agent.
func IsEBPF(mode collectorapi.DatapathMode) bool {
	return mode == collectorapi.ModeCilium || mode == collectorapi.ModeCalico
}

// IsIPVS says whether mode is kube-proxy's IPVS proxier.
func IsIPVS(mode collectorapi.DatapathMode) bool { return mode == collectorapi.ModeIPVS }

// IsKubeProxy says whether kube-proxy programs mode's rules.
func IsKubeProxy(mode collectorapi.DatapathMode) bool {
	switch mode {
	case collectorapi.ModeIPTables, collectorapi.ModeIPTablesLegacy, collectorapi.ModeNFTables, collectorapi.ModeIPVS:
		return true
	}
	return false
}

// ProgrammerOf names what writes the datapath's Service state on the node,
// for the findings that say it has not caught up.
func ProgrammerOf(mode collectorapi.DatapathMode) string {
	switch mode {
	case collectorapi.ModeCilium:
		return "the Cilium agent"
	case collectorapi.ModeCalico:
		return "Calico's Felix"
	}
	return "kube-proxy"
}
