package frontdoor

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestIntersectHostnames follows the Gateway API's hostname rules: exact
// names, a wildcard on either side matching by suffix and never the bare
// parent domain, and an empty side matching everything.
func TestIntersectHostnames(t *testing.T) {
	tests := []struct {
		listener string // "" for none
		route    []gwv1.Hostname
		want     string // the intersection joined by ",", "-" for no match
	}{
		{"", []gwv1.Hostname{"a.example.com"}, "a.example.com"},
		{"a.example.com", nil, "a.example.com"},
		{"a.example.com", []gwv1.Hostname{"a.example.com"}, "a.example.com"},
		{"a.example.com", []gwv1.Hostname{"b.example.com"}, "-"},
		{"*.example.com", []gwv1.Hostname{"a.example.com"}, "a.example.com"},
		{"*.example.com", []gwv1.Hostname{"a.b.example.com"}, "a.b.example.com"},
		{"*.example.com", []gwv1.Hostname{"example.com"}, "-"},
		{"a.example.com", []gwv1.Hostname{"*.example.com"}, "a.example.com"},
		{"example.com", []gwv1.Hostname{"*.example.com"}, "-"},
		{"*.example.com", []gwv1.Hostname{"*.a.example.com"}, "*.a.example.com"},
		{"*.a.example.com", []gwv1.Hostname{"*.example.com"}, "*.a.example.com"},
		{"*.example.com", []gwv1.Hostname{"x.example.org", "y.example.com"}, "y.example.com"},
	}
	for _, tt := range tests {
		var l *gwv1.Hostname
		if tt.listener != "" {
			h := gwv1.Hostname(tt.listener)
			l = &h
		}
		got, ok := intersectHostnames(l, tt.route)
		s := strings.Join(got, ",")
		if !ok {
			s = "-"
		}
		if s != tt.want {
			t.Errorf("listener %q, route %v: %q, want %q", tt.listener, tt.route, s, tt.want)
		}
	}
}

// TestAllowedRoutes: a listener admits a route by kind (its protocol's, or
// allowedRoutes.kinds) and by namespace (Same by default).
func TestAllowedRoutes(t *testing.T) {
	same := gwv1.NamespacesFromSame
	sel := gwv1.NamespacesFromSelector
	route := &Route{Kind: KindHTTPRoute}
	route.Namespace = "shop"
	tests := []struct {
		name     string
		listener gwv1.Listener
		labels   map[string]map[string]string
		why      string // "" when admitted
	}{
		{"default namespaces are Same", gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType}, nil,
			"admits routes from the Gateway's own namespace only, not from namespace shop"},
		{"explicit Same", gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType,
			AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &same}}}, nil, "not from namespace shop"},
		{"TCP takes no HTTPRoute", gwv1.Listener{Name: "db", Protocol: gwv1.TCPProtocolType}, nil, "does not take HTTPRoute (it takes TCPRoute)"},
		{"kinds restrict", gwv1.Listener{Name: "grpc", Protocol: gwv1.HTTPSProtocolType,
			AllowedRoutes: &gwv1.AllowedRoutes{Kinds: []gwv1.RouteGroupKind{{Kind: KindGRPCRoute}}}}, nil, "it takes GRPCRoute"},
		{"selector matches", gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType,
			AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &sel,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}}}},
			map[string]map[string]string{"shop": {"team": "shop"}}, ""},
		{"selector does not match", gwv1.Listener{Name: "http", Protocol: gwv1.HTTPProtocolType,
			AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &sel,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "infra"}}}}},
			map[string]map[string]string{"shop": {"team": "shop"}}, "namespaces labelled team=infra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := &gwv1.Gateway{Spec: gwv1.GatewaySpec{Listeners: []gwv1.Listener{tt.listener}}}
			gw.Namespace = "infra"
			v := admittingListeners(route, gw, gwv1.ParentReference{Name: "gw"}, tt.labels)
			if len(v) != 1 {
				t.Fatalf("%d verdicts", len(v))
			}
			if tt.why == "" {
				if !v[0].admitted {
					t.Errorf("not admitted: %s", v[0].why)
				}
				return
			}
			if v[0].admitted || !strings.Contains(v[0].why, tt.why) {
				t.Errorf("admitted %v, why %q; want %q", v[0].admitted, v[0].why, tt.why)
			}
		})
	}
}
