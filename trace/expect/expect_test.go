package expect

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func ptr[T any](v T) *T { return &v }

type epSpec struct {
	ip, node                    string
	ready, serving, terminating *bool
	zones                       []string
}

func expectSlice(portName string, port int32, eps ...epSpec) discoveryv1.EndpointSlice {
	sl := discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr(portName), Port: ptr(port), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, e := range eps {
		ep := discoveryv1.Endpoint{Addresses: []string{e.ip}, NodeName: ptr(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: e.ready, Serving: e.serving, Terminating: e.terminating}}
		if e.zones != nil {
			ep.Hints = &discoveryv1.EndpointHints{}
			for _, z := range e.zones {
				ep.Hints.ForZones = append(ep.Hints.ForZones, discoveryv1.ForZone{Name: z})
			}
		}
		sl.Endpoints = append(sl.Endpoints, ep)
	}
	return sl
}

func expectService(mut func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.50", ClusterIPs: []string{"10.96.0.50"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}},
	}
	if mut != nil {
		mut(s)
	}
	return s
}

func TestExpectForNode(t *testing.T) {
	T, F := ptr(true), ptr(false)
	local := ptr(corev1.ServiceInternalTrafficPolicyLocal)
	tests := []struct {
		name               string
		svc                *corev1.Service
		eps                []epSpec
		node, zone         string
		internal, external string
		hasAny, fallback   bool
		topology           string
	}{
		{name: "ready endpoints, string order", svc: expectService(nil), node: "n1",
			eps:      []epSpec{{ip: "10.244.2.1", node: "n2"}, {ip: "10.244.10.1", node: "n1"}, {ip: "10.244.3.3", node: "n1", ready: F, serving: T, terminating: T}},
			internal: "[10.244.10.1:8080 10.244.2.1:8080]", external: "[10.244.10.1:8080 10.244.2.1:8080]", hasAny: true},
		{name: "terminating fallback only when nothing is ready", svc: expectService(nil), node: "n1",
			eps:      []epSpec{{ip: "10.244.1.1", node: "n1", ready: F, serving: T, terminating: T}, {ip: "10.244.1.2", node: "n1", ready: F, serving: F, terminating: T}},
			internal: "[10.244.1.1:8080]", external: "[10.244.1.1:8080]", hasAny: true, fallback: true},
		{name: "no endpoints at all", svc: expectService(nil), node: "n1",
			eps:      []epSpec{{ip: "10.244.1.2", node: "n1", ready: F, serving: F}},
			internal: "[]", external: "[]"},
		{name: "ITP Local on a node without local endpoints", svc: expectService(func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = local }), node: "n1",
			eps:      []epSpec{{ip: "10.244.2.1", node: "n2"}},
			internal: "[]", external: "[]", hasAny: true},
		{name: "ETP Local NodePort: external uses local only", svc: expectService(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}), node: "n1",
			eps:      []epSpec{{ip: "10.244.2.1", node: "n2"}, {ip: "10.244.1.1", node: "n1"}},
			internal: "[10.244.1.1:8080 10.244.2.1:8080]", external: "[10.244.1.1:8080]", hasAny: true},
		{name: "ETP Local on a ClusterIP without external IPs is ignored", svc: expectService(func(s *corev1.Service) {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		}), node: "n1",
			eps:      []epSpec{{ip: "10.244.2.1", node: "n2"}},
			internal: "[10.244.2.1:8080]", external: "[10.244.2.1:8080]", hasAny: true},
		{name: "zone hints filter cluster endpoints", svc: expectService(nil), node: "n1", zone: "a",
			eps:      []epSpec{{ip: "10.244.1.1", node: "n1", zones: []string{"a"}}, {ip: "10.244.2.1", node: "n2", zones: []string{"b"}}},
			internal: "[10.244.1.1:8080]", external: "[10.244.1.1:8080]", hasAny: true, topology: corev1.ServiceTrafficDistributionPreferSameZone},
		{name: "one endpoint without hint disables hints", svc: expectService(nil), node: "n1", zone: "a",
			eps:      []epSpec{{ip: "10.244.1.1", node: "n1", zones: []string{"a"}}, {ip: "10.244.2.1", node: "n2"}},
			internal: "[10.244.1.1:8080 10.244.2.1:8080]", external: "[10.244.1.1:8080 10.244.2.1:8080]", hasAny: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sl := expectSlice("http", 8080, tt.eps...)
			got := ExpectForNode(tt.svc, []discoveryv1.EndpointSlice{sl}, tt.node, map[string]string{corev1.LabelTopologyZone: tt.zone})
			if len(got) != 1 {
				t.Fatalf("got %d port expectations", len(got))
			}
			pe := got[0]
			if s := fmt.Sprint(EndpointStrings(pe.Internal)); s != tt.internal {
				t.Errorf("internal = %s, want %s", s, tt.internal)
			}
			if s := fmt.Sprint(EndpointStrings(pe.External)); s != tt.external {
				t.Errorf("external = %s, want %s", s, tt.external)
			}
			if pe.HasAnyEndpoints != tt.hasAny || pe.FallbackTerminating != tt.fallback || pe.TopologyMode != tt.topology {
				t.Errorf("hasAny=%v fallback=%v topology=%q, want %v %v %q", pe.HasAnyEndpoints, pe.FallbackTerminating, pe.TopologyMode, tt.hasAny, tt.fallback, tt.topology)
			}
		})
	}
}

