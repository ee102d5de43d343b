// Package fakeapi serves the few Kubernetes API calls a real kube-proxy needs
// (list and watch, incl. watch-list streaming, of one Node, Services and
// EndpointSlices) so that kube-proxy programs its rules in a test network
// namespace without a cluster. The objects never change after the start.
//
// Bench gives deterministic Services for benchmarks: namespace "bench", names
// "svc-<i>", one TCP port "http" 80 → 8080, ClusterIPs and Pod IPs derived
// from i (IPv4: the same addresses as test/bench/netfilter/kpgen.Bench).
package fakeapi

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Service is one Service with a single TCP port.
type Service struct {
	Namespace, Name string
	ClusterIP       string
	PortName        string // "" = unnamed port
	Port            int32
	TargetPort      int32
	// Endpoints are ready Pod IPs listening on TargetPort.
	Endpoints []string
	// EndpointNode is the endpoints' nodeName ("" = none).
	EndpointNode string
	// EndpointNodes, when set, gives each endpoint its own nodeName
	// (parallel to Endpoints; it wins over EndpointNode).
	EndpointNodes []string `json:",omitempty"`

	// The rest is for Services other than a plain ClusterIP: Type
	// (default ClusterIP), the NodePort (NodePort and LoadBalancer), ClientIP
	// session affinity with AffinitySeconds > 0, externalTrafficPolicy Local,
	// externalIPs, and load-balancer ingress IPs in the status.
	Type            corev1.ServiceType `json:",omitempty"`
	NodePort        int32              `json:",omitempty"`
	AffinitySeconds int32              `json:",omitempty"`
	ETPLocal        bool               `json:",omitempty"`
	// ITPLocal sets internalTrafficPolicy Local.
	ITPLocal        bool     `json:",omitempty"`
	ExternalIPs     []string `json:",omitempty"`
	LoadBalancerIPs []string `json:",omitempty"`

	// SecondaryClusterIP makes the Service dual-stack (RequireDualStack,
	// ClusterIP's family first); SecondaryEndpoints are its endpoints of
	// that family, on the same nodes as Endpoints, in their own
	// EndpointSlice.
	SecondaryClusterIP string   `json:",omitempty"`
	SecondaryEndpoints []string `json:",omitempty"`
}

// Objects returns the Node, Service and EndpointSlice objects the API
// serves, for a test that needs them beside the observation.
func (c Cluster) Objects() (nodes, svcs, slices []any) { return c.objects() }

// Cluster is what the API serves: one Node and its Services.
type Cluster struct {
	NodeName string
	NodeIP   string
	// SecondaryNodeIP is a dual-stack node's address of the other family.
	SecondaryNodeIP string `json:",omitempty"`
	PodCIDR         string // default 10.244.0.0/24 or fd00:10:244::/64, by NodeIP's family
	Services        []Service
	// BenchServices and BenchEndpoints, when BenchServices > 0, add
	// Bench(BenchServices, BenchEndpoints, BenchIPv6) to Services (kept
	// compact so that a Cluster fits in an argument or environment variable).
	BenchServices, BenchEndpoints int
	BenchIPv6                     bool
}

// Single is the Service default/web (port "http" 80 → 8080) with one
// endpoint on the node itself, as the collector's kube-proxy test uses.
func Single(nodeName, nodeIP, clusterIP, podIP string) Cluster {
	return Cluster{NodeName: nodeName, NodeIP: nodeIP, Services: []Service{{Namespace: "default", Name: "web",
		ClusterIP: clusterIP, PortName: "http", Port: 80, TargetPort: 8080, Endpoints: []string{podIP}, EndpointNode: nodeName}}}
}

// Bench is n Services with m endpoints each (see BenchService).
func Bench(n, m int, ipv6 bool) []Service {
	out := make([]Service, 0, n)
	for i := 0; i < n; i++ {
		out = append(out, BenchService(i, m, ipv6))
	}
	return out
}

