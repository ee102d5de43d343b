package trace

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// withKubeRouter is healthyIPT plus the filter chains kube-router v2.1.0
// creates, as collectors/testdata/iptables/kube-router-v2.1.0-*.filter.save
// (saved on the testbed) hold them.
func withKubeRouter() *collectorapi.IPTablesObservation {
	o := healthyIPT()
	o.Backends[0].PolicyEnforcer = collectorapi.PolicyEnforcerKubeRouter
	o.Backends[0].PolicyEnforcerChains = []string{"KUBE-ROUTER-FORWARD", "KUBE-ROUTER-INPUT", "KUBE-ROUTER-OUTPUT"}
	return o
}

// A policy isolates web-1 (n1) and web-2 (n2): n1 runs kube-router, n2
// shows no enforcer. The caveat NP006 gives way to one answer per node.
func TestPolicyEnforcementPerNode(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	tr := judgeViews(t, in,
		NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, withKubeRouter(), nil)},
		NodeView{Node: "n2", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)})
	c, ok := nodeCodes(tr, report.LayerPolicy, "n1")[report.CodeNPEnforced]
	if !ok || !strings.Contains(c.Message, "kube-router") || !strings.Contains(c.Message, "KUBE-ROUTER-FORWARD") || !strings.Contains(c.Message, "web-1") {
		t.Errorf("n1: %v %q", ok, c.Message)
	}
	assertNoCode(t, tr, report.LayerPolicy, "n1", report.CodeNPNotEnforced)
	c, ok = nodeCodes(tr, report.LayerPolicy, "n2")[report.CodeNPNotEnforced]
	if !ok || c.Severity != report.SeverityWarning || !strings.Contains(c.Message, "default/web-from-frontend") || !strings.Contains(c.Message, "web-2") {
		t.Errorf("n2: %v %+v", ok, c)
	}
	assertNoCode(t, tr, report.LayerPolicy, "", report.CodeNPEnforcement)
}

// A node whose collector failed leaves the caveat in place and says
// nothing about that node.
func TestPolicyEnforcementNodeNotInspected(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	tr := judgeViews(t, in,
		NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, withKubeRouter(), nil)},
		NodeView{Node: "n2", Failure: "collector Pod not scheduled"})
	if _, ok := nodeCodes(tr, report.LayerPolicy, "")[report.CodeNPEnforcement]; !ok {
		t.Error("NP006 dropped although n2 was not inspected")
	}
	assertNoCode(t, tr, report.LayerPolicy, "n2", report.CodeNPEnforced, report.CodeNPNotEnforced, report.CodeNPEnforcementUnknown)
	if _, ok := nodeCodes(tr, report.LayerPolicy, "n1")[report.CodeNPEnforced]; !ok {
		t.Error("no NP020 on n1")
	}
}

// An eBPF datapath enforces policies itself: no "not enforced" warning,
// and an unread iptables section is said to be why nothing is known.
func TestPolicyEnforcementEBPFAndUnread(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	cil := observation(t, collectorapi.ModeCilium, nil, nil)
	cil.Sections.Proxy.Data.Fingerprints = []collectorapi.Fingerprint{{Mode: collectorapi.ModeCilium, Check: "pinned map cilium_lb4_services_v2", Found: true}}
	unread := observation(t, collectorapi.ModeIPTables, nil, nil)
	unread.Sections.IPTables = &collectorapi.Section[collectorapi.IPTablesObservation]{Status: collectorapi.StatusError, Error: "permission denied"}
	tr := judgeViews(t, in, NodeView{Node: "n1", Observation: cil}, NodeView{Node: "n2", Observation: unread})
	for node, want := range map[string]string{"n1": "cilium", "n2": "permission denied"} {
		c, ok := nodeCodes(tr, report.LayerPolicy, node)[report.CodeNPEnforcementUnknown]
		if !ok || !strings.Contains(c.Message, want) {
			t.Errorf("%s: %v %q, want NP022 naming %q", node, ok, c.Message, want)
		}
		assertNoCode(t, tr, report.LayerPolicy, node, report.CodeNPNotEnforced)
	}
}

// Without NetworkPolicies nothing is said about enforcement.
func TestPolicyEnforcementNoPolicies(t *testing.T) {
	tr := judgeViews(t, nodeInput(), NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)})
	assertNoCode(t, tr, report.LayerPolicy, "", report.CodeNPEnforced, report.CodeNPNotEnforced, report.CodeNPEnforcementUnknown)
}
