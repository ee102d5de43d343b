package expect

import (
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"

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
	FallbackTerminating  bool
	InternalPolicyLocal  bool
	ExternalPolicyLocal  bool
	ExternallyAccessible bool
}

// EndpointInfo is an endpoint with kube-proxy's view of its conditions.
type EndpointInfo struct {
	ExpectedEndpoint
	local     bool
	zoneHints map[string]bool
	nodeHints map[string]bool
}

// ExpectForNode computes, for every Service port kube-proxy handles, what a
// kube-proxy on node should program, per IP family of the Service. It returns
// nil for Services kube-proxy skips (headless, ExternalName, or carrying the
// service-proxy-name label).
func ExpectForNode(svc *corev1.Service, slices []discoveryv1.EndpointSlice, node string, nodeLabels map[string]string) []PortExpectation {
	if svc == nil || SkippedByKubeProxy(svc) {
		return nil
	}
	zone := nodeLabels[corev1.LabelTopologyZone]
	var out []PortExpectation
	for _, fam := range ServiceFamilies(svc) {
		for _, sp := range svc.Spec.Ports {
			eps := EndpointsFor(slices, sp, fam, node)
			out = append(out, categorize(svc, sp, fam, eps, node, zone))
		}
	}
	return out
}

// SkippedByKubeProxy mirrors util.ShouldSkipService and the informer filter
// on the service-proxy-name label.
func SkippedByKubeProxy(svc *corev1.Service) bool {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return true
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return true
	}
	if _, ok := svc.Labels[labelServiceProxyName]; ok {
		return true // any value, even empty: the informer selects on absence
	}
	return false
}

// Choices are the expectations a kube-proxy on one node can
// arrive at when the inputs do not pin down one: the node's zone is unknown
// (each hinted zone, and a zone no endpoint is hinted for, where kube-proxy
// ignores zone hints), or two slices hold the same IP:port with different
// conditions, where kube-proxy's pick depends on the order it reads the
// slices in (each order). kube-proxy programs exactly one of them.
type Choices struct {
	Sets           [][]PortExpectation // each has ExpectForNode's port order
	ZoneAssumed    bool
	OrderDependent []string
}

// maxPermutedSlices bounds the slices whose every read order is tried; with
// more, each is tried first and last (what decides a duplicate is which of
// its slices kube-proxy reads last, or first for terminating copies).
const maxPermutedSlices = 4

// ReadOrders are the slice orders to try and the duplicates that make the
// order matter (sliceOrders), and the zones the endpoints are hinted for.
// None depends on the node, so a trace computes them once.
type ReadOrders struct {
	orders [][]discoveryv1.EndpointSlice
	dups   []string
	zones  []string
}

func NewReadOrders(slices []discoveryv1.EndpointSlice) *ReadOrders {
	r := &ReadOrders{zones: hintedZones(slices)}
	r.orders, r.dups = sliceOrders(slices)
	return r
}

// ChoicesForNode returns nil when ExpectForNode's answer is the only one.
func ChoicesForNode(svc *corev1.Service, r *ReadOrders, node, zone string, zoneKnown bool) *Choices {
	if svc == nil || SkippedByKubeProxy(svc) {
		return nil
	}
	zones := []string{zone}
	if !zoneKnown && len(r.zones) > 0 {
		zones = append([]string{""}, r.zones...)
	}
	orders, dups := r.orders, r.dups
	if len(zones)*len(orders) == 1 {
		return nil
	}
	c := &Choices{ZoneAssumed: len(zones) > 1, OrderDependent: dups}
	for _, order := range orders {
		for _, z := range zones {
			c.Sets = append(c.Sets, ExpectForNode(svc, order, node, map[string]string{corev1.LabelTopologyZone: z}))
		}
	}
	return c
}

func hintedZones(slices []discoveryv1.EndpointSlice) []string {
	zones := map[string]bool{}
	for i := range slices {
		if SliceIgnoredByKubeProxy(&slices[i]) {
			continue
		}
		for _, e := range slices[i].Endpoints {
			if e.Hints != nil {
				for _, z := range e.Hints.ForZones {
					zones[z.Name] = true
				}
			}
		}
	}
	return sortedKeys(zones)
}