// BenchService is Service i of Bench: bench/svc-<i>, port "http" 80 → 8080.
// IPv4: ClusterIP 10.100.<i/250>.<i%250+1>, endpoint k = i*m+j at
// 10.<200+k/62500>.<(k/250)%250>.<k%250+1> (kpgen's addresses for m = 4).
// IPv6: ClusterIP fd00:100::<i+1>, endpoint k at fd00:200::<k+1> (hex).
func BenchService(i, m int, ipv6 bool) Service {
	s := Service{Namespace: "bench", Name: fmt.Sprintf("svc-%d", i), PortName: "http", Port: 80, TargetPort: 8080}
	if ipv6 {
		s.ClusterIP = fmt.Sprintf("fd00:100::%x", i+1)
	} else {
		s.ClusterIP = fmt.Sprintf("10.100.%d.%d", i/250, i%250+1)
	}
	for j := 0; j < m; j++ {
		k := i*m + j
		if ipv6 {
			s.Endpoints = append(s.Endpoints, fmt.Sprintf("fd00:200::%x", k+1))
		} else {
			s.Endpoints = append(s.Endpoints, fmt.Sprintf("10.%d.%d.%d", 200+k/62500, (k/250)%250, k%250+1))
		}
	}
	return s
}

// Encode and Decode carry a Cluster through a command-line argument.
func (c Cluster) Encode() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Decode is the inverse of Encode.
func Decode(s string) (Cluster, error) {
	var c Cluster
	err := json.Unmarshal([]byte(s), &c)
	return c, err
}

func family(ip string) corev1.IPFamily {
	if a, err := netip.ParseAddr(ip); err == nil && a.Is6() && !a.Is4In6() {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// maxSliceEndpoints is the EndpointSlice controller's default split size.
const maxSliceEndpoints = 100

// objects builds the Node, Service and EndpointSlice objects.
func (c Cluster) objects() (nodes, svcs, slices []any) {
	podCIDR := c.PodCIDR
	if podCIDR == "" {
		podCIDR = map[corev1.IPFamily]string{corev1.IPv4Protocol: "10.244.0.0/24", corev1.IPv6Protocol: "fd00:10:244::/64"}[family(c.NodeIP)]
	}
	n := corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: c.NodeName, ResourceVersion: "1", UID: "node-uid"},
		Spec:       corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: c.NodeIP}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	if c.SecondaryNodeIP != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: c.SecondaryNodeIP})
		second := map[corev1.IPFamily]string{corev1.IPv4Protocol: "10.244.0.0/24", corev1.IPv6Protocol: "fd00:10:244::/64"}[family(c.SecondaryNodeIP)]
		n.Spec.PodCIDRs = append(n.Spec.PodCIDRs, second)
	}
	nodes = []any{n}
	all := c.Services
	if c.BenchServices > 0 {
		all = append(append([]Service(nil), all...), Bench(c.BenchServices, c.BenchEndpoints, c.BenchIPv6)...)
	}
	for i, s := range all {
		fam := family(s.ClusterIP)
		svc := corev1.Service{TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, ResourceVersion: "1", UID: k8stypes.UID(fmt.Sprintf("svc-%d", i))},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: s.ClusterIP, ClusterIPs: []string{s.ClusterIP},
				IPFamilies: []corev1.IPFamily{fam}, SessionAffinity: corev1.ServiceAffinityNone,
				Ports: []corev1.ServicePort{{Name: s.PortName, Protocol: corev1.ProtocolTCP, Port: s.Port,
					TargetPort: intstr.FromInt32(s.TargetPort), NodePort: s.NodePort}}}}
		if s.Type != "" {
			svc.Spec.Type = s.Type
		}
		if s.SecondaryClusterIP != "" {
			policy := corev1.IPFamilyPolicyRequireDualStack
			svc.Spec.IPFamilyPolicy = &policy
			svc.Spec.ClusterIPs = append(svc.Spec.ClusterIPs, s.SecondaryClusterIP)
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, family(s.SecondaryClusterIP))
		}
		if s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer || len(s.ExternalIPs) > 0 {
			svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
			if s.ETPLocal {
				svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			}
		}
		if s.ITPLocal {
			local := corev1.ServiceInternalTrafficPolicyLocal
			svc.Spec.InternalTrafficPolicy = &local
		}
		if s.AffinitySeconds > 0 {
			svc.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			svc.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: &s.AffinitySeconds}}
		}
		svc.Spec.ExternalIPs = s.ExternalIPs
		for _, ip := range s.LoadBalancerIPs {
			svc.Status.LoadBalancer.Ingress = append(svc.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		svcs = append(svcs, svc)
		slices = append(slices, serviceSlices(i, s, fam, s.Endpoints, "")...)
		if s.SecondaryClusterIP != "" {
			slices = append(slices, serviceSlices(i, s, family(s.SecondaryClusterIP), s.SecondaryEndpoints, "-2nd")...)
		}
	}
	return nodes, svcs, slices
}

