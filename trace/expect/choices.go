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
	// nodeHints: some endpoint carries a node hint.
	nodeHints bool
}

func hasNodeHints(slices []discoveryv1.EndpointSlice) bool {
	for i := range slices {
		for _, e := range slices[i].Endpoints {
			if e.Hints != nil && len(e.Hints.ForNodes) > 0 {
				return true
			}
		}
	}
	return false
}

// NewReadOrders reads the slices' duplicates and hinted zones once per
// Service, for ChoicesForNode on every node.
func NewReadOrders(slices []discoveryv1.EndpointSlice) *ReadOrders {
	r := &ReadOrders{zones: hintedZones(slices), nodeHints: hasNodeHints(slices)}
	r.orders, r.dups = sliceOrders(slices)
	return r
}

// ChoicesForNode returns nil when ExpectForNode's answer is the only one.
func ChoicesForNode(svc *corev1.Service, r *ReadOrders, node, zone string, zoneKnown bool) *Choices {
	return ChoicesForProgrammer(svc, r, node, zone, zoneKnown, KubeProxyRules)
}

// ChoicesForProgrammer is ChoicesForNode by another programmer's rules:
// each of its hint rules is a choice too.
func ChoicesForProgrammer(svc *corev1.Service, r *ReadOrders, node, zone string, zoneKnown bool, rules Rules) *Choices {
	if svc == nil || SkippedByKubeProxy(svc) {
		return nil
	}
	zones := []string{zone}
	if !zoneKnown && len(r.zones) > 0 {
		zones = append([]string{""}, r.zones...)
	}
	hints := rules.Hints
	if len(hints) == 0 || len(r.zones) == 0 && !r.nodeHints {
		// Without hints every hint rule gives the same answer.
		hints = []HintRule{rules.firstHint()}
	}
	orders, dups := r.orders, r.dups
	if len(zones)*len(orders)*len(hints) == 1 {
		return nil
	}
	c := &Choices{ZoneAssumed: len(zones) > 1, OrderDependent: dups}
	for _, hint := range hints {
		for _, order := range orders {
			for _, z := range zones {
				c.Sets = append(c.Sets, expectWith(svc, order, node, map[string]string{corev1.LabelTopologyZone: z}, rules, hint))
			}
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
