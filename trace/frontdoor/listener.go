package frontdoor

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// listenerVerdict is whether one listener admits a route, and why not.
type listenerVerdict struct {
	listener gwv1.Listener
	// hostnames are the route's hostnames the listener serves, intersected
	// (nil with admitted: the listener serves every hostname the route has).
	hostnames []string
	admitted  bool
	why       string
}

// admittingListeners judges every listener of gw that the parentRef points
// at (all of them, or the one its sectionName or port names) against route,
// by the Gateway API's attachment rules: the listener's protocol and
// allowedRoutes.kinds take the route's kind, allowedRoutes.namespaces take
// its namespace, and its hostname intersects the route's hostnames. The
// controller decides the same in its Accepted condition; svctrace decides
// it too so a route no controller judged still gets an answer.
func admittingListeners(route *Route, gw *gwv1.Gateway, ref gwv1.ParentReference, nsLabels map[string]map[string]string) []listenerVerdict {
	var out []listenerVerdict
	for _, l := range gw.Spec.Listeners {
		if ref.SectionName != nil && *ref.SectionName != l.Name {
			continue
		}
		if ref.Port != nil && *ref.Port != l.Port {
			continue
		}
		v := listenerVerdict{listener: l}
		switch {
		case !kindAllowed(route.Kind, l):
			v.why = fmt.Sprintf("listener %s (%s) does not take %s (it takes %s)", l.Name, l.Protocol, route.Kind, strings.Join(allowedKinds(l), ", "))
		case !namespaceAllowed(route.Namespace, gw.Namespace, l, nsLabels):
			v.why = fmt.Sprintf("listener %s admits routes from %s only, not from namespace %s", l.Name, namespacesText(l), route.Namespace)
		default:
			hosts, ok := intersectHostnames(l.Hostname, route.Spec.Hostnames)
			if !ok {
				v.why = fmt.Sprintf("listener %s serves hostname %s, which none of the route's hostnames (%s) matches", l.Name, *l.Hostname, joinHostnames(route.Spec.Hostnames))
				break
			}
			v.admitted, v.hostnames = true, hosts
		}
		out = append(out, v)
	}
	return out
}

// allowedKinds are the route kinds a listener takes: its allowedRoutes.kinds,
// or the kinds its protocol implies.
func allowedKinds(l gwv1.Listener) []string {
	if ar := l.AllowedRoutes; ar != nil && len(ar.Kinds) > 0 {
		var out []string
		for _, k := range ar.Kinds {
			if k.Group == nil || *k.Group == GroupName {
				out = append(out, string(k.Kind))
			}
		}
		return out
	}
	switch l.Protocol {
	case gwv1.HTTPProtocolType, gwv1.HTTPSProtocolType:
		return []string{KindHTTPRoute, KindGRPCRoute}
	case gwv1.TLSProtocolType:
		return []string{KindTLSRoute, KindTCPRoute}
	case gwv1.TCPProtocolType:
		return []string{KindTCPRoute}
	case gwv1.UDPProtocolType:
		return []string{"UDPRoute"}
	}
	return nil
}

func kindAllowed(kind string, l gwv1.Listener) bool { return slices.Contains(allowedKinds(l), kind) }

// namespaceAllowed applies allowedRoutes.namespaces.from (Same by default).
// A selector against a namespace whose labels were not read admits it: the
// gap is reported, and "could not tell" must not read as "refused".
func namespaceAllowed(routeNS, gatewayNS string, l gwv1.Listener, nsLabels map[string]map[string]string) bool {
	from := gwv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if ar := l.AllowedRoutes; ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		sel = ar.Namespaces.Selector
	}
	switch from {
	case gwv1.NamespacesFromAll:
		return true
	case gwv1.NamespacesFromSelector:
		ls, ok := nsLabels[routeNS]
		if !ok || sel == nil {
			return true
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		return err == nil && s.Matches(labels.Set(ls))
	case gwv1.NamespacesFromNone:
		return false
	}
	return routeNS == gatewayNS
}

func namespacesText(l gwv1.Listener) string {
	ar := l.AllowedRoutes
	if ar == nil || ar.Namespaces == nil || ar.Namespaces.From == nil || *ar.Namespaces.From == gwv1.NamespacesFromSame {
		return "the Gateway's own namespace"
	}
	if *ar.Namespaces.From == gwv1.NamespacesFromSelector && ar.Namespaces.Selector != nil {
		return "namespaces labelled " + metav1.FormatLabelSelector(ar.Namespaces.Selector)
	}
	return string(*ar.Namespaces.From)
}

// intersectHostnames is the Gateway API's hostname intersection of a
// listener and a route: a listener without a hostname, or a route without
// hostnames, matches everything; otherwise each route hostname that
// matches the listener's, a wildcard on either side matching by suffix
// (*.example.com matches a.example.com and a.b.example.com, not
// example.com), yields the more specific of the two.
func intersectHostnames(listener *gwv1.Hostname, route []gwv1.Hostname) ([]string, bool) {
	if listener == nil || *listener == "" || len(route) == 0 {
		var all []string
		for _, h := range route {
			all = append(all, string(h))
		}
		if listener != nil && *listener != "" {
			all = []string{string(*listener)}
		}
		return all, true
	}
	var out []string
	for _, h := range route {
		if m, ok := intersectHostname(string(*listener), string(h)); ok {
			out = append(out, m)
		}
	}
	return out, len(out) > 0
}

func intersectHostname(listener, route string) (string, bool) {
	switch {
	case strings.EqualFold(listener, route):
		return route, true
	case strings.HasPrefix(listener, "*.") && strings.HasSuffix(route, listener[1:]) && len(route) > len(listener)-1:
		return route, true
	case strings.HasPrefix(route, "*.") && strings.HasSuffix(listener, route[1:]) && len(listener) > len(route)-1:
		return listener, true
	}
	return "", false
}

func joinHostnames(hs []gwv1.Hostname) string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = string(h)
	}
	return strings.Join(out, ", ")
}