// sliceOrders returns the slice orders worth trying and the endpoint
// strings that make the order matter. kube-proxy reads a Service's slices
// from a Go map (endpointInfoByServicePort), in no fixed order, and keeps
// per IP:port the last non-terminating copy, or the first terminating one
// when no copy is non-terminating (addEndpoints). The order matters only
// for copies in different slices that compete (same terminating state)
// and differ in what CategorizeEndpoints reads.
func sliceOrders(slices []discoveryv1.EndpointSlice) (orders [][]discoveryv1.EndpointSlice, dups []string) {
	type copyOf struct {
		slice int
		sig   string
		term  bool
	}
	byKey := map[string][]copyOf{}
	for i := range slices {
		sl := &slices[i]
		if SliceIgnoredByKubeProxy(sl) {
			continue
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip := e.Addresses[0]
			if a, err := netip.ParseAddr(ip); err == nil {
				ip = a.String()
			}
			term := e.Conditions.Terminating != nil && *e.Conditions.Terminating
			sig := endpointSignature(e)
			for _, p := range sl.Ports {
				if p.Name == nil || p.Port == nil || *p.Port == 0 {
					continue
				}
				proto := corev1.ProtocolTCP
				if p.Protocol != nil {
					proto = *p.Protocol
				}
				key := string(sl.AddressType) + " " + *p.Name + "/" + string(proto) + " " + net.JoinHostPort(ip, strconv.Itoa(int(*p.Port)))
				byKey[key] = append(byKey[key], copyOf{i, sig, term})
			}
		}
	}
	involved := map[int]bool{}
	dupSet := map[string]bool{}
	for key, copies := range byKey {
		anyLive := false
		for _, c := range copies {
			anyLive = anyLive || !c.term
		}
		var competing []copyOf
		for _, c := range copies {
			if c.term != anyLive { // the live copies compete, or else the terminating ones
				competing = append(competing, c)
			}
		}
		sigs, in := map[string]bool{}, map[int]bool{}
		for _, c := range competing {
			sigs[c.sig] = true
			in[c.slice] = true
		}
		if len(sigs) < 2 || len(in) < 2 {
			continue
		}
		for s := range in {
			involved[s] = true
		}
		dupSet[key[strings.LastIndex(key, " ")+1:]] = true
	}
	if len(involved) == 0 {
		return [][]discoveryv1.EndpointSlice{slices}, nil
	}
	pos := make([]int, 0, len(involved))
	for s := range involved {
		pos = append(pos, s)
	}
	sort.Ints(pos)
	var perms [][]int
	if len(pos) <= maxPermutedSlices {
		perms = permutations(pos)
	} else {
		for k := range pos {
			first := append([]int{pos[k]}, omitIndex(pos, k)...)
			last := append(omitIndex(pos, k), pos[k])
			perms = append(perms, first, last)
		}
	}
	for _, perm := range perms {
		order := append([]discoveryv1.EndpointSlice(nil), slices...)
		for k, p := range pos {
			order[p] = slices[perm[k]]
		}
		orders = append(orders, order)
	}
	return orders, sortedKeys(dupSet)
}

// endpointSignature is what CategorizeEndpoints reads of an endpoint.
func endpointSignature(e discoveryv1.Endpoint) string {
	b := func(p *bool, def bool) string {
		if p == nil {
			return strconv.FormatBool(def)
		}
		return strconv.FormatBool(*p)
	}
	sig := b(e.Conditions.Ready, true) + b(e.Conditions.Serving, true) + b(e.Conditions.Terminating, false)
	if e.NodeName != nil {
		sig += " node=" + *e.NodeName
	}
	if e.Hints != nil {
		for _, z := range e.Hints.ForZones {
			sig += " zone=" + z.Name
		}
		for _, n := range e.Hints.ForNodes {
			sig += " forNode=" + n.Name
		}
	}
	return sig
}

func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{append([]int(nil), xs...)}
	}
	var out [][]int
	for k := range xs {
		for _, rest := range permutations(omitIndex(xs, k)) {
			out = append(out, append([]int{xs[k]}, rest...))
		}
	}
	return out
}

func omitIndex(xs []int, k int) []int {
	out := make([]int, 0, len(xs)-1)
	out = append(out, xs[:k]...)
	return append(out, xs[k+1:]...)
}

