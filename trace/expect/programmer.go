package expect

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Rules are how one programmer of a node's Service state selects the
// endpoints of a Service port. kube-proxy's modes share CategorizeEndpoints
// but its IPVS proxier reads the result its own way; the eBPF datapaths
// have selection code of their own. Each field names the code it mirrors.
type Rules struct {
	// Programmer names who writes the state, for the findings.
	Programmer string
	// Hints are the ways the programmer may filter the Cluster endpoints by
	// topology hints, in order of likelihood: the first is the
	// expectation, the others are Choices (a setting svctrace cannot read
	// decides between them).
	Hints []HintRule
	// TerminatingFallback: serving terminating endpoints stand in when none
	// is ready (kube-proxy's CategorizeEndpoints).
	TerminatingFallback bool
	// ReadyOnly: only ready endpoints are written, whatever the selection
	// picked.
	ReadyOnly bool
	// NoLocalUsesCluster: a Local-policy path with no local endpoint gets
	// the Cluster endpoints instead of none.
	NoLocalUsesCluster bool
}

// HintRule is one way of filtering endpoints by topology hints.
type HintRule int

const (
	// HintsKubeProxy is pkg/proxy/topology.go topologyModeFromHints: node
	// hints, then zone hints, only when every ready endpoint carries them
	// and one matches this node.
	HintsKubeProxy HintRule = iota
	// HintsNone ignores hints.
	HintsNone
	// HintsZoneOnly filters by zone hints alone, with kube-proxy's
	// safeguards (every ready endpoint hinted, one for this zone).
	HintsZoneOnly
	// HintsFelix is Felix's FilterEpsByTrafficDistribution
	// (felix/bpf/proxy/topology.go): the ready or terminating endpoints
	// hinted for this node, else for this zone, else all, with no
	// requirement that every endpoint carries hints.
	HintsFelix
)

var (
	// KubeProxyRules are kube-proxy's iptables and nftables proxiers:
	// CategorizeEndpoints as is.
	KubeProxyRules = Rules{Programmer: "kube-proxy", Hints: []HintRule{HintsKubeProxy}, TerminatingFallback: true}
	// IPVSRules are kube-proxy's IPVS proxier: CategorizeEndpoints, then
	// syncEndpoint (pkg/proxy/ipvs/proxier.go), which gives a Local-policy
	// virtual server with no local endpoint the Cluster endpoints
	// (kubernetes#97081: local Pods keep working; external clients get
	// replies from other nodes' Pods and drop them). Under
	// internalTrafficPolicy Local that Cluster list is empty unless the
	// Service is externally accessible (UsesClusterEndpoints).
	IPVSRules = Rules{Programmer: "kube-proxy", Hints: []HintRule{HintsKubeProxy}, TerminatingFallback: true, NoLocalUsesCluster: true}
	// CiliumRules are the Cilium agent's: no topology filtering unless
	// the agent runs with enable-service-topology, which filters by zone
	// hints only; svctrace cannot read that setting, so both are choices.
	// Terminating backends are kept for the fallback, as kube-proxy does.
	CiliumRules = Rules{Programmer: "the Cilium agent", Hints: []HintRule{HintsNone, HintsZoneOnly}, TerminatingFallback: true}
	// CalicoRules are Felix's eBPF proxy (felix/bpf/proxy/syncer.go
	// applySvc and updateService): topology by
	// FilterEpsByTrafficDistribution, and only Ready endpoints written as
	// backends ("only write Ready pods to backend"), so there is no
	// terminating fallback: a Service whose endpoints all terminate has no
	// backends.
	CalicoRules = Rules{Programmer: "Calico's Felix", Hints: []HintRule{HintsFelix}, ReadyOnly: true}
)

// applyProgrammer turns CategorizeEndpoints' Internal and External lists
// into what the programmer's own code reads from them.
func (r Rules) applyProgrammer(pe *PortExpectation) {
	if !r.NoLocalUsesCluster {
		return
	}
	if pe.InternalPolicyLocal && len(pe.Local) == 0 {
		pe.Internal = pe.Cluster
		pe.NoLocalFallback = len(pe.Cluster) > 0
	}
	if pe.ExternalPolicyLocal && len(pe.Local) == 0 {
		pe.External = pe.Cluster
		pe.NoLocalFallback = pe.NoLocalFallback || len(pe.Cluster) > 0
	}
}

// felixTopology is Felix's choice of candidate endpoints
// (felix/bpf/proxy/syncer.go: FilterEpsByTopologyAwareRouting when the
// Service's topology-mode annotation is Auto, else
// FilterEpsByTrafficDistribution), and the hint kind that decided it ("" for
// none). Only ready or terminating endpoints can match a hint.
func felixTopology(svc *corev1.Service, eps []EndpointInfo, node, zone string) ([]EndpointInfo, string) {
	usable := func(ep EndpointInfo) bool { return ep.Ready || ep.Terminating }
	if strings.EqualFold(svc.Annotations[corev1.AnnotationTopologyMode], "auto") {
		var out []EndpointInfo
		for _, ep := range eps {
			if !usable(ep) {
				continue
			}
			if len(ep.zoneHints) == 0 {
				return eps, ""
			}
			if ep.zoneHints[zone] {
				out = append(out, ep)
			}
		}
		if len(out) == 0 {
			return eps, ""
		}
		return out, corev1.ServiceTrafficDistributionPreferSameZone
	}
	for _, by := range []struct {
		mode  string
		match func(EndpointInfo) bool
	}{
		{corev1.ServiceTrafficDistributionPreferSameNode, func(ep EndpointInfo) bool { return ep.nodeHints[node] }},
		{corev1.ServiceTrafficDistributionPreferSameZone, func(ep EndpointInfo) bool { return ep.zoneHints[zone] }},
	} {
		var out []EndpointInfo
		for _, ep := range eps {
			if usable(ep) && by.match(ep) {
				out = append(out, ep)
			}
		}
		if len(out) > 0 {
			return out, by.mode
		}
	}
	return eps, ""
}
