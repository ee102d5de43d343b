package netpol

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

func webSubject() anpv1alpha1.AdminNetworkPolicySubject {
	return anpv1alpha1.AdminNetworkPolicySubject{Pods: &anpv1alpha1.NamespacedPod{
		NamespaceSelector: metav1.LabelSelector{}, PodSelector: *sel("app", "web")}}
}

func fromNS(kv ...string) []anpv1alpha1.AdminNetworkPolicyIngressPeer {
	return []anpv1alpha1.AdminNetworkPolicyIngressPeer{{Namespaces: sel(kv...)}}
}

func anpPorts(n int32) *[]anpv1alpha1.AdminNetworkPolicyPort {
	return &[]anpv1alpha1.AdminNetworkPolicyPort{{PortNumber: &anpv1alpha1.Port{Protocol: corev1.ProtocolTCP, Port: n}}}
}

func anp(name string, priority int32, action anpv1alpha1.AdminNetworkPolicyRuleAction, from []anpv1alpha1.AdminNetworkPolicyIngressPeer) anpv1alpha1.AdminNetworkPolicy {
	return anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: anpv1alpha1.AdminNetworkPolicySpec{
		Priority: priority, Subject: webSubject(),
		Ingress: []anpv1alpha1.AdminNetworkPolicyIngressRule{{Name: strings.ToLower(string(action)), Action: action, From: from, Ports: anpPorts(8080)}}}}
}

func banp(action anpv1alpha1.BaselineAdminNetworkPolicyRuleAction, from []anpv1alpha1.AdminNetworkPolicyIngressPeer) anpv1alpha1.BaselineAdminNetworkPolicy {
	return anpv1alpha1.BaselineAdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: anpv1alpha1.BaselineAdminNetworkPolicySpec{
		Subject: webSubject(),
		Ingress: []anpv1alpha1.BaselineAdminNetworkPolicyIngressRule{{Name: "baseline", Action: action, From: from}}}}
}

// npAllowFrontend isolates app=web and admits app=frontend of its namespace.
func npAllowFrontend() networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "allow-fe"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: *sel("app", "web"),
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{podPeer(sel("app", "frontend"))}}}}}
}