// serviceSlices are the EndpointSlices of Service i for one family: eps
// split at maxSliceEndpoints, named <service><suffix>-<part>, all ready.
func serviceSlices(i int, s Service, fam corev1.IPFamily, eps []string, suffix string) []any {
	ready := true
	addrType := discoveryv1.AddressTypeIPv4
	if fam == corev1.IPv6Protocol {
		addrType = discoveryv1.AddressTypeIPv6
	}
	var slices []any
	port, proto, portName := s.TargetPort, corev1.ProtocolTCP, s.PortName
	for part := 0; part*maxSliceEndpoints < len(eps) || part == 0; part++ {
		sl := discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: fmt.Sprintf("%s%s-%05d", s.Name, suffix, part), ResourceVersion: "1",
				UID:    k8stypes.UID(fmt.Sprintf("slice-%d%s-%d", i, suffix, part)),
				Labels: map[string]string{discoveryv1.LabelServiceName: s.Name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
			AddressType: addrType,
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}}}
		lo := min(part*maxSliceEndpoints, len(eps))
		for k, ip := range eps[lo:min((part+1)*maxSliceEndpoints, len(eps))] {
			e := discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready}}
			if s.EndpointNode != "" {
				e.NodeName = &s.EndpointNode
			}
			if lo+k < len(s.EndpointNodes) && s.EndpointNodes[lo+k] != "" {
				e.NodeName = &s.EndpointNodes[lo+k]
			}
			sl.Endpoints = append(sl.Endpoints, e)
		}
		slices = append(slices, sl)
	}
	return slices
}