func ServiceFamilies(svc *corev1.Service) []corev1.IPFamily {
	if len(svc.Spec.IPFamilies) > 0 {
		return svc.Spec.IPFamilies
	}
	if a, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && a.Is6() {
		return []corev1.IPFamily{corev1.IPv6Protocol}
	}
	return []corev1.IPFamily{corev1.IPv4Protocol}
}

// EndpointsFor turns the slices into kube-proxy endpoints for one Service
// port and family: first address, conditions defaulted, duplicates resolved
// as kube-proxy resolves them in the order given. A slice port belongs to the
// Service port when name and protocol both match, as kube-proxy keys its
// ServicePortName; a slice port with a nil name, or a nil or zero port
// number, is skipped as kube-proxy skips it (EndpointSliceCache
// endpointInfoByServicePort).
func EndpointsFor(slices []discoveryv1.EndpointSlice, sp corev1.ServicePort, fam corev1.IPFamily, node string) []EndpointInfo {
	want := discoveryv1.AddressTypeIPv4
	if fam == corev1.IPv6Protocol {
		want = discoveryv1.AddressTypeIPv6
	}
	byKey := map[string]EndpointInfo{}
	for i := range slices {
		sl := &slices[i]
		if sl.AddressType != want {
			continue
		}
		if SliceIgnoredByKubeProxy(sl) {
			continue
		}
		port := SlicePortFor(sl, sp)
		if port == nil {
			continue
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip := e.Addresses[0]
			if a, err := netip.ParseAddr(ip); err == nil {
				ip = a.String()
			}
			ep := EndpointInfo{ExpectedEndpoint: ExpectedEndpoint{
				IP:          ip,
				Port:        *port,
				Ready:       e.Conditions.Ready == nil || *e.Conditions.Ready,
				Serving:     e.Conditions.Serving == nil || *e.Conditions.Serving,
				Terminating: e.Conditions.Terminating != nil && *e.Conditions.Terminating,
			}}
			if e.NodeName != nil {
				ep.Node = *e.NodeName
				ep.local = *e.NodeName == node
			}
			if e.Hints != nil {
				for _, z := range e.Hints.ForZones {
					if ep.zoneHints == nil {
						ep.zoneHints = map[string]bool{}
					}
					ep.zoneHints[z.Name] = true
				}
				for _, n := range e.Hints.ForNodes {
					if ep.nodeHints == nil {
						ep.nodeHints = map[string]bool{}
					}
					ep.nodeHints[n.Name] = true
				}
			}
			// kube-proxy's addEndpoints: a copy replaces the stored one
			// unless it is terminating, so the last non-terminating copy
			// wins, else the first terminating one.
			key := ep.String()
			if _, ok := byKey[key]; !ok || !ep.Terminating {
				byKey[key] = ep
			}
		}
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]EndpointInfo, len(keys))
	for i, k := range keys {
		out[i] = byKey[k]
	}
	return out
}

// SlicePortFor is the slice's port number for the Service port, or nil.
func SlicePortFor(sl *discoveryv1.EndpointSlice, sp corev1.ServicePort) *int32 {
	proto := protocolOf(sp.Protocol)
	for _, p := range sl.Ports {
		if p.Name == nil || *p.Name != sp.Name || p.Port == nil || *p.Port == 0 {
			continue
		}
		// The API server requires and defaults the protocol; TCP stands
		// in for a hand-made object that lacks it.
		if p.Protocol != nil && string(*p.Protocol) != proto || p.Protocol == nil && proto != string(corev1.ProtocolTCP) {
			continue
		}
		return p.Port
	}
	return nil
}

// SliceIgnoredByKubeProxy mirrors kube-proxy's EndpointSlice informer, which
// lists only slices without the service.kubernetes.io/headless label (any
// value excludes; cmd/kube-proxy/app/server.go). The EndpointSlice
// controller sets it only for headless Services and never copies it from a
// Service, but mirrored slices copy it from their Endpoints object and
// hand-made slices may carry it.
func SliceIgnoredByKubeProxy(sl *discoveryv1.EndpointSlice) bool {
	_, ok := sl.Labels[corev1.IsHeadlessService]
	return ok
}