// The tiers in order: AdminNetworkPolicies by priority (Allow and Deny
// final, Pass hands on), then NetworkPolicies, then the baseline, which
// applies only where no NetworkPolicy isolates the Pod.
func TestAdminTiers(t *testing.T) {
	web := mkPod("shop", "web-1", map[string]string{"app": "web"}, "10.0.0.5", cport{"http", 8080, corev1.ProtocolTCP})
	frontend := mkPod("shop", "fe", map[string]string{"app": "frontend"}, "10.0.0.9")
	intruder := mkPod("shop", "intruder", map[string]string{"app": "intruder"}, "10.0.0.10")
	labelled := map[string]map[string]string{"shop": {"tier": "shop"}}
	A, D, P := anpv1alpha1.AdminNetworkPolicyRuleActionAllow, anpv1alpha1.AdminNetworkPolicyRuleActionDeny, anpv1alpha1.AdminNetworkPolicyRuleActionPass
	for _, tc := range []struct {
		name     string
		client   corev1.Pod
		any      bool
		nps      []networkingv1.NetworkPolicy
		anps     []anpv1alpha1.AdminNetworkPolicy
		banps    []anpv1alpha1.BaselineAdminNetworkPolicy
		nsLabels map[string]map[string]string
		unread   string
		want     Verdict
		reason   string
	}{
		{name: "ANP Deny overrides a NetworkPolicy Allow", client: frontend, nps: []networkingv1.NetworkPolicy{npAllowFrontend()},
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("deny-all", 10, D, fromNS())}, want: Denied, reason: "AdminNetworkPolicy/deny-all ingress[0] (deny) denies"},
		{name: "ANP Allow overrides a NetworkPolicy that isolates", client: intruder, nps: []networkingv1.NetworkPolicy{npAllowFrontend()},
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("allow-all", 10, A, fromNS())}, want: Allowed, reason: "AdminNetworkPolicy/allow-all ingress[0] (allow) allows"},
		{name: "ANP Pass hands on to the NetworkPolicy, which admits", client: frontend, nps: []networkingv1.NetworkPolicy{npAllowFrontend()},
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("pass", 10, P, fromNS())}, banps: []anpv1alpha1.BaselineAdminNetworkPolicy{banp("Deny", fromNS())},
			want: Allowed, reason: "AdminNetworkPolicy/pass ingress[0] (pass) passes the traffic on; shop/allow-fe ingress[0] admits"},
		{name: "ANP Pass hands on to the NetworkPolicy, which denies", client: intruder, nps: []networkingv1.NetworkPolicy{npAllowFrontend()},
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("pass", 10, P, fromNS())}, want: Denied, reason: "passes the traffic on"},
		{name: "the lower priority value is matched first", client: frontend,
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("allow", 20, A, fromNS()), anp("deny", 5, D, fromNS())}, want: Denied, reason: "AdminNetworkPolicy/deny"},
		{name: "BANP default-deny with a NetworkPolicy Allow: the NetworkPolicy decides", client: frontend,
			nps: []networkingv1.NetworkPolicy{npAllowFrontend()}, banps: []anpv1alpha1.BaselineAdminNetworkPolicy{banp("Deny", fromNS())},
			want: Allowed, reason: "shop/allow-fe ingress[0] admits"},
		{name: "BANP default-deny without NetworkPolicy", client: frontend,
			banps: []anpv1alpha1.BaselineAdminNetworkPolicy{banp("Deny", fromNS())}, want: Denied, reason: "BaselineAdminNetworkPolicy/default ingress[0] (baseline) denies"},
		{name: "BANP Allow without NetworkPolicy", client: frontend,
			banps: []anpv1alpha1.BaselineAdminNetworkPolicy{banp("Allow", fromNS())}, want: Allowed, reason: "BaselineAdminNetworkPolicy/default"},
		{name: "an ANP peer on namespace labels not read", client: frontend,
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("deny-team", 10, D, fromNS("tier", "shop"))}, want: Unknown, reason: "were not given"},
		{name: "an ANP peer on namespace labels read", client: frontend, nsLabels: labelled,
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("deny-team", 10, D, fromNS("tier", "shop"))}, want: Denied, reason: "AdminNetworkPolicy/deny-team"},
		{name: "an ANP whose peer does not match: next tier", client: frontend, nsLabels: map[string]map[string]string{"shop": {"tier": "other"}},
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("deny-team", 10, D, fromNS("tier", "shop"))}, want: Allowed, reason: "no NetworkPolicy selects"},
		{name: "admin tiers unreadable", client: frontend, unread: "forbidden", want: Unknown, reason: "could not be read (forbidden)"},
		{name: "any client: an ANP selecting the Pod is not evaluated", any: true,
			anps: []anpv1alpha1.AdminNetworkPolicy{anp("allow-all", 10, A, fromNS())}, want: Unknown, reason: "--from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := ClientFromPod(&tc.client)
			if tc.any {
				client = AnyClient()
			}
			res := Evaluate(&Input{Backends: []corev1.Pod{web}, Ports: []TargetPort{{Port: intstr.FromInt32(8080)}},
				Policies: tc.nps, AdminNetworkPolicies: tc.anps, BaselineAdminNetworkPolicies: tc.banps,
				NamespaceLabels: tc.nsLabels, AdminPoliciesUnread: tc.unread, Client: client})
			d := res.Decisions[0]
			if d.Allowed != tc.want || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("got %s (%s), want %s with %q", d.Allowed, d.Reason, tc.want, tc.reason)
			}
			if tc.want == Denied && !strings.Contains(strings.Join(res.Summary.DenyingPolicies, ","), "/") {
				t.Errorf("denying policies %v", res.Summary.DenyingPolicies)
			}
		})
	}
}

// The client's egress goes through the tiers too: an ANP Deny selecting the
// client denies its traffic although no policy isolates the backend.
func TestAdminEgressDeny(t *testing.T) {
	web := mkPod("shop", "web-1", map[string]string{"app": "web"}, "10.0.0.5", cport{"http", 8080, corev1.ProtocolTCP})
	fe := mkPod("shop", "fe", map[string]string{"app": "frontend"}, "10.0.0.9")
	deny := anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fe-out"}, Spec: anpv1alpha1.AdminNetworkPolicySpec{
		Priority: 1, Subject: anpv1alpha1.AdminNetworkPolicySubject{Pods: &anpv1alpha1.NamespacedPod{PodSelector: *sel("app", "frontend")}},
		Egress: []anpv1alpha1.AdminNetworkPolicyEgressRule{{Action: anpv1alpha1.AdminNetworkPolicyRuleActionDeny,
			To: []anpv1alpha1.AdminNetworkPolicyEgressPeer{{Networks: []anpv1alpha1.CIDR{"10.0.0.0/24"}}}}}}}
	res := Evaluate(&Input{Backends: []corev1.Pod{web}, Ports: []TargetPort{{Port: intstr.FromInt32(8080)}},
		AdminNetworkPolicies: []anpv1alpha1.AdminNetworkPolicy{deny}, Client: ClientFromPod(&fe)})
	d := res.Decisions[0]
	if d.Allowed != Denied || d.ClientEgress == nil || d.ClientEgress.Allowed != Denied || !strings.Contains(d.Reason, "AdminNetworkPolicy/fe-out egress[0] denies egress from pod shop/fe") {
		t.Fatalf("%s: %s", d.Allowed, d.Reason)
	}
}
