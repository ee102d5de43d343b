package trace

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// allowFromTeam admits every Pod of the namespaces labelled team=shop: a
// namespaceSelector that needs the namespaces' labels, not only their names.
func allowFromTeam() networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web-from-shop", Namespace: "default"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}}}}},
		}}
}

// The policies' answer for a client is admitted, denied or undetermined, and
// what the client's own probes show is judged against that answer alone: an
// undetermined answer never becomes "the policy drops it" (NP011), "nothing
// enforces it" (NP012) or "no policy is involved" (RT022).
func TestClientProbesKeepThePolicyAnswerThreeValued(t *testing.T) {
	shop := map[string]map[string]string{"default": {"team": "shop"}}
	other := map[string]map[string]string{"default": {"team": "billing"}}
	for _, tc := range []struct {
		name    string
		labels  map[string]map[string]string
		unread  string
		outcome string // of every client probe
		want    []string
		wantNot []string
		policy  report.Status // the NP00x answer's status
		verdict report.Status // pass also accepts warn (the enforcement notes)
	}{
		{name: "admitted, connects", labels: shop, outcome: "connected",
			wantNot: []string{report.CodeNPClientNotEnforced, report.CodeNPClientDropSeen}, policy: report.StatusPass, verdict: report.StatusPass},
		{name: "admitted, times out: the path's fault", labels: shop, outcome: "timeout",
			want: []string{report.CodeRTClientTimeout}, wantNot: []string{report.CodeNPClientDropSeen, report.CodeRTClientPolicyUndetermined},
			policy: report.StatusPass, verdict: report.StatusFail},
		{name: "denied, times out: the policy's drop", labels: other, outcome: "timeout",
			want: []string{report.CodeNPClientDropSeen}, wantNot: []string{report.CodeRTClientTimeout, report.CodeRTClientPolicyUndetermined},
			policy: report.StatusFail, verdict: report.StatusFail},
		{name: "denied, connects: not enforced", labels: other, outcome: "connected",
			want: []string{report.CodeNPClientNotEnforced}, policy: report.StatusFail, verdict: report.StatusFail},
		{name: "labels unread, connects: nothing claimed", unread: "cannot list namespaces: forbidden", outcome: "connected",
			wantNot: []string{report.CodeNPClientNotEnforced, report.CodeNPClientDropSeen, report.CodeRTClientTimeout},
			policy:  report.StatusUnknown, verdict: report.StatusUnknown},
		{name: "labels unread, times out: failure stated, cause not named", unread: "cannot list namespaces: forbidden", outcome: "timeout",
			want:    []string{report.CodeRTClientPolicyUndetermined},
			wantNot: []string{report.CodeNPClientDropSeen, report.CodeRTClientTimeout},
			policy:  report.StatusUnknown, verdict: report.StatusFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := nodeInput()
			in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromTeam()}
			in.NamespaceLabels, in.NamespaceLabelsUnread = tc.labels, tc.unread
			client := pod("frontend", "frontend", "10.244.1.9", "n1")
			class, outcome := "", "connected"
			if tc.outcome == "timeout" {
				class, outcome = "timeout", "failed"
			}
			v := clientView(t, nil, clientProbes("frontend",
				probe("endpoint", "http", "10.244.1.5:8080", outcome, class),
				probe("endpoint", "http", "10.244.2.7:8080", outcome, class)))
			tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
			all := map[string]report.Check{}
			for _, l := range []report.LayerName{report.LayerRoute, report.LayerPolicy} {
				for code, c := range nodeCodes(tr, l, "") {
					all[code] = c
				}
			}
			for _, code := range tc.want {
				if _, ok := all[code]; !ok {
					t.Errorf("want %s; route: %s; policy: %s", code, summarizeChecks(tr.Layer(report.LayerRoute)), summarizeChecks(tr.Layer(report.LayerPolicy)))
				}
			}
			for _, code := range tc.wantNot {
				if c, ok := all[code]; ok {
					t.Errorf("unwanted %s: %s", code, c.Message)
				}
			}
			var answer *report.Check
			for i, c := range tr.Layer(report.LayerPolicy).Checks {
				switch c.Code {
				case report.CodeNPAdmitted, report.CodeNPDenied, report.CodeNPUndecided:
					answer = &tr.Layer(report.LayerPolicy).Checks[i]
				}
			}
			if answer == nil || answer.Status != tc.policy {
				t.Fatalf("policy answer %+v, want status %s", answer, tc.policy)
			}
			if tc.unread != "" && !strings.Contains(tr.Layer(report.LayerPolicy).Checks[0].Message+answer.Message, "forbidden") {
				t.Errorf("the undetermined answer does not say why: %s", answer.Message)
			}
			if got := tr.Verdict.Status; got != tc.verdict && (tc.verdict != report.StatusPass || got != report.StatusWarn) {
				t.Errorf("verdict %s (%s), want %s", tr.Verdict.Status, tr.Verdict.Summary, tc.verdict)
			}
		})
	}
}

// A node whose Node object was not read has no known address: an ipBlock
// policy's answer for it is undetermined, so its failed probes are neither
// the policy's (RT009) nor the path's (RT007).
func TestNodeProbesWithUndeterminedPolicyAreNotBlamed(t *testing.T) {
	in := nodeInput()
	delete(in.Nodes, "n1")
	np := allowFromFrontend()
	np.Spec.Ingress[0].From = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "192.168.0.0/16"}}}
	in.NetworkPolicies = []networkingv1.NetworkPolicy{np}
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	obs.Sections.Probe = probes(
		probe("clusterIP", "http", "10.96.0.20:80", "failed", "timeout"),
		probe("endpoint", "http", "10.244.1.5:8080", "failed", "timeout"),
		probe("endpoint", "http", "10.244.2.7:8080", "failed", "timeout"))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPodTimeout, report.CodeRTPolicyExplains)
	c := wantCode(t, tr, report.LayerRoute, "n1", report.CodeRTPolicyUndetermined, "10.244.2.7:8080", "default/web-from-frontend", "is not known")
	if c.Status != report.StatusUnknown {
		t.Fatalf("RT030 status %s, want unknown", c.Status)
	}
	if tr.Verdict.Status == report.StatusFail || tr.Verdict.Status == report.StatusPass {
		t.Fatalf("verdict %s: %s", tr.Verdict.Status, tr.Verdict.Summary)
	}
}