func TestExpectForNodeSkipsWhatKubeProxySkips(t *testing.T) {
	for name, svc := range map[string]*corev1.Service{
		"headless":     expectService(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }),
		"externalname": expectService(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }),
		"proxy name": expectService(func(s *corev1.Service) {
			s.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "other"}
		}),
	} {
		if got := ExpectForNode(svc, nil, "n1", nil); got != nil {
			t.Errorf("%s: got %v, want nil", name, got)
		}
	}
}

// TestEndpointsForMatchesKubeProxyPortKey: kube-proxy's EndpointSliceCache
// keys slice ports by name AND protocol, and skips a port with a nil name
// or a nil or zero port number (endpointInfoByServicePort).
func TestEndpointsForMatchesKubeProxyPortKey(t *testing.T) {
	udp, tcp := corev1.ProtocolUDP, corev1.ProtocolTCP
	tests := []struct {
		name  string
		ports []discoveryv1.EndpointPort
		svc   corev1.ServicePort
		want  string
	}{
		{"name and protocol match", []discoveryv1.EndpointPort{{Name: ptr("dns"), Port: ptr(int32(53)), Protocol: &udp}},
			corev1.ServicePort{Name: "dns", Protocol: udp, Port: 53}, "[10.244.1.1:53]"},
		{"same name, other protocol", []discoveryv1.EndpointPort{{Name: ptr("dns"), Port: ptr(int32(53)), Protocol: &tcp}},
			corev1.ServicePort{Name: "dns", Protocol: udp, Port: 53}, "[]"},
		{"the right protocol of two", []discoveryv1.EndpointPort{{Name: ptr("dns"), Port: ptr(int32(5353)), Protocol: &tcp},
			{Name: ptr("dns-udp"), Port: ptr(int32(53)), Protocol: &udp}},
			corev1.ServicePort{Name: "dns", Protocol: tcp, Port: 53}, "[10.244.1.1:5353]"},
		{"nil name is not the unnamed port", []discoveryv1.EndpointPort{{Port: ptr(int32(80)), Protocol: &tcp}},
			corev1.ServicePort{Protocol: tcp, Port: 80}, "[]"},
		{"nil port number", []discoveryv1.EndpointPort{{Name: ptr(""), Protocol: &tcp}},
			corev1.ServicePort{Protocol: tcp, Port: 80}, "[]"},
		{"port 0", []discoveryv1.EndpointPort{{Name: ptr(""), Port: ptr(int32(0)), Protocol: &tcp}},
			corev1.ServicePort{Protocol: tcp, Port: 80}, "[]"},
		{"unset Service protocol is TCP", []discoveryv1.EndpointPort{{Name: ptr(""), Port: ptr(int32(8080)), Protocol: &tcp}},
			corev1.ServicePort{Port: 80}, "[10.244.1.1:8080]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sl := expectSlice("x", 1, epSpec{ip: "10.244.1.1", node: "n1"})
			sl.Ports = tt.ports
			svc := expectService(func(s *corev1.Service) { s.Spec.Ports = []corev1.ServicePort{tt.svc} })
			got := ExpectForNode(svc, []discoveryv1.EndpointSlice{sl}, "n1", nil)
			if len(got) != 1 {
				t.Fatalf("got %d port expectations", len(got))
			}
			if s := fmt.Sprint(EndpointStrings(got[0].Internal)); s != tt.want {
				t.Errorf("internal = %s, want %s", s, tt.want)
			}
		})
	}
}

// TestDuplicateEndpointsPickedAsKubeProxyDoes: kube-proxy's addEndpoints
// (endpointslicecache.go) stores a copy of an IP:port unless one is stored
// already and the new copy is terminating. So a non-terminating copy beats
// a terminating one whatever the order, among non-terminating copies the
// last one read wins, and among terminating ones the first.
func TestDuplicateEndpointsPickedAsKubeProxyDoes(t *testing.T) {
	T, F := ptr(true), ptr(false)
	tests := []struct {
		name string
		eps  []epSpec
		want string
	}{
		{"non-terminating beats terminating, terminating first",
			[]epSpec{{ip: "10.244.1.5", node: "n1", ready: F, serving: T, terminating: T}, {ip: "10.244.1.5", node: "n1", ready: F, serving: F, terminating: F},
				{ip: "10.244.2.7", node: "n2", ready: F, serving: T, terminating: T}},
			"[10.244.2.7:8080]"},
		{"non-terminating beats terminating, terminating last",
			[]epSpec{{ip: "10.244.1.5", node: "n1", ready: T}, {ip: "10.244.1.5", node: "n1", ready: F, serving: T, terminating: T}},
			"[10.244.1.5:8080]"},
		{"last of two non-terminating copies wins",
			[]epSpec{{ip: "10.244.1.5", node: "n1", ready: F, serving: F, terminating: F}, {ip: "10.244.1.5", node: "n1", ready: T},
				{ip: "10.244.2.7", node: "n2", ready: T}},
			"[10.244.1.5:8080 10.244.2.7:8080]"},
		{"first of two terminating copies wins",
			[]epSpec{{ip: "10.244.1.5", node: "n1", ready: F, serving: T, terminating: T}, {ip: "10.244.1.5", node: "n1", ready: F, serving: F, terminating: T}},
			"[10.244.1.5:8080]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sl := expectSlice("http", 8080, tt.eps...)
			got := ExpectForNode(expectService(nil), []discoveryv1.EndpointSlice{sl}, "n1", nil)
			if s := fmt.Sprint(EndpointStrings(got[0].Internal)); s != tt.want {
				t.Errorf("internal = %s, want %s", s, tt.want)
			}
		})
	}
}

