package trace

import (
	"context"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// fakePolicyReader serves the given resources with the given objects or
// errors.
type fakePolicyReader struct {
	served    []string
	anps      []anpv1alpha1.AdminNetworkPolicy
	banps     []anpv1alpha1.BaselineAdminNetworkPolicy
	anpErr    error
	counts    map[string]int // by resource
	countErr  error
	countsAsk []string
}

func (f *fakePolicyReader) ServedResources(_ context.Context, wanted []schema.GroupVersionResource) (map[string]bool, error) {
	out := map[string]bool{}
	for _, w := range wanted {
		for _, s := range f.served {
			if w.String() == s {
				out[s] = true
			}
		}
	}
	return out, nil
}

func (f *fakePolicyReader) AdminNetworkPolicies(context.Context) ([]anpv1alpha1.AdminNetworkPolicy, error) {
	return f.anps, f.anpErr
}

func (f *fakePolicyReader) BaselineAdminNetworkPolicies(context.Context) ([]anpv1alpha1.BaselineAdminNetworkPolicy, error) {
	return f.banps, nil
}

func (f *fakePolicyReader) CountUpTo(_ context.Context, gvr schema.GroupVersionResource, ns string, limit int64) (int, error) {
	f.countsAsk = append(f.countsAsk, gvr.Resource+"@"+ns)
	if f.countErr != nil {
		return 0, f.countErr
	}
	return min(f.counts[gvr.String()], int(limit)), nil
}

var (
	resANP  = "policy.networking.k8s.io/v1alpha1, Resource=adminnetworkpolicies"
	resBANP = "policy.networking.k8s.io/v1alpha1, Resource=baselineadminnetworkpolicies"
	resCNP  = "cilium.io/v2, Resource=ciliumnetworkpolicies"
	resCCNP = "cilium.io/v2, Resource=ciliumclusterwidenetworkpolicies"
)

func denyAllANP() anpv1alpha1.AdminNetworkPolicy {
	return anpv1alpha1.AdminNetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny-web"}, Spec: anpv1alpha1.AdminNetworkPolicySpec{
		Priority: 10,
		Subject:  anpv1alpha1.AdminNetworkPolicySubject{Pods: &anpv1alpha1.NamespacedPod{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		Ingress: []anpv1alpha1.AdminNetworkPolicyIngressRule{{Name: "deny-all", Action: anpv1alpha1.AdminNetworkPolicyRuleActionDeny,
			From: []anpv1alpha1.AdminNetworkPolicyIngressPeer{{Namespaces: &metav1.LabelSelector{}}}}}}}
}

// Every policy kind that decides the traffic counts: the admin tiers are
// evaluated (an ANP Deny overrides a NetworkPolicy Allow, and the client's
// timeouts are that drop), kinds svctrace does not evaluate make the answer
// undetermined wherever objects of them exist, and a kind that cannot be
// read never yields "admitted".
func TestPolicyKindsDecideOrUndetermine(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "cilium.io", Resource: "ciliumnetworkpolicies"}, "", nil)
	for _, tc := range []struct {
		name      string
		reader    *fakePolicyReader
		outcome   string // of the client's probes
		wantCodes []string
		notCodes  []string
		message   string // in the policy layer's messages
		verdict   report.Status
	}{
		{name: "no reader: as before", reader: nil, outcome: "connected",
			wantCodes: []string{report.CodeNPAdmitted}, notCodes: []string{report.CodeNPKindNotEvaluated}, verdict: report.StatusPass},
		{name: "Cilium CRDs without objects", reader: &fakePolicyReader{served: []string{resCNP, resCCNP}}, outcome: "connected",
			wantCodes: []string{report.CodeNPAdmitted}, notCodes: []string{report.CodeNPKindNotEvaluated}, verdict: report.StatusPass},
		{name: "a CiliumNetworkPolicy exists", reader: &fakePolicyReader{served: []string{resCNP, resCCNP}, counts: map[string]int{resCNP: 3}}, outcome: "connected",
			wantCodes: []string{report.CodeNPKindNotEvaluated, report.CodeNPUndecided}, notCodes: []string{report.CodeNPAdmitted, report.CodeNPClientNotEnforced},
			message: "CiliumNetworkPolicy in namespace default (1 or more)", verdict: report.StatusUnknown},
		{name: "Cilium's policies unreadable", reader: &fakePolicyReader{served: []string{resCNP}, countErr: forbidden}, outcome: "connected",
			wantCodes: []string{report.CodeNPKindNotEvaluated, report.CodeNPUndecided}, notCodes: []string{report.CodeNPAdmitted},
			message: "forbidden", verdict: report.StatusUnknown},
		{name: "an ANP Deny overrides the NetworkPolicy Allow", reader: &fakePolicyReader{served: []string{resANP, resBANP}, anps: []anpv1alpha1.AdminNetworkPolicy{denyAllANP()}},
			outcome: "timeout", wantCodes: []string{report.CodeNPDenied, report.CodeNPClientDropSeen}, notCodes: []string{report.CodeRTClientTimeout, report.CodeRTClientPolicyUndetermined},
			message: "AdminNetworkPolicy/deny-web", verdict: report.StatusFail},
		{name: "the ANPs unreadable", reader: &fakePolicyReader{served: []string{resANP}, anpErr: apierrors.NewForbidden(schema.GroupResource{Resource: "adminnetworkpolicies"}, "", nil)},
			outcome: "connected", wantCodes: []string{report.CodeNPUndecided}, notCodes: []string{report.CodeNPAdmitted, report.CodeNPClientNotEnforced},
			message: "cannot list adminnetworkpolicies: forbidden", verdict: report.StatusUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := nodeInput()
			in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
			if tc.reader != nil {
				input.FetchPolicyKinds(context.Background(), tc.reader, in, []string{"default"})
			}
			client := pod("frontend", "frontend", "10.244.1.9", "n1")
			class, outcome := "", "connected"
			if tc.outcome == "timeout" {
				class, outcome = "timeout", "failed"
			}
			v := clientView(t, nil, clientProbes("frontend",
				probe("endpoint", "http", "10.244.1.5:8080", outcome, class),
				probe("endpoint", "http", "10.244.2.7:8080", outcome, class)))
			v.Observation = withNetfilter(v.Observation, []string{"KUBE-FORWARD"}, "ip filter")
			tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
			got := map[string]report.Check{}
			var msgs []string
			for _, l := range []report.LayerName{report.LayerPolicy, report.LayerRoute} {
				for _, c := range tr.Layer(l).Checks {
					got[c.Code] = c
					if l == report.LayerPolicy {
						msgs = append(msgs, c.Message)
					}
				}
			}
			for _, c := range tc.wantCodes {
				if _, ok := got[c]; !ok {
					t.Errorf("want %s; policy: %s", c, summarizeChecks(tr.Layer(report.LayerPolicy)))
				}
			}
			for _, c := range tc.notCodes {
				if _, ok := got[c]; ok {
					t.Errorf("unwanted %s: %s", c, got[c].Message)
				}
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tc.message) {
				t.Errorf("policy messages lack %q:\n%s", tc.message, strings.Join(msgs, "\n"))
			}
			if s := tr.Verdict.Status; s != tc.verdict && !(tc.verdict == report.StatusPass && s == report.StatusWarn) {
				t.Errorf("verdict %s (%s), want %s", s, tr.Verdict.Summary, tc.verdict)
			}
		})
	}
}

