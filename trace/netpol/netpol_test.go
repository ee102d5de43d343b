package netpol

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ---- builders -------------------------------------------------------------

type cport struct {
	name  string
	num   int32
	proto corev1.Protocol
}

func mkPod(ns, name string, lbl map[string]string, ip string, ports ...cport) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbl}}
	c := corev1.Container{Name: "app"}
	for _, cp := range ports {
		c.Ports = append(c.Ports, corev1.ContainerPort{Name: cp.name, ContainerPort: cp.num, Protocol: cp.proto})
	}
	p.Spec.Containers = []corev1.Container{c}
	if ip != "" {
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	return p
}

func sel(kv ...string) *metav1.LabelSelector {
	s := &metav1.LabelSelector{MatchLabels: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		s.MatchLabels[kv[i]] = kv[i+1]
	}
	return s
}

func podPeer(s *metav1.LabelSelector) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: s}
}

func nsPeer(s *metav1.LabelSelector) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: s}
}

func bothPeer(pod, ns *metav1.LabelSelector) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{PodSelector: pod, NamespaceSelector: ns}
}

func ipPeer(cidr string, except ...string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr, Except: except}}
}

func tcp(n int32) networkingv1.NetworkPolicyPort {
	p := intstr.FromInt32(n)
	return networkingv1.NetworkPolicyPort{Port: &p} // protocol left unset: defaults to TCP
}

func proto(pr corev1.Protocol, n int32) networkingv1.NetworkPolicyPort {
	p := intstr.FromInt32(n)
	return networkingv1.NetworkPolicyPort{Protocol: &pr, Port: &p}
}

func rng(n, end int32) networkingv1.NetworkPolicyPort {
	p := intstr.FromInt32(n)
	return networkingv1.NetworkPolicyPort{Port: &p, EndPort: &end}
}

func named(name string) networkingv1.NetworkPolicyPort {
	p := intstr.FromString(name)
	return networkingv1.NetworkPolicyPort{Port: &p}
}

func ing(ports []networkingv1.NetworkPolicyPort, from ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{Ports: ports, From: from}
}

