package programmed

import (
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/expect"
)

// IsEBPF says whether mode is an eBPF datapath that replaces kube-proxy:
// its Service state lives in BPF maps, written by its own agent.
func IsEBPF(mode collectorapi.DatapathMode) bool {
	return mode == collectorapi.ModeCilium || mode == collectorapi.ModeCalico
}

// IsIPVS says whether mode is kube-proxy's IPVS proxier.
func IsIPVS(mode collectorapi.DatapathMode) bool { return mode == collectorapi.ModeIPVS }

// IsKubeProxy says whether mode is one of kube-proxy's own proxiers.
func IsKubeProxy(mode collectorapi.DatapathMode) bool {
	switch mode {
	case collectorapi.ModeIPTables, collectorapi.ModeNFTables, collectorapi.ModeIPVS:
		return true
	}
	return false
}

// IsIPTables says whether mode is kube-proxy's iptables proxier.
func IsIPTables(mode collectorapi.DatapathMode) bool { return mode == collectorapi.ModeIPTables }

// SlicesDriven says whether mode's programmer builds the node's Service
// datapath from the EndpointSlices as it watches them (kube-proxy's
// proxiers, the Cilium agent, Calico's Felix), so a slice change during
// the read can put the datapath ahead of the API read.
func SlicesDriven(mode collectorapi.DatapathMode) bool {
	return IsKubeProxy(mode) || IsEBPF(mode)
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

// RulesOf are the selection rules of mode's programmer, for its
// expectation: kube-proxy's CategorizeEndpoints for iptables and nftables
// (and a node whose datapath is not known), the IPVS proxier's reading of
// it, the Cilium agent's and Felix's own.
func RulesOf(mode collectorapi.DatapathMode) expect.Rules {
	switch mode {
	case collectorapi.ModeIPVS:
		return expect.IPVSRules
	case collectorapi.ModeCilium:
		return expect.CiliumRules
	case collectorapi.ModeCalico:
		return expect.CalicoRules
	}
	return expect.KubeProxyRules
}