// Handler serves the Cluster: GET lists and watches of nodes, services,
// endpointslices and (no) servicecidrs (cluster-wide, the way kube-proxy asks),
// the namespaced reads of a trace (see scoped); writes (events) are
// accepted and dropped; anything else is 404.
func (c Cluster) Handler() http.Handler {
	nodes, svcs, slices := c.objects()
	type list struct {
		kind, apiVersion string
		items            []any
	}
	lists := map[string]list{
		"/api/v1/nodes":    {"NodeList", "v1", nodes},
		"/api/v1/services": {"ServiceList", "v1", svcs},
		"/apis/discovery.k8s.io/v1/endpointslices": {"EndpointSliceList", "discovery.k8s.io/v1", slices},
		// kube-proxy watches ServiceCIDRs (for its cluster-IP range rules); none.
		"/apis/networking.k8s.io/v1/servicecidrs": {"ServiceCIDRList", "networking.k8s.io/v1", []any{}},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet {
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{}`))
			return
		}
		l, ok := lists[r.URL.Path]
		if !ok {
			obj, nl, found := c.scoped(r, nodes, svcs, slices)
			switch {
			case !found:
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
				return
			case obj != nil:
				_ = json.NewEncoder(w).Encode(obj)
				return
			}
			l = list(nl)
		}
		q := r.URL.Query()
		if q.Get("watch") != "true" && q.Get("watch") != "1" {
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": l.kind, "apiVersion": l.apiVersion,
				"metadata": map[string]any{"resourceVersion": "1"}, "items": l.items})
			return
		}
		enc := json.NewEncoder(w)
		if q.Get("sendInitialEvents") == "true" {
			for _, it := range l.items {
				_ = enc.Encode(map[string]any{"type": "ADDED", "object": it})
			}
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{
				"kind": strings.TrimSuffix(l.kind, "List"), "apiVersion": l.apiVersion,
				"metadata": map[string]any{"resourceVersion": "1", "annotations": map[string]string{"k8s.io/initial-events-end": "true"}}}})
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		<-r.Context().Done()
	})
}

// scopedList is a list the namespaced routes serve.
type scopedList struct {
	kind, apiVersion string
	items            []any
}

// scoped serves what svctrace's own trace reads, the way a client-go
// clientset asks for it: a Service, Namespace or Node by name, and the
// Services, EndpointSlices (by kubernetes.io/service-name selector), Pods,
// NetworkPolicies and Events of one namespace. There are no Pods,
// NetworkPolicies or Events, and the namespaces are default, kube-system
// and those of the Services. found is false for a path or object that is not
// served (404); obj is set for a single object, else the list is.
func (c Cluster) scoped(r *http.Request, nodes, svcs, slices []any) (obj any, l scopedList, found bool) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var group []string
	switch {
	case len(parts) >= 2 && parts[0] == "api" && parts[1] == "v1":
		group, parts = parts[:2], parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		group, parts = parts[:3], parts[3:]
	default:
		return nil, l, false
	}
	apiVersion := strings.Join(group[1:], "/")
	if len(parts) == 2 && parts[0] == "nodes" {
		for _, n := range nodes {
			if n.(corev1.Node).Name == parts[1] {
				return n, l, true
			}
		}
		return nil, l, false
	}
	if len(parts) < 2 || parts[0] != "namespaces" {
		return nil, l, false
	}
	ns := parts[1]
	namespaces := map[string]bool{"default": true, "kube-system": true}
	for _, s := range svcs {
		namespaces[s.(corev1.Service).Namespace] = true
	}
	if len(parts) == 2 {
		if !namespaces[ns] {
			return nil, l, false
		}
		return corev1.Namespace{TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, ResourceVersion: "1"}}, l, true
	}
	resource := parts[2]
	var items []any
	switch resource {
	case "services":
		for _, s := range svcs {
			if svc := s.(corev1.Service); svc.Namespace == ns {
				if len(parts) == 4 && svc.Name == parts[3] {
					return svc, l, true
				}
				items = append(items, svc)
			}
		}
	case "endpointslices":
		selector := r.URL.Query().Get("labelSelector")
		for _, s := range slices {
			if sl := s.(discoveryv1.EndpointSlice); sl.Namespace == ns &&
				(selector == "" || selector == discoveryv1.LabelServiceName+"="+sl.Labels[discoveryv1.LabelServiceName]) {
				items = append(items, sl)
			}
		}
	case "pods", "networkpolicies", "events":
	default:
		return nil, l, false
	}
	if len(parts) != 3 {
		return nil, l, false
	}
	kind := map[string]string{"services": "ServiceList", "endpointslices": "EndpointSliceList", "pods": "PodList",
		"networkpolicies": "NetworkPolicyList", "events": "EventList"}[resource]
	if items == nil {
		items = []any{}
	}
	return nil, scopedList{kind, apiVersion, items}, true
}

// Serve listens on addr (host:port) and serves the Cluster until it fails.
func (c Cluster) Serve(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return http.Serve(l, c.Handler())
}

// Kubeconfig is a kubeconfig for a fake API at addr (host:port, no TLS, no
// credentials).
func Kubeconfig(addr string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "http://%s"}}]
users: [{name: fake, user: {}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
current-context: fake
`, addr)
}

// KubeProxyConfig is a KubeProxyConfiguration for a kube-proxy in a test
// namespace: mode "iptables" or "nftables", bound to nodeIP, metrics on
// 127.0.0.1:10249 and healthz on 127.0.0.1:10256 of that namespace. The
// conntrack settings are all zero so that kube-proxy leaves the host's global
// conntrack sysctls alone, and localhostNodePorts is off so that it does not
// set route_localnet.
func KubeProxyConfig(mode, nodeName, nodeIP, clusterCIDR, kubeconfigPath string) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: %s
hostnameOverride: %s
clusterCIDR: %s
bindAddress: %s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
iptables: {localhostNodePorts: false}
clientConnection: {kubeconfig: %q}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, mode, nodeName, clusterCIDR, nodeIP, kubeconfigPath)
}