func egr(ports []networkingv1.NetworkPolicyPort, to ...networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyEgressRule {
	return networkingv1.NetworkPolicyEgressRule{Ports: ports, To: to}
}

func ports(p ...networkingv1.NetworkPolicyPort) []networkingv1.NetworkPolicyPort { return p }

type polOpt func(*networkingv1.NetworkPolicy)

func types(t ...networkingv1.PolicyType) polOpt {
	return func(p *networkingv1.NetworkPolicy) { p.Spec.PolicyTypes = t }
}

func ingress(r ...networkingv1.NetworkPolicyIngressRule) polOpt {
	return func(p *networkingv1.NetworkPolicy) { p.Spec.Ingress = append(p.Spec.Ingress, r...) }
}

func egress(r ...networkingv1.NetworkPolicyEgressRule) polOpt {
	return func(p *networkingv1.NetworkPolicy) { p.Spec.Egress = append(p.Spec.Egress, r...) }
}

func mkPol(ns, name string, podSel *metav1.LabelSelector, opts ...polOpt) networkingv1.NetworkPolicy {
	p := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if podSel != nil {
		p.Spec.PodSelector = *podSel
	}
	for _, o := range opts {
		o(&p)
	}
	return p
}

const (
	ingressT = networkingv1.PolicyTypeIngress
	egressT  = networkingv1.PolicyTypeEgress
)

var (
	web1 = mkPod("shop", "web-1", map[string]string{"app": "web"}, "10.0.2.10", cport{"http", 8080, ""}, cport{"metrics", 9090, corev1.ProtocolTCP})
	// web2 names 9090 "http": a named policy port means another number here.
	web2 = mkPod("shop", "web-2", map[string]string{"app": "web"}, "10.0.3.10", cport{"http", 9090, ""}, cport{"alt", 8080, ""})

	feShop = Client{Kind: ClientPod, Namespace: "shop", Name: "frontend-abc", Labels: map[string]string{"app": "frontend"},
		IPs: []netip.Addr{netip.MustParseAddr("10.0.1.5")}}
	feWeb = Client{Kind: ClientPod, Namespace: "web", Name: "frontend-abc", Labels: map[string]string{"app": "frontend"},
		IPs: []netip.Addr{netip.MustParseAddr("10.0.1.5")}}
	node1 = Client{Kind: ClientNode, Name: "worker-1", IPs: []netip.Addr{netip.MustParseAddr("192.168.1.11")}}

	port8080 = []TargetPort{{Name: "http", Port: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}

	nsLabels = map[string]map[string]string{
		"shop":        {"team": "shop"},
		"web":         {"team": "web", "env": "prod"},
		"kube-system": {},
	}

	denyAll = mkPol("shop", "deny-all", &metav1.LabelSelector{}, types(ingressT))
)

// want is what one Decision must say; empty fields are not checked.
type want struct {
	pod      string
	allowed  Verdict
	isolated *bool
	ingress  Verdict
	egress   Verdict // of ClientEgress
	rule     string  // AllowingRule.String(), "-" for nil
	reason   string  // substring of Reason
	sources  []string
	cni      *bool
}

var (
	yes = ptr(true)
	no  = ptr(false)
)

func ptr[T any](v T) *T { return &v }

func TestEvaluate(t *testing.T) {
	cases := []struct {
		name     string
		backends []corev1.Pod
		ports    []TargetPort
		policies []networkingv1.NetworkPolicy
		nsLabels map[string]map[string]string
		unread   []string
		client   Client
		want     []want
	}{
		{
			name:   "no policy: not isolated, allowed",
			client: feShop,
			want:   []want{{allowed: Allowed, isolated: no, rule: "-", reason: "no NetworkPolicy selects the Pod for ingress"}},
		},
		{
			name:     "default deny ingress",
			policies: []networkingv1.NetworkPolicy{denyAll},
			client:   feWeb,
			want: []want{{allowed: Denied, isolated: yes, rule: "-",
				reason: "policy shop/deny-all selects the Pod and no ingress rule admits pod web/frontend-abc on 8080/TCP"}},
		},
		{
			name:     "policy without policyTypes and without rules defaults to Ingress: deny all",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "empty", &metav1.LabelSelector{})},
			client:   feShop,
			want:     []want{{allowed: Denied, isolated: yes}},
		},
		{
			name: "podSelector peer admits same-namespace client",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "allow-fe", sel("app", "web"),
				ingress(ing(nil, podPeer(sel("app", "frontend")))))},
			client: feShop,
			want:   []want{{allowed: Allowed, isolated: yes, rule: "shop/allow-fe ingress[0]", reason: "admits pod shop/frontend-abc on 8080/TCP"}},
		},
		{
			name: "podSelector peer alone means the policy's namespace only",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "allow-fe", sel("app", "web"),
				ingress(ing(nil, podPeer(sel("app", "frontend")))))},
			client: feWeb,
			want:   []want{{allowed: Denied, isolated: yes, rule: "-"}},
		},
		{
			name: "podSelector with wrong labels",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "allow-fe", sel("app", "web"),
				ingress(ing(nil, podPeer(sel("app", "admin")))))},
			client: feShop,
			want:   []want{{allowed: Denied}},
		},
		{
			name: "namespaceSelector only admits every pod of the namespace",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "allow-web-ns", &metav1.LabelSelector{},
				ingress(ing(nil, nsPeer(sel("team", "web")))))},
			nsLabels: nsLabels,
			client:   feWeb,
			want:     []want{{allowed: Allowed, rule: "shop/allow-web-ns ingress[0]"}},
		},
		{
			name: "namespaceSelector only: other namespace denied",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "allow-web-ns", &metav1.LabelSelector{},
				ingress(ing(nil, nsPeer(sel("team", "web")))))},
			nsLabels: nsLabels,
			client:   feShop,
			want:     []want{{allowed: Denied}},
		},
		{
			name: "namespaceSelector without the namespace's labels is unknown",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "allow-web-ns", &metav1.LabelSelector{},
				ingress(ing(nil, nsPeer(sel("team", "web")))))},
			client: feWeb,
			want:   []want{{allowed: Unknown, isolated: yes, reason: "labels of namespace web were not given"}},
		},
		{
			name: "namespaceSelector on kubernetes.io/metadata.name needs no labels",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "allow-web-ns", &metav1.LabelSelector{},
				ingress(ing(nil, nsPeer(sel(corev1.LabelMetadataName, "web")))))},
			client: feWeb,
			want:   []want{{allowed: Allowed}},
		},
		{
			name: "empty namespaceSelector admits pods of every namespace",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "all-ns", &metav1.LabelSelector{},
				ingress(ing(nil, nsPeer(&metav1.LabelSelector{}))))},
			client: feWeb,
			want:   []want{{allowed: Allowed}},
		},
		{
			name: "podSelector AND namespaceSelector in one peer: pod labels mismatch",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "and", &metav1.LabelSelector{},
				ingress(ing(nil, bothPeer(sel("app", "admin"), sel("team", "web")))))},
			nsLabels: nsLabels,
			client:   feWeb,
			want:     []want{{allowed: Denied, reason: "no ingress rule admits"}},
		},
		{
			name: "podSelector AND namespaceSelector in one peer: both match",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "and", &metav1.LabelSelector{},
				ingress(ing(nil, bothPeer(sel("app", "frontend"), sel("team", "web")))))},
			nsLabels: nsLabels,
			client:   feWeb,
			want:     []want{{allowed: Allowed}},
		},
		{
			name: "podSelector AND namespaceSelector: namespace mismatch",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "and", &metav1.LabelSelector{},
				ingress(ing(nil, bothPeer(sel("app", "frontend"), sel("team", "web")))))},
			nsLabels: nsLabels,
			client:   feShop,
			want:     []want{{allowed: Denied}},
		},
		{
			name: "pod mismatch decides Denied even when the namespace labels are unknown (AND)",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "and", &metav1.LabelSelector{},
				ingress(ing(nil, bothPeer(sel("app", "admin"), sel("team", "web")))))},
			client: feWeb,
			want:   []want{{allowed: Denied}},
		},
		{
			name: "two peers are OR'ed: the namespace peer admits",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "or", &metav1.LabelSelector{},
				ingress(ing(nil, podPeer(sel("app", "admin")), nsPeer(sel("team", "web")))))},
			nsLabels: nsLabels,
			client:   feWeb,
			want:     []want{{allowed: Allowed, rule: "shop/or ingress[0]"}},
		},
		{
			name: "ipBlock admits a client IP inside the CIDR (CNI-dependent for a Pod IP)",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "cidr", &metav1.LabelSelector{},
				ingress(ing(nil, ipPeer("10.0.0.0/16", "10.0.2.0/24"))))},
			client: feWeb,
			want:   []want{{allowed: Allowed, cni: yes}},
		},
		{
			name: "ipBlock except excludes the client IP",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "cidr", &metav1.LabelSelector{},
				ingress(ing(nil, ipPeer("10.0.0.0/16", "10.0.1.0/24"))))},
			client: feWeb,
			want:   []want{{allowed: Denied, reason: "no ingress rule admits"}},
		},
		{
			name: "ipBlock and podSelector peers: selector match is preferred, not CNI-dependent",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "mix", &metav1.LabelSelector{},
				ingress(ing(nil, ipPeer("10.0.0.0/8"), podPeer(sel("app", "frontend")))))},
			client: feShop,
			want:   []want{{allowed: Allowed, cni: no}},
		},
		{
			name: "ipBlock without a client IP is unknown",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "cidr", &metav1.LabelSelector{},
				ingress(ing(nil, ipPeer("10.0.0.0/16"))))},
			client: Client{Kind: ClientPod, Namespace: "web", Name: "fe", Labels: map[string]string{"app": "frontend"}},
			want:   []want{{allowed: Unknown, reason: "IP of pod web/fe is not known"}},
		},
		{
			name: "node client admitted by ipBlock, with the CNI caveat",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "nodes", &metav1.LabelSelector{},
				ingress(ing(nil, ipPeer("192.168.1.0/24"))))},
			client: node1,
			want:   []want{{allowed: Allowed, cni: yes, reason: "admits node worker-1 (192.168.1.11) on 8080/TCP"}},
		},
		{
			name: "node client is never matched by selectors",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "all-pods", &metav1.LabelSelector{},
				ingress(ing(nil, nsPeer(&metav1.LabelSelector{}))))},
			client: node1,
			want:   []want{{allowed: Denied, cni: yes}},
		},
		{
			name:     "named policy port resolves per backend Pod",
			backends: []corev1.Pod{web1, web2},
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "named", &metav1.LabelSelector{},
				ingress(ing(ports(named("http")))))},
			client: feShop,
			want: []want{
				{pod: "shop/web-1", allowed: Allowed}, // http=8080 on web-1
				{pod: "shop/web-2", allowed: Denied, reason: "no ingress rule admits pod shop/frontend-abc on 8080/TCP"}, // http=9090 on web-2
			},
		},
		{
			name:     "named Service targetPort resolves per backend Pod",
			backends: []corev1.Pod{web1, web2},
			ports:    []TargetPort{{Name: "web", Port: intstr.FromString("http")}},
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "p8080", &metav1.LabelSelector{},
				ingress(ing(ports(tcp(8080)))))},
			client: feShop,
			want: []want{
				{pod: "shop/web-1", allowed: Allowed},
				{pod: "shop/web-2", allowed: Denied, reason: "on 9090/TCP"},
			},
		},
		{
			name:   "named targetPort missing on the Pod is unknown",
			ports:  []TargetPort{{Name: "web", Port: intstr.FromString("grpc")}},
			client: feShop,
			want:   []want{{allowed: Unknown, reason: "targetPort grpc/TCP is not a container port"}},
		},
		{
			name: "endPort range includes the port",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "range", &metav1.LabelSelector{},
				ingress(ing(ports(rng(8000, 8100)))))},
			client: feShop,
			want:   []want{{allowed: Allowed}},
		},
		{
			name: "endPort range ends below the port",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "range", &metav1.LabelSelector{},
				ingress(ing(ports(rng(8000, 8079)))))},
			client: feShop,
			want:   []want{{allowed: Denied}},
		},
		{
			name: "protocol mismatch: UDP rule, TCP port",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "udp", &metav1.LabelSelector{},
				ingress(ing(ports(proto(corev1.ProtocolUDP, 8080)))))},
			client: feShop,
			want:   []want{{allowed: Denied}},
		},
		{
			name:  "UDP rule admits a UDP Service port",
			ports: []TargetPort{{Name: "syslog", Port: intstr.FromInt32(8080), Protocol: corev1.ProtocolUDP}},
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "udp", &metav1.LabelSelector{},
				ingress(ing(ports(proto(corev1.ProtocolUDP, 8080)))))},
			client: feShop,
			want:   []want{{allowed: Allowed}},
		},
		{
			name: "policyTypes [Egress] only: ingress rules are ignored, not isolated",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "egress-only", &metav1.LabelSelector{},
				types(egressT), ingress(ing(nil, podPeer(sel("app", "nobody")))))},
			client: feWeb,
			want:   []want{{allowed: Allowed, isolated: no, reason: "policy shop/egress-only selects it for Egress only"}},
		},
		{
			name: "policyTypes empty with egress rules defaults to Ingress+Egress: isolated",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "egress-rules", &metav1.LabelSelector{},
				egress(egr(nil)))},
			client: feWeb,
			want:   []want{{allowed: Denied, isolated: yes}},
		},
		{
			name:     "podSelector selecting other Pods does not isolate",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "db-only", sel("app", "db"), types(ingressT))},
			client:   feWeb,
			want:     []want{{allowed: Allowed, isolated: no}},
		},
		{
			name:     "policies of another namespace do not select the Pod",
			policies: []networkingv1.NetworkPolicy{mkPol("other", "deny-all", &metav1.LabelSelector{}, types(ingressT))},
			client:   feWeb,
			want:     []want{{allowed: Allowed, isolated: no}},
		},
		{
			name: "multiple policies OR'ed: deny-all plus allow",
			policies: []networkingv1.NetworkPolicy{denyAll,
				mkPol("shop", "allow-fe", sel("app", "web"), ingress(ing(ports(tcp(8080)), nsPeer(sel("team", "web")))))},
			nsLabels: nsLabels,
			client:   feWeb,
			want:     []want{{allowed: Allowed, rule: "shop/allow-fe ingress[0]"}},
		},
		{
			name: "multiple policies: each admits another port, none this one",
			policies: []networkingv1.NetworkPolicy{
				mkPol("shop", "a", sel("app", "web"), ingress(ing(ports(tcp(80))))),
				mkPol("shop", "b", &metav1.LabelSelector{}, ingress(ing(ports(tcp(9090)), podPeer(sel("app", "frontend"))))),
			},
			client: feShop,
			want:   []want{{allowed: Denied, reason: "policies shop/a, shop/b select the Pod"}},
		},
		{
			name: "second rule of a policy admits",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "two", &metav1.LabelSelector{},
				ingress(ing(ports(tcp(9090))), ing(ports(tcp(8080)), podPeer(sel("app", "frontend")))))},
			client: feShop,
			want:   []want{{allowed: Allowed, rule: "shop/two ingress[1]"}},
		},
		{
			name:     "unread namespace makes the decision unknown",
			policies: nil,
			unread:   []string{"shop"},
			client:   feShop,
			want:     []want{{allowed: Unknown, reason: "could not be read"}},
		},
		{
			name: "client egress denied",
			policies: []networkingv1.NetworkPolicy{
				mkPol("web", "egress-lock", sel("app", "frontend"), types(egressT), egress(egr(nil, podPeer(sel("app", "db"))))),
			},
			client: feWeb,
			want: []want{{allowed: Denied, ingress: Allowed, egress: Denied,
				reason: "policy web/egress-lock selects pod web/frontend-abc for egress and no egress rule admits pod shop/web-1 (10.0.2.10) on 8080/TCP"}},
		},
		{
			name: "client egress admitted by namespaceSelector and port",
			policies: []networkingv1.NetworkPolicy{
				mkPol("web", "egress-shop", sel("app", "frontend"), types(egressT),
					egress(egr(ports(tcp(8080)), bothPeer(sel("app", "web"), sel(corev1.LabelMetadataName, "shop"))))),
			},
			client: feWeb,
			want:   []want{{allowed: Allowed, egress: Allowed, reason: "web/egress-shop egress[0] admits egress from pod web/frontend-abc"}},
		},
		{
			name: "client egress podSelector alone means the client's namespace",
			policies: []networkingv1.NetworkPolicy{
				mkPol("web", "egress-same-ns", sel("app", "frontend"), types(egressT), egress(egr(nil, podPeer(sel("app", "web"))))),
			},
			client: feWeb,
			want:   []want{{allowed: Denied, egress: Denied}},
		},
		{
			name:     "client egress named port resolves against the backend Pod",
			backends: []corev1.Pod{web1, web2},
			policies: []networkingv1.NetworkPolicy{
				mkPol("web", "egress-http", sel("app", "frontend"), types(egressT), egress(egr(ports(named("http"))))),
			},
			client: feWeb,
			want: []want{
				{pod: "shop/web-1", allowed: Allowed, egress: Allowed},
				{pod: "shop/web-2", allowed: Denied, egress: Denied},
			},
		},
		{
			name: "client egress: policyTypes defaulted from egress rules",
			policies: []networkingv1.NetworkPolicy{
				mkPol("web", "egress-default-types", sel("app", "frontend"), egress(egr(ports(tcp(5432))))),
			},
			client: feWeb,
			want:   []want{{allowed: Denied, ingress: Allowed, egress: Denied}},
		},
		{
			name: "client egress by ipBlock on the backend IP",
			policies: []networkingv1.NetworkPolicy{
				mkPol("web", "egress-cidr", sel("app", "frontend"), types(egressT), egress(egr(nil, ipPeer("10.0.2.0/24")))),
			},
			client: feWeb,
			want:   []want{{allowed: Allowed, egress: Allowed}},
		},
		{
			name: "both sides deny: the reason names both",
			policies: []networkingv1.NetworkPolicy{denyAll,
				mkPol("web", "egress-lock", sel("app", "frontend"), types(egressT))},
			client: feWeb,
			want:   []want{{allowed: Denied, ingress: Denied, egress: Denied, reason: "shop/deny-all selects the Pod and no ingress rule admits pod web/frontend-abc on 8080/TCP; policy web/egress-lock selects"}},
		},
		{
			name:   "client egress namespace unread",
			unread: []string{"web"},
			client: feWeb,
			want:   []want{{allowed: Unknown, ingress: Allowed, egress: Unknown, reason: "client's namespace web could not be read"}},
		},
		{
			name: "egress policy selecting other Pods of the client's namespace does not isolate the client",
			policies: []networkingv1.NetworkPolicy{
				mkPol("web", "egress-lock-admin", sel("app", "admin"), types(egressT)),
			},
			client: feWeb,
			want:   []want{{allowed: Allowed, egress: Allowed, reason: "no NetworkPolicy selects the Pod for ingress"}},
		},
		{
			name: "a selector rule is preferred over an earlier ipBlock rule as the allowing rule",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "two", &metav1.LabelSelector{},
				ingress(ing(nil, ipPeer("10.0.1.0/24")), ing(nil, podPeer(sel("app", "frontend")))))},
			client: feShop,
			want:   []want{{allowed: Allowed, rule: "shop/two ingress[1]", cni: no}},
		},
		{
			name: "only an ipBlock rule admits: it is the allowing rule and CNI-dependent",
			policies: []networkingv1.NetworkPolicy{mkPol("shop", "two", &metav1.LabelSelector{},
				ingress(ing(nil, ipPeer("10.0.1.0/24")), ing(nil, podPeer(sel("app", "admin")))))},
			client: feShop,
			want:   []want{{allowed: Allowed, rule: "shop/two ingress[0]", cni: yes}},
		},
		{
			name:     "unknown client: not isolated admits any source",
			policies: nil,
			client:   AnyClient(),
			want:     []want{{allowed: Allowed, sources: []string{"any source"}}},
		},
		{
			name: "unknown client: only some sources",
			policies: []networkingv1.NetworkPolicy{denyAll,
				mkPol("shop", "allow-fe", sel("app", "web"), ingress(ing(ports(tcp(8080)), podPeer(sel("app", "frontend")), nsPeer(sel("team", "web"))))),
				mkPol("shop", "allow-metrics", sel("app", "web"), ingress(ing(ports(tcp(9090)), ipPeer("0.0.0.0/0")))),
			},
			nsLabels: nsLabels,
			client:   AnyClient(),
			want: []want{{allowed: Unknown, sources: []string{"pods app=frontend in namespace shop", "all pods in namespaces team=web (web)"},
				reason: "policies shop/deny-all, shop/allow-fe, shop/allow-metrics isolate the Pod; on 8080/TCP only pods app=frontend in namespace shop or all pods in namespaces team=web (web) are admitted"}},
		},
		{
			name:     "unknown client: deny all admits no source",
			policies: []networkingv1.NetworkPolicy{denyAll},
			client:   AnyClient(),
			want:     []want{{allowed: Denied, sources: nil, reason: "no ingress rule admits any source on 8080/TCP"}},
		},
		{
			name: "unknown client: empty from admits every source on the port",
			policies: []networkingv1.NetworkPolicy{denyAll,
				mkPol("shop", "open-8080", &metav1.LabelSelector{}, ingress(ing(ports(tcp(8080)))))},
			client: AnyClient(),
			want:   []want{{allowed: Allowed, rule: "shop/open-8080 ingress[0]", sources: []string{"any source"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			backends := tc.backends
			if backends == nil {
				backends = []corev1.Pod{web1}
			}
			tps := tc.ports
			if tps == nil {
				tps = port8080
			}
			res := Evaluate(&Input{Backends: backends, Ports: tps, Policies: tc.policies,
				NamespaceLabels: tc.nsLabels, UnreadNamespaces: tc.unread, Client: tc.client})
			if len(res.Decisions) != len(tc.want) {
				t.Fatalf("got %d decisions, want %d", len(res.Decisions), len(tc.want))
			}
			for i, w := range tc.want {
				d := res.Decisions[i]
				ctx := func() string { return "\nreason: " + d.Reason + "\nevidence: " + evidenceLines(d.Evidence) }
				if w.pod != "" && d.Pod.String() != w.pod {
					t.Errorf("decision %d is for %s, want %s", i, d.Pod, w.pod)
				}
				if d.Allowed != w.allowed {
					t.Errorf("%s: Allowed = %s, want %s%s", d.Pod, d.Allowed, w.allowed, ctx())
				}
				if w.isolated != nil && d.Isolated != *w.isolated {
					t.Errorf("%s: Isolated = %v, want %v", d.Pod, d.Isolated, *w.isolated)
				}
				if w.ingress != "" && d.IngressAllowed != w.ingress {
					t.Errorf("%s: IngressAllowed = %s, want %s%s", d.Pod, d.IngressAllowed, w.ingress, ctx())
				}
				if w.egress != "" {
					if d.ClientEgress == nil {
						t.Errorf("%s: no ClientEgress", d.Pod)
					} else if d.ClientEgress.Allowed != w.egress {
						t.Errorf("%s: egress = %s, want %s (%s)", d.Pod, d.ClientEgress.Allowed, w.egress, d.ClientEgress.Reason)
					}
				}
				switch {
				case w.rule == "-" && d.AllowingRule != nil:
					t.Errorf("%s: AllowingRule = %s, want none", d.Pod, d.AllowingRule)
				case w.rule != "" && w.rule != "-" && (d.AllowingRule == nil || d.AllowingRule.String() != w.rule):
					t.Errorf("%s: AllowingRule = %v, want %s", d.Pod, d.AllowingRule, w.rule)
				}
				if w.reason != "" && !strings.Contains(d.Reason, w.reason) {
					t.Errorf("%s: Reason = %q, want it to contain %q", d.Pod, d.Reason, w.reason)
				}
				if w.sources != nil || tc.client.kind() == ClientAny {
					if !slices.Equal(d.AdmittedSources, w.sources) {
						t.Errorf("%s: AdmittedSources = %q, want %q", d.Pod, d.AdmittedSources, w.sources)
					}
					if d.AnySourceAdmitted != (len(w.sources) > 0) {
						t.Errorf("%s: AnySourceAdmitted = %v", d.Pod, d.AnySourceAdmitted)
					}
				}
				if w.cni != nil && d.CNIDependent != *w.cni {
					t.Errorf("%s: CNIDependent = %v, want %v (caveats %q)", d.Pod, d.CNIDependent, *w.cni, d.Caveats)
				}
			}
			if res.Notes[0] != EnforcementNote {
				t.Errorf("first note = %q, want the enforcement note", res.Notes[0])
			}
		})
	}
}

