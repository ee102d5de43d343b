package trace

import (
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func dnsSection(answers []string, errText string) *collectorapi.Section[collectorapi.DNSObservation] {
	q := func(tr string) collectorapi.DNSQuery {
		return collectorapi.DNSQuery{Server: "10.96.0.10", Transport: tr, Name: "web.default.svc.cluster.local.", Type: "A",
			Rcode: map[bool]string{true: "NOERROR", false: ""}[errText == ""], Answers: answers, Error: errText, LatencyMillis: 2}
	}
	return okSection(&collectorapi.DNSObservation{Servers: []string{"10.96.0.10"}, Queries: []collectorapi.DNSQuery{q("udp"), q("tcp")}})
}

// TestDNSTimeoutExplainedByForwarding: the only DNS endpoint runs on n2,
// which does not forward. n1's queries time out, n2's own succeed. The DNS
// layer fails first in path order, but the verdict names the cause: RT004 on
// n2. DNS010 says which node got answers instead of "every inspected node".
func TestDNSTimeoutExplainedByForwarding(t *testing.T) {
	in := nodeInput()
	in.DNSSlices[0].Endpoints[0].NodeName = ptr("n2")
	n1 := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	n1.Sections.DNS = dnsSection(nil, "read udp 10.0.0.11:40000->10.96.0.10:53: i/o timeout")
	n2 := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	n2.Sections.Route.Data.IPv4Forward = "0"
	n2.Sections.DNS = dnsSection([]string{"A 10.96.0.20"}, "")
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: n1}, plan.NodeView{Node: "n2", Observation: n2})

	if tr.Verdict.FirstFailingLayer != report.LayerDNS {
		t.Fatalf("first failing layer %s, want dns", tr.Verdict.FirstFailingLayer)
	}
	if tr.Verdict.Code != report.CodeRTForwardOff || tr.Verdict.Node != "n2" || tr.Verdict.RootCauseLayer != report.LayerRoute {
		t.Errorf("verdict rests on %s on %q (root cause layer %q), want RT004 on n2 in the route layer: %+v",
			tr.Verdict.Code, tr.Verdict.Node, tr.Verdict.RootCauseLayer, tr.Verdict)
	}
	if !strings.Contains(tr.Verdict.Summary, "IP forwarding off on n2") {
		t.Errorf("summary %q does not name the cause", tr.Verdict.Summary)
	}
	failed := nodeCodes(tr, report.LayerDNS, "n1")[report.CodeDNSLiveFailed]
	if failed.ExplainedBy == nil || *failed.ExplainedBy != (report.CheckRef{Layer: report.LayerRoute, Code: report.CodeRTForwardOff, Node: "n2"}) {
		t.Errorf("DNS013 explained by %+v", failed.ExplainedBy)
	}
	if !strings.Contains(failed.Message, "explained by RT004 on n2") {
		t.Errorf("DNS013 message does not say what explains it: %q", failed.Message)
	}
	ok := nodeCodes(tr, report.LayerDNS, "")[report.CodeDNSLiveOK]
	if !strings.Contains(ok.Message, "from node(s) n2 only") || strings.Contains(ok.Message, "every inspected node") {
		t.Errorf("DNS010 claims more than was seen: %q", ok.Message)
	}
}

// TestDNSTimeoutNotExplainedByLocalForwarding: the DNS endpoint's own node
// does not need to forward to reach it, so its failure has another cause.
func TestDNSTimeoutNotExplainedByLocalForwarding(t *testing.T) {
	in := nodeInput()
	in.DNSSlices[0].Endpoints[0].NodeName = ptr("n2")
	n2 := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	n2.Sections.Route.Data.IPv4Forward = "0"
	n2.Sections.DNS = dnsSection(nil, "i/o timeout")
	tr := judgeViews(t, in, plan.NodeView{Node: "n2", Observation: n2})
	if c := nodeCodes(tr, report.LayerDNS, "n2")[report.CodeDNSLiveFailed]; c.ExplainedBy != nil {
		t.Errorf("DNS013 on the DNS Pod's own node explained by %+v", c.ExplainedBy)
	}
	if tr.Verdict.Code != report.CodeDNSLiveFailed || tr.Verdict.RootCauseLayer != "" {
		t.Errorf("verdict %+v", tr.Verdict)
	}
}

// TestPodTimeoutExplainedByForwarding: n1's probe to the Pod on n2 times out
// and n2 does not forward: the route layer's likely cause is RT004 on n2.
func TestPodTimeoutExplainedByForwarding(t *testing.T) {
	in := nodeInput()
	n1 := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	n1.Sections.Probe = probes(
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "failed", "timeout"))
	n2 := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	n2.Sections.Route.Data.IPv4Forward = "0"
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: n1}, plan.NodeView{Node: "n2", Observation: n2})
	c := nodeCodes(tr, report.LayerRoute, "n1")[report.CodeRTPodTimeout]
	if c.ExplainedBy == nil || c.ExplainedBy.Code != report.CodeRTForwardOff || c.ExplainedBy.Node != "n2" {
		t.Errorf("RT007 explained by %+v", c.ExplainedBy)
	}
	if tr.Verdict.Code != report.CodeRTForwardOff || tr.Verdict.Node != "n2" {
		t.Errorf("verdict rests on %s on %s, want RT004 on n2", tr.Verdict.Code, tr.Verdict.Node)
	}
}