// Without --from, a kind svctrace does not evaluate turns "no policy
// selects the backends, any source is admitted" into undetermined.
func TestUnevaluatedKindNeverAdmitsAnyClient(t *testing.T) {
	in := nodeInput()
	input.FetchPolicyKinds(context.Background(), &fakePolicyReader{served: []string{resCCNP}, counts: map[string]int{resCCNP: 1}}, in, []string{"default"})
	tr := Assemble(in, nil, Options{Now: fixedNow, NoNode: true})
	assertCatalogued(t, tr)
	codes := nodeCodes(tr, report.LayerPolicy, "")
	if _, ok := codes[report.CodeNPNone]; ok {
		t.Errorf("NP001 (any source admitted) with a CiliumClusterwideNetworkPolicy present")
	}
	if c, ok := codes[report.CodeNPKindNotEvaluated]; !ok || c.Status != report.StatusUnknown || !strings.Contains(c.Message, "CiliumClusterwideNetworkPolicy cluster-wide") {
		t.Errorf("NP013 = %+v", c)
	}
	if tr.Layer(report.LayerPolicy).Status != report.StatusUnknown || tr.Verdict.Status != report.StatusUnknown {
		t.Errorf("policy layer %s, verdict %s; want unknown (exit 4)", tr.Layer(report.LayerPolicy).Status, tr.Verdict.Status)
	}
}