func evidenceLines(evs []RuleEvidence) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = e.String()
	}
	return strings.Join(s, "\n  ")
}

func TestEffectiveTypes(t *testing.T) {
	cases := []struct {
		name string
		spec networkingv1.NetworkPolicySpec
		want []Direction
	}{
		{"empty", networkingv1.NetworkPolicySpec{}, []Direction{Ingress}},
		{"ingress rules", networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}, []Direction{Ingress}},
		{"egress rules", networkingv1.NetworkPolicySpec{Egress: []networkingv1.NetworkPolicyEgressRule{{}}}, []Direction{Ingress, Egress}},
		{"explicit egress", networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{egressT},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{}}}, []Direction{Egress}},
	}
	for _, tc := range cases {
		if got := effectiveTypes(&tc.spec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestEvidence(t *testing.T) {
	res := Evaluate(&Input{
		Backends: []corev1.Pod{web1},
		Ports:    port8080,
		Policies: []networkingv1.NetworkPolicy{denyAll,
			mkPol("shop", "allow-fe", sel("app", "web"), ingress(
				ing(ports(tcp(9090)), podPeer(sel("app", "frontend"))),
				ing(ports(tcp(8080)), ipPeer("10.0.0.0/16", "10.0.1.0/24")))),
		},
		Client: feWeb,
	})
	d := res.Decisions[0]
	got := evidenceLines(d.Evidence)
	wantLines := []string{
		"shop/deny-all: no ingress rules -> Denied (a policy without ingress rules admits nothing)",
		"shop/allow-fe ingress[0]: from pods app=frontend in namespace shop; ports 9090/TCP -> Denied (pod web/frontend-abc is not in namespace shop; ports 9090/TCP do not include 8080/TCP)",
		"shop/allow-fe ingress[1]: from IPs 10.0.0.0/16 except 10.0.1.0/24; ports 8080/TCP -> Denied (pod web/frontend-abc is in the excepted 10.0.1.0/24 of 10.0.0.0/16)",
	}
	if got != strings.Join(wantLines, "\n  ") {
		t.Errorf("evidence:\n  %s\nwant:\n  %s", got, strings.Join(wantLines, "\n  "))
	}
	wantMatches := []PolicyMatch{{"shop/deny-all", []Direction{Ingress}}, {"shop/allow-fe", []Direction{Ingress}}}
	if len(d.MatchingPolicies) != 2 || d.MatchingPolicies[0].Policy != wantMatches[0].Policy || d.MatchingPolicies[1].Policy != wantMatches[1].Policy {
		t.Errorf("MatchingPolicies = %+v", d.MatchingPolicies)
	}
}

func TestSummary(t *testing.T) {
	web3 := mkPod("shop", "web-3", map[string]string{"app": "web", "tier": "locked"}, "10.0.4.10", cport{"http", 8080, ""})
	in := &Input{
		Backends: []corev1.Pod{web1, web2, web3},
		Ports:    port8080,
		Policies: []networkingv1.NetworkPolicy{
			mkPol("shop", "lock", sel("tier", "locked"), types(ingressT)),
		},
		Client: feShop,
	}
	s := Evaluate(in).Summary
	if s.Decisions != 3 || s.Allowed != 2 || s.Denied != 1 || s.Unknown != 0 || s.Isolated != 1 {
		t.Fatalf("counts: %+v", s)
	}
	if s.Verdict != Denied || s.AllDenied {
		t.Errorf("verdict %s allDenied %v", s.Verdict, s.AllDenied)
	}
	if !slices.Equal(s.DenyingPolicies, []string{"shop/lock"}) {
		t.Errorf("denying = %v", s.DenyingPolicies)
	}
	want := "pod shop/frontend-abc is admitted to 2 of 3 backend Pods, denied to 1 (shop/lock); 1 of 3 isolated for ingress by NetworkPolicy"
	if s.Line != want {
		t.Errorf("line:\n %s\nwant\n %s", s.Line, want)
	}

	in.Client = AnyClient()
	in.Policies = append(in.Policies, mkPol("shop", "fe-only", sel("app", "web"), ingress(ing(nil, podPeer(sel("app", "frontend"))))))
	s = Evaluate(in).Summary
	want = "0 of 3 backend Pods admit any source, 3 admit only pods app=frontend in namespace shop; 3 of 3 isolated for ingress by NetworkPolicy"
	if s.Line != want || s.Verdict != Unknown {
		t.Errorf("line:\n %s\nwant\n %s (verdict %s)", s.Line, want, s.Verdict)
	}

	in.Policies = []networkingv1.NetworkPolicy{denyAll}
	in.Client = feShop
	s = Evaluate(in).Summary
	if !s.AllDenied || s.Verdict != Denied {
		t.Errorf("deny-all: %+v", s)
	}
	if s = Evaluate(&Input{Ports: port8080}).Summary; s.Verdict != Unknown || s.Line != "no backend Pods to evaluate" {
		t.Errorf("empty: %+v", s)
	}
}

func TestDNS(t *testing.T) {
	dnsPod := mkPod("kube-system", "coredns-1", map[string]string{"k8s-app": "kube-dns"}, "10.0.0.53",
		cport{"dns", 53, corev1.ProtocolUDP}, cport{"dns-tcp", 53, corev1.ProtocolTCP})
	target := &DNSTarget{Pods: []corev1.Pod{dnsPod}, ClusterIPs: []netip.Addr{netip.MustParseAddr("10.96.0.10")}}
	toDNS := bothPeer(sel("k8s-app", "kube-dns"), sel(corev1.LabelMetadataName, "kube-system"))
	cases := []struct {
		name     string
		policies []networkingv1.NetworkPolicy
		udp, tcp Verdict
		cni      bool
		reason   string
	}{
		{name: "no egress policy", udp: Allowed, tcp: Allowed, reason: "DNS is admitted"},
		{
			name: "egress lock without DNS rule",
			policies: []networkingv1.NetworkPolicy{mkPol("web", "lock", sel("app", "frontend"), types(egressT),
				egress(egr(ports(tcp(8080)))))},
			udp: Denied, tcp: Denied,
		},
		{
			name: "UDP 53 only to the DNS pods",
			policies: []networkingv1.NetworkPolicy{mkPol("web", "dns", sel("app", "frontend"), types(egressT),
				egress(egr(ports(proto(corev1.ProtocolUDP, 53)), toDNS)))},
			udp: Allowed, tcp: Denied, reason: "UDP allowed (web/dns egress[0] to pod kube-system/coredns-1), TCP denied",
		},
		{
			name: "named port dns resolves on the DNS pod",
			policies: []networkingv1.NetworkPolicy{mkPol("web", "dns", sel("app", "frontend"), types(egressT),
				egress(egr(ports(named("dns-tcp")), toDNS)))},
			udp: Denied, tcp: Allowed,
		},
		{
			name: "port 53 both protocols to anywhere",
			policies: []networkingv1.NetworkPolicy{mkPol("web", "dns", sel("app", "frontend"), types(egressT),
				egress(egr(ports(proto(corev1.ProtocolUDP, 53), proto(corev1.ProtocolTCP, 53)))))},
			udp: Allowed, tcp: Allowed,
		},
		{
			name: "only the ClusterIP admitted: CNI-dependent",
			policies: []networkingv1.NetworkPolicy{mkPol("web", "dns", sel("app", "frontend"), types(egressT),
				egress(egr(ports(proto(corev1.ProtocolUDP, 53)), ipPeer("10.96.0.10/32"))))},
			udp: Unknown, tcp: Denied, cni: true, reason: "only the ClusterIP is admitted",
		},
		{
			name: "DNS pods in a namespace the selector does not pick",
			policies: []networkingv1.NetworkPolicy{mkPol("web", "dns", sel("app", "frontend"), types(egressT),
				egress(egr(ports(proto(corev1.ProtocolUDP, 53)), bothPeer(sel("k8s-app", "kube-dns"), sel(corev1.LabelMetadataName, "dns")))))},
			udp: Denied, tcp: Denied,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := Evaluate(&Input{Backends: []corev1.Pod{web1}, Ports: port8080, Policies: tc.policies, Client: feWeb, DNS: target})
			d := res.DNS
			if d == nil {
				t.Fatal("no DNS decision")
			}
			if d.UDP != tc.udp || d.TCP != tc.tcp || d.CNIDependent != tc.cni {
				t.Errorf("UDP %s TCP %s cni %v, want %s %s %v\nreason: %s\nevidence: %s", d.UDP, d.TCP, d.CNIDependent,
					tc.udp, tc.tcp, tc.cni, d.Reason, evidenceLines(d.Evidence))
			}
			if tc.reason != "" && !strings.Contains(d.Reason, tc.reason) {
				t.Errorf("reason %q does not contain %q", d.Reason, tc.reason)
			}
		})
	}
	// Without the DNS Pods, a selector rule cannot be matched: Unknown, not Denied.
	res := Evaluate(&Input{Backends: []corev1.Pod{web1}, Ports: port8080, Client: feWeb,
		Policies: []networkingv1.NetworkPolicy{mkPol("web", "dns", sel("app", "frontend"), types(egressT),
			egress(egr(ports(proto(corev1.ProtocolUDP, 53)), toDNS)))},
		DNS: &DNSTarget{ClusterIPs: target.ClusterIPs}})
	if res.DNS.UDP != Unknown || res.DNS.TCP != Denied {
		t.Errorf("without DNS Pods: UDP %s TCP %s (%s)", res.DNS.UDP, res.DNS.TCP, res.DNS.Reason)
	}
	// ... but a rule to anywhere on 53 is decided from the port alone.
	res = Evaluate(&Input{Backends: []corev1.Pod{web1}, Ports: port8080, Client: feWeb,
		Policies: []networkingv1.NetworkPolicy{mkPol("web", "dns", sel("app", "frontend"), types(egressT),
			egress(egr(ports(proto(corev1.ProtocolUDP, 53)))))},
		DNS: &DNSTarget{ClusterIPs: target.ClusterIPs}})
	if res.DNS.UDP != Allowed || res.DNS.TCP != Denied {
		t.Errorf("rule to anywhere without DNS Pods: UDP %s TCP %s (%s)", res.DNS.UDP, res.DNS.TCP, res.DNS.Reason)
	}
	// DNS is evaluated only for a Pod client.
	if res := Evaluate(&Input{Backends: []corev1.Pod{web1}, Ports: port8080, Client: node1, DNS: target}); res.DNS != nil {
		t.Error("DNS decision for a node client")
	}
}

func TestClientConstructors(t *testing.T) {
	p := mkPod("web", "fe", map[string]string{"app": "frontend"}, "10.0.1.5")
	if c := ClientFromPod(&p); c.Kind != ClientPod || c.String() != "pod web/fe" || len(c.IPs) != 1 {
		t.Errorf("pod client: %+v %s", c, c)
	}
	p.Spec.HostNetwork = true
	if c := ClientFromPod(&p); c.Kind != ClientNode || c.Labels != nil {
		t.Errorf("hostNetwork pod client: %+v", c)
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "w1"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
		{Type: corev1.NodeHostName, Address: "w1"}, {Type: corev1.NodeInternalIP, Address: "192.168.1.11"}}}}
	if c := ClientFromNode(n); c.String() != "node w1 (192.168.1.11)" {
		t.Errorf("node client: %s", c)
	}
	if c := (Client{}); c.String() != "any client" {
		t.Errorf("zero client: %s", c)
	}
}