func TestExpectForNodeIgnoresWhatKubeProxyIgnores(t *testing.T) {
	svc := expectService(func(s *corev1.Service) {
		s.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": ""}
	})
	if got := ExpectForNode(svc, nil, "n1", nil); got != nil {
		t.Errorf("empty service-proxy-name: got %v, want nil", got)
	}
	sl := expectSlice("http", 8080, epSpec{ip: "10.244.1.1", node: "n1"})
	sl.Labels = map[string]string{corev1.IsHeadlessService: ""}
	got := ExpectForNode(expectService(nil), []discoveryv1.EndpointSlice{sl}, "n1", nil)
	if len(got) != 1 || got[0].HasAnyEndpoints || len(got[0].Internal) != 0 {
		t.Errorf("slice labelled headless: got %+v, want no endpoints", got)
	}
}

func TestNodeIndependent(t *testing.T) {
	local := corev1.ServiceInternalTrafficPolicyLocal
	hinted := discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"},
		Hints: &discoveryv1.EndpointHints{ForNodes: []discoveryv1.ForNode{{Name: "n1"}}}}}}
	zoned := discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"},
		Hints: &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "z1"}}}}}}
	for _, tc := range []struct {
		name   string
		svc    *corev1.Service
		slices []discoveryv1.EndpointSlice
		want   bool
	}{
		{"cluster policies", &corev1.Service{}, []discoveryv1.EndpointSlice{zoned}, true},
		{"internal Local", &corev1.Service{Spec: corev1.ServiceSpec{InternalTrafficPolicy: &local}}, nil, false},
		{"external Local", &corev1.Service{Spec: corev1.ServiceSpec{ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal}}, nil, false},
		{"node hints", &corev1.Service{}, []discoveryv1.EndpointSlice{hinted}, false},
		{"no Service", nil, nil, false},
	} {
		if got := NodeIndependent(tc.svc, tc.slices); got != tc.want {
			t.Errorf("%s: NodeIndependent = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestExternallyAccessiblePerFamily follows newBaseServiceInfo: each
// family's proxier sees only its own family's externalIPs and load-balancer
// IPs, so only a NodePort makes every family externally accessible.
func TestExternallyAccessiblePerFamily(t *testing.T) {
	dual := func(mut func(*corev1.Service)) *corev1.Service {
		return expectService(func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
			s.Spec.ClusterIPs = []string{"10.96.0.50", "fd00:96::50"}
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			mut(s)
		})
	}
	tests := []struct {
		name       string
		svc        *corev1.Service
		ipv4, ipv6 bool
	}{
		{"IPv4 externalIP only", dual(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.10"} }), true, false},
		{"IPv6 externalIP only", dual(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"2001:db8::10"} }), false, true},
		{"an LB IP per family", dual(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.20"}, {IP: "2001:db8::20"}}
		}), true, true},
		{"IPv6 LB IP in Proxy mode, IPv4 in VIP mode", dual(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeLoadBalancer
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.20"}, {IP: "2001:db8::20", IPMode: ptr(corev1.LoadBalancerIPModeProxy)}}
		}), true, false},
		{"a NodePort: both", dual(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
		}), true, true},
		{"nothing external", dual(func(*corev1.Service) {}), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[corev1.IPFamily]PortExpectation{}
			for _, pe := range ExpectForNode(tt.svc, nil, "n1", nil) {
				got[pe.Family] = pe
			}
			for fam, want := range map[corev1.IPFamily]bool{corev1.IPv4Protocol: tt.ipv4, corev1.IPv6Protocol: tt.ipv6} {
				pe := got[fam]
				if pe.ExternallyAccessible != want {
					t.Errorf("%s: externally accessible %v, want %v", fam, pe.ExternallyAccessible, want)
				}
				if pe.ExternalPolicyLocal != want {
					t.Errorf("%s: external policy Local %v, want %v (ETP applies only where external traffic exists)", fam, pe.ExternalPolicyLocal, want)
				}
			}
		})
	}
}