func categorize(svc *corev1.Service, sp corev1.ServicePort, fam corev1.IPFamily, eps []EndpointInfo, node, zone string) PortExpectation {
	pe := PortExpectation{
		PortName: sp.Name, Protocol: string(sp.Protocol), Port: sp.Port, NodePort: sp.NodePort, Family: fam, Zone: zone,
		InternalPolicyLocal:  svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
		ExternallyAccessible: sp.NodePort != 0 || len(svc.Spec.ExternalIPs) > 0 || HasVIPIngress(svc),
	}
	if pe.Protocol == "" {
		pe.Protocol = string(corev1.ProtocolTCP)
	}
	pe.ExternalPolicyLocal = pe.ExternallyAccessible && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	usesCluster := !pe.InternalPolicyLocal || pe.ExternallyAccessible
	usesLocal := pe.InternalPolicyLocal || pe.ExternalPolicyLocal

	if len(eps) > 0 && usesCluster {
		pe.TopologyMode = topologyMode(eps, node, zone)
		for _, ep := range eps {
			if ep.Ready && availableForTopology(ep, pe.TopologyMode, node, zone) {
				pe.Cluster = append(pe.Cluster, ep.ExpectedEndpoint)
			}
		}
		if len(pe.Cluster) == 0 {
			for _, ep := range eps {
				if ep.Serving && ep.Terminating {
					pe.Cluster = append(pe.Cluster, ep.ExpectedEndpoint)
					pe.FallbackTerminating = true
				}
			}
		}
		pe.HasAnyEndpoints = len(pe.Cluster) > 0
	}
	if usesLocal {
		var localReady, localST bool
		for _, ep := range eps {
			if ep.Ready {
				pe.HasAnyEndpoints = true
				localReady = localReady || ep.local
			} else if ep.Serving && ep.Terminating {
				pe.HasAnyEndpoints = true
				localST = localST || ep.local
			}
		}
		for _, ep := range eps {
			switch {
			case localReady && ep.local && ep.Ready:
				pe.Local = append(pe.Local, ep.ExpectedEndpoint)
			case !localReady && localST && ep.local && ep.Serving && ep.Terminating:
				pe.Local = append(pe.Local, ep.ExpectedEndpoint)
				pe.FallbackTerminating = true
			}
		}
	}
	pe.Internal = pe.Cluster
	if pe.InternalPolicyLocal {
		pe.Internal = pe.Local
	}
	pe.External = pe.Cluster
	if pe.ExternalPolicyLocal {
		pe.External = pe.Local
	}
	return pe
}

func HasVIPIngress(svc *corev1.Service) bool {
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" && (ing.IPMode == nil || *ing.IPMode == corev1.LoadBalancerIPModeVIP) {
			return true
		}
	}
	return false
}

// topologyMode is kube-proxy's topologyModeFromHints with
// PreferSameTrafficDistribution on (GA and locked in v1.37).
func topologyMode(eps []EndpointInfo, node, zone string) string {
	hasReady, forNode, allNode, forZone, allZone := false, false, true, false, true
	for _, ep := range eps {
		if !ep.Ready {
			continue
		}
		hasReady = true
		if len(ep.nodeHints) == 0 {
			allNode = false
		} else if ep.nodeHints[node] {
			forNode = true
		}
		if len(ep.zoneHints) == 0 {
			allZone = false
		} else if ep.zoneHints[zone] {
			forZone = true
		}
	}
	switch {
	case !hasReady:
		return ""
	case allNode && forNode:
		return corev1.ServiceTrafficDistributionPreferSameNode
	case allZone && forZone:
		return corev1.ServiceTrafficDistributionPreferSameZone
	}
	return ""
}

func availableForTopology(ep EndpointInfo, mode, node, zone string) bool {
	switch mode {
	case "":
		return true
	case corev1.ServiceTrafficDistributionPreferSameNode:
		return ep.nodeHints[node]
	case corev1.ServiceTrafficDistributionPreferSameZone:
		return ep.zoneHints[zone]
	}
	return false
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

// labelServiceProxyName is the label kube-proxy's Service informer selects
// on the absence of (pkg/proxy/apis.LabelServiceProxyName).
const labelServiceProxyName = "service.kubernetes.io/service-proxy-name"

// protocolOf is the Service port's protocol, TCP when unset.
func protocolOf(p corev1.Protocol) string {
	if p == "" {
		return string(corev1.ProtocolTCP)
	}
	return string(p)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
