package trace

import (
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// causeTrace is a judged API trace with the given checks added, node
// findings and all, for explainCauses to link.
func causeTrace(t *testing.T, in *input.Input, checks ...report.Check) *report.ServiceTrace {
	t.Helper()
	tr := judgeAPI(in, Options{Now: fixedNow})
	for _, c := range checks {
		tr.Layer(report.Catalog[c.Code].Layer).Add(c)
	}
	return tr
}

func nodeCheck(code, node, message string) report.Check {
	c := report.NewCheck(code, nil)
	c.Node, c.Message = node, message
	return c
}

// Every pair of a DNS symptom and the lower finding that can explain it:
// the symptom names its cause, and the verdict rests on the deepest one.
// The DNS Pod runs on n2; n1's queries cross n1's overlay to reach it.
func TestDNSCausePairs(t *testing.T) {
	timeout := "the udp query for web.default.svc.cluster.local. A to 10.96.0.10 failed: read udp: i/o timeout"
	refused := "the udp query for web.default.svc.cluster.local. A to 10.96.0.10 failed: connection refused"
	for _, tc := range []struct {
		name    string
		symptom report.Check
		cause   report.Check
		want    bool
	}{
		{"RT014 missing FDB entry for the DNS node", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTOverlayVTEP, "n1", "flannel.1 (vxlan) has no forwarding-database entry for n2: lost"), true},
		{"RT014 for another node", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTOverlayVTEP, "n1", "flannel.1 (vxlan) has no forwarding-database entry for n3: lost"), false},
		{"RT014 on another node", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTOverlayVTEP, "n3", "flannel.1 (vxlan) has no forwarding-database entry for n2: lost"), false},
		{"RT014 but the query was refused", nodeCheck(report.CodeDNSLiveFailed, "n1", refused),
			nodeCheck(report.CodeRTOverlayVTEP, "n1", "flannel.1 (vxlan) has no forwarding-database entry for n2: lost"), false},
		{"RT015 overlay MTU", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTOverlayMTU, "n1", "flannel.1 (vxlan) has MTU 1500, but its underlay eth0 has MTU 1500"), true},
		{"RT016 blackhole towards the DNS Pod", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTPMTUBlackhole, "n1", "10.244.2.3: a 576-byte probe is answered and a 1500-byte one is not"), true},
		{"RT017 overlay down", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTOverlayDown, "n1", "flannel.1 (vxlan) is down"), true},
		{"RT019 DNS node's tunnel not listening", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTEncapRefused, "n1", "flannel.1 (vxlan VNI 1): n2 answered with ICMP port unreachable"), true},
		{"RT024 DNS node's tunnel silent", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTEncapSilent, "n1", "flannel.1 (vxlan VNI 1): no answer from n2"), true},
		{"RT004 on the DNS node", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTForwardOff, "n2", "n2 does not forward"), true},
		{"RT004 on the querying node only", nodeCheck(report.CodeDNSLiveFailed, "n1", timeout),
			nodeCheck(report.CodeRTForwardOff, "n1", "n1 does not forward"), false},
		{"NP009: the client's egress denies DNS", nodeCheck(report.CodeDNSClientNoAnswer, "n1", "pod default/frontend's resolver got no address"),
			report.NewCheck(report.CodeNPDNSDenied, report.Args{"udp": "Denied", "tcp": "Denied"}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := nodeInput()
			in.DNSSlices[0].Endpoints[0].NodeName = ptr("n2")
			in.DNSSlices[0].Endpoints[0].Addresses = []string{"10.244.2.3"}
			tr := causeTrace(t, in, tc.symptom, tc.cause)
			nj := &nodeJudge{Emitter: report.NewEmitter(tr, nil), in: in, t: tr}
			nj.explainCauses()
			finish(tr)
			var symptom *report.Check
			for i, c := range tr.Layer(report.LayerDNS).Checks {
				if c.Code == tc.symptom.Code && c.Node == tc.symptom.Node {
					symptom = &tr.Layer(report.LayerDNS).Checks[i]
				}
			}
			if symptom == nil {
				t.Fatal("symptom lost")
			}
			explained := symptom.ExplainedBy != nil && symptom.ExplainedBy.Code == tc.cause.Code && symptom.ExplainedBy.Node == tc.cause.Node
			if explained != tc.want {
				t.Fatalf("explained by %+v, want %s: %v", symptom.ExplainedBy, tc.cause.Code, tc.want)
			}
			if !tc.want {
				return
			}
			if !strings.Contains(symptom.Message, "explained by "+tc.cause.Code) {
				t.Errorf("symptom message %q does not name its cause", symptom.Message)
			}
			if tr.Verdict.Code != tc.cause.Code || tr.Verdict.RootCauseLayer != report.Catalog[tc.cause.Code].Layer {
				t.Errorf("verdict rests on %s (%s), want %s", tr.Verdict.Code, tr.Verdict.RootCauseLayer, tc.cause.Code)
			}
		})
	}
}

// The verdict follows explainedBy links to the finding nothing explains.
func TestVerdictNamesDeepestCause(t *testing.T) {
	in := nodeInput()
	a := nodeCheck(report.CodeDNSLiveFailed, "n1", "timeout")
	a.ExplainedBy = &report.CheckRef{Layer: report.LayerRoute, Code: report.CodeRTPodTimeout, Node: "n1"}
	b := nodeCheck(report.CodeRTPodTimeout, "n1", "10.244.2.7 timeout")
	b.ExplainedBy = &report.CheckRef{Layer: report.LayerRoute, Code: report.CodeRTForwardOff, Node: "n2"}
	c := nodeCheck(report.CodeRTForwardOff, "n2", "n2 does not forward")
	tr := causeTrace(t, in, a, b, c)
	finish(tr)
	if tr.Verdict.Code != report.CodeRTForwardOff || tr.Verdict.Node != "n2" {
		t.Fatalf("verdict rests on %s on %s, want RT004 on n2", tr.Verdict.Code, tr.Verdict.Node)
	}
}