// Namespace labels are read with one list, only when a namespaceSelector
// needs them; a forbidden list is not a gap (the layer is not blinded) but
// the reason the answers that need the labels quote.
func TestFetchNamespaceLabels(t *testing.T) {
	nameOnly := allowFromFrontend()
	nameOnly.Spec.Ingress[0].From[0].NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "shop"}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"team": "shop"}}}
	for _, tc := range []struct {
		name       string
		policies   []networkingv1.NetworkPolicy
		forbid     bool
		wantLists  int
		wantLabels bool
		wantUnread string
	}{
		{name: "no selector needs labels", policies: []networkingv1.NetworkPolicy{allowFromFrontend(), nameOnly}},
		{name: "a team selector", policies: []networkingv1.NetworkPolicy{allowFromTeam()}, wantLists: 1, wantLabels: true},
		{name: "forbidden", policies: []networkingv1.NetworkPolicy{allowFromTeam()}, forbid: true, wantLists: 1, wantUnread: "forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset(ns)
			lists := 0
			client.PrependReactor("list", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
				lists++
				if tc.forbid {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "namespaces"}, "", nil)
				}
				return false, nil, nil
			})
			in := &input.Input{NetworkPolicies: tc.policies}
			input.FetchNamespaceLabels(context.Background(), client, in)
			if lists != tc.wantLists {
				t.Errorf("%d namespace lists, want %d", lists, tc.wantLists)
			}
			if got := in.NamespaceLabels["default"]["team"] == "shop"; got != tc.wantLabels {
				t.Errorf("labels %v", in.NamespaceLabels)
			}
			if !strings.Contains(in.NamespaceLabelsUnread, tc.wantUnread) || (tc.wantUnread == "") != (in.NamespaceLabelsUnread == "") {
				t.Errorf("unread %q, want %q", in.NamespaceLabelsUnread, tc.wantUnread)
			}
			if len(in.Gaps) > 0 {
				t.Errorf("gaps %v: a forbidden namespace list must not blind the layer", in.Gaps)
			}
		})
	}
}

// The client's DNS egress is judged against the nameserver its resolv.conf
// names: with NodeLocal DNSCache (169.254.20.10) an egress policy that
// admits that address and not kube-dns lets every lookup through, and one
// that admits only kube-dns's Pods breaks them, whatever kube-dns says.
func TestClientDNSEgressUsesItsResolver(t *testing.T) {
	allowTo := func(peer networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicy {
		udp := corev1.ProtocolUDP
		port := intstr.FromInt32(53)
		return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fe-dns", Namespace: "default"},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}},
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{
					{To: []networkingv1.NetworkPolicyPeer{peer}, Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &port}}},
					{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
			}}
	}
	nodeLocal := networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "169.254.20.10/32"}}
	kubeDNS := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}}
	for _, tc := range []struct {
		name      string
		policy    networkingv1.NetworkPolicy
		resolvers []string
		want      bool // NP009
	}{
		{"NodeLocal DNSCache admitted", allowTo(nodeLocal), []string{"169.254.20.10"}, false},
		{"NodeLocal DNSCache not admitted", allowTo(kubeDNS), []string{"169.254.20.10"}, true},
		{"kube-dns asked, NodeLocal admitted only", allowTo(nodeLocal), []string{"10.96.0.10"}, true},
		{"resolver not read: kube-dns assumed", allowTo(nodeLocal), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := nodeInput()
			in.NetworkPolicies = []networkingv1.NetworkPolicy{tc.policy}
			in.DNSService.Spec.Ports = []corev1.ServicePort{{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP}}
			coredns := pod("coredns", "coredns", "10.244.0.2", "n2")
			coredns.Namespace, coredns.Labels = "kube-system", map[string]string{"k8s-app": "kube-dns"}
			in.DNSPods = []corev1.Pod{*coredns}
			client := pod("frontend", "frontend", "10.244.1.9", "n1")
			cp := clientProbes("frontend", probe("endpoint", "http", "10.244.1.5:8080", "connected", ""))
			if tc.resolvers != nil {
				cp.Resolver = &collectorapi.ClientResolver{Nameservers: tc.resolvers, Search: []string{"default.svc.cluster.local"}, Ndots: 5,
					Name: "web", Answered: "web.default.svc.cluster.local.", Addrs: []string{"10.96.0.20"}}
			}
			tr := judgeFrom(t, in, report.PolicyClientFromPod(client), clientView(t, nil, cp))
			c, got := nodeCodes(tr, report.LayerPolicy, "")[report.CodeNPDNSDenied]
			if got != tc.want {
				t.Fatalf("NP009 %v (%s), want %v; policy: %s", got, c.Message, tc.want, summarizeChecks(tr.Layer(report.LayerPolicy)))
			}
			if got && tc.resolvers != nil && !strings.Contains(c.Message, tc.resolvers[0]) && tc.resolvers[0] != "10.96.0.10" {
				t.Errorf("NP009 does not name the resolver: %s", c.Message)
			}
		})
	}
}
