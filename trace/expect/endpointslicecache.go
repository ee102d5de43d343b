package expect

import (
	"net/netip"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// EndpointInfo is an endpoint with kube-proxy's view of its conditions.
type EndpointInfo struct {
	ExpectedEndpoint
	local     bool
	zoneHints map[string]bool
	nodeHints map[string]bool
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