func TestTargetPortsOf(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "a", Port: 80},
		{Name: "b", Port: 443, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP},
		{Name: "c", Port: 53, TargetPort: intstr.FromInt32(5353), Protocol: corev1.ProtocolUDP},
	}}}
	got := TargetPortsOf(svc)
	if got[0].Port.IntVal != 80 || got[1].Port.StrVal != "https" || got[2].Port.IntVal != 5353 || got[2].Protocol != corev1.ProtocolUDP {
		t.Errorf("%+v", got)
	}
}

func TestHostNetworkBackendIsFlagged(t *testing.T) {
	hn := web1
	hn.Spec.HostNetwork = true
	res := Evaluate(&Input{Backends: []corev1.Pod{hn, web1}, Ports: port8080, Policies: []networkingv1.NetworkPolicy{denyAll}, Client: feShop})
	if d := res.Decisions[0]; d.Allowed != Denied || !d.CNIDependent || !slices.Contains(d.Caveats, HostNetworkBackendNote) {
		t.Errorf("hostNetwork backend: %s cni=%v caveats=%q", d.Allowed, d.CNIDependent, d.Caveats)
	}
	if d := res.Decisions[1]; d.CNIDependent || len(d.Caveats) > 0 {
		t.Errorf("ordinary backend flagged: %q", d.Caveats)
	}
	if !slices.Contains(res.Notes, HostNetworkBackendNote) {
		t.Errorf("notes: %q", res.Notes)
	}
}

func TestInvalidPolicyIsANote(t *testing.T) {
	bad := mkPol("shop", "bad", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus"}}})
	res := Evaluate(&Input{Backends: []corev1.Pod{web1}, Ports: port8080, Policies: []networkingv1.NetworkPolicy{bad}, Client: feShop})
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "shop/bad has an invalid podSelector") }) {
		t.Errorf("notes: %q", res.Notes)
	}
	badPeer := mkPol("shop", "bad-peer", &metav1.LabelSelector{}, ingress(ing(nil, ipPeer("not-a-cidr"))))
	res = Evaluate(&Input{Backends: []corev1.Pod{web1}, Ports: port8080, Policies: []networkingv1.NetworkPolicy{badPeer}, Client: feShop})
	if d := res.Decisions[0]; d.Allowed != Unknown || !strings.Contains(d.Reason, "invalid ipBlock cidr") {
		t.Errorf("bad peer: %s %s", d.Allowed, d.Reason)
	}
}
