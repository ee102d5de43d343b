package expect

import (
	"net"
	"sort"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// ExpectedEndpoint is one endpoint kube-proxy should program for a Service
// port on a node, as kube-proxy's own endpoint string (ip:port) and facts.
type ExpectedEndpoint struct {
	IP          string
	Port        int32
	Node        string
	Ready       bool
	Serving     bool
	Terminating bool
}

// String is kube-proxy's endpoint string: net.JoinHostPort(ip, port).
func (e ExpectedEndpoint) String() string {
	return net.JoinHostPort(e.IP, strconv.Itoa(int(e.Port)))
}

// PortExpectation is what kube-proxy on one node should program for one
// Service port and one IP family. It copies kube-proxy v1.37's
// CategorizeEndpoints (pkg/proxy/topology.go): the same defaults for the
// endpoint conditions, the same topology-hint rules, the same
// serving+terminating fallback, the same Local-policy choices. Each list is
// sorted as kube-proxy sorts it: by endpoint string, as strings.
type PortExpectation struct {
	PortName string // Service port name ("" for an unnamed port)
	Protocol string
	Port     int32
	NodePort int32
	Family   corev1.IPFamily

	// Cluster are the endpoints for Cluster-policy traffic (after topology
	// filtering, or the serving+terminating fallback).
	Cluster []ExpectedEndpoint
	// Local are this node's endpoints for Local-policy traffic.
	Local []ExpectedEndpoint
	// Internal is what ClusterIP traffic uses on this node: Local under
	// internalTrafficPolicy Local, Cluster otherwise.
	Internal []ExpectedEndpoint
	// External is what NodePort/externalIP/LB traffic uses on this node.
	External []ExpectedEndpoint
	// HasAnyEndpoints is kube-proxy's hasAnyEndpoints: false means the ClusterIP
	// rejects (filter-table REJECT "has no endpoints").
	HasAnyEndpoints bool
	// TopologyMode is PreferSameNode / PreferSameZone when hints filter
	// Cluster, "" otherwise.
	TopologyMode string
	// Zone is the node's zone the hints were matched against. ZoneAssumed
	// says it was not known and was chosen as the one whose expectation
	// fits the programmed rules best (see Choices).
	Zone        string
	ZoneAssumed bool
	// OrderDependent are duplicate endpoints whose copy kube-proxy picks by
	// the order it reads the slices in; the expectation is the order that
	// fits the rules best.
	OrderDependent []string
	// FallbackTerminating is true when Cluster or Local holds serving
	// terminating endpoints because no ready one exists.
	FallbackTerminating bool
	// NoLocalFallback is true when a Local-policy path has no local
	// endpoint and the programmer sends it to the Cluster endpoints instead
	// (IPVSRules).
	NoLocalFallback bool
	// ExternalIPs and LoadBalancerIPs are the Service's externalIPs and
	// load-balancer ingress IPs this family's proxier programs
	// (newBaseServiceInfo: its own family's, and only VIP-mode ingress IPs),
	// the addresses the external entries are expected for.
	ExternalIPs          []string
	LoadBalancerIPs      []string
	InternalPolicyLocal  bool
	ExternalPolicyLocal  bool
	ExternallyAccessible bool
}

// ExpectForNode computes, for every Service port kube-proxy handles, what a
// kube-proxy on node should program, per IP family of the Service. It returns
// nil for Services kube-proxy skips (headless, ExternalName, or carrying the
// service-proxy-name label).
func ExpectForNode(svc *corev1.Service, slices []discoveryv1.EndpointSlice, node string, nodeLabels map[string]string) []PortExpectation {
	return ExpectForProgrammer(svc, slices, node, nodeLabels, KubeProxyRules)
}

// ExpectForProgrammer is ExpectForNode by another programmer's rules, with
// its first hint rule (the others are Choices).
func ExpectForProgrammer(svc *corev1.Service, slices []discoveryv1.EndpointSlice, node string, nodeLabels map[string]string, r Rules) []PortExpectation {
	return expectWith(svc, slices, node, nodeLabels, r, r.firstHint())
}

func expectWith(svc *corev1.Service, slices []discoveryv1.EndpointSlice, node string, nodeLabels map[string]string, r Rules, hint HintRule) []PortExpectation {
	if svc == nil || SkippedByKubeProxy(svc) {
		return nil
	}
	zone := nodeLabels[corev1.LabelTopologyZone]
	var out []PortExpectation
	for _, fam := range ServiceFamilies(svc) {
		for _, sp := range svc.Spec.Ports {
			eps := EndpointsFor(slices, sp, fam, node)
			out = append(out, categorize(svc, sp, fam, eps, node, zone, r, hint))
		}
	}
	return out
}

func (r Rules) firstHint() HintRule {
	if len(r.Hints) == 0 {
		return HintsKubeProxy
	}
	return r.Hints[0]
}

// EndpointStrings lists endpoint strings in kube-proxy order.
func EndpointStrings(eps []ExpectedEndpoint) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.String()
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// NodeIndependent reports whether ExpectForNode gives every node of one zone
// the same answer: no traffic policy is Local (whose endpoints are the
// node's own) and no endpoint carries a node hint (PreferSameNode). A trace
// of a thousand nodes then computes one expectation per zone instead of one
// per node.
func NodeIndependent(svc *corev1.Service, slices []discoveryv1.EndpointSlice) bool {
	if svc == nil {
		return false
	}
	if p := svc.Spec.InternalTrafficPolicy; p != nil && *p == corev1.ServiceInternalTrafficPolicyLocal {
		return false
	}
	if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		return false
	}
	for i := range slices {
		for _, e := range slices[i].Endpoints {
			if e.Hints != nil && len(e.Hints.ForNodes) > 0 {
				return false
			}
		}
	}
	return true
}
