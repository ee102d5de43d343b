package trace

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func TestJudgeNodesDNS(t *testing.T) {
	mkTimed := func(answers []string, rcode, errText string, latency, first float64) *collectorapi.Observation {
		o := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
		q := func(tr string) collectorapi.DNSQuery {
			q := collectorapi.DNSQuery{Server: "10.96.0.10", Transport: tr, Name: "web.default.svc.cluster.local.", Type: "A", Rcode: rcode, Answers: answers, Error: errText, LatencyMillis: latency}
			if first > 0 {
				q.Attempts, q.FirstLatencyMillis = 2, first
			}
			return q
		}
		o.Sections.DNS = &collectorapi.Section[collectorapi.DNSObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.DNSObservation{
			Servers: []string{"10.96.0.10"}, Queries: []collectorapi.DNSQuery{q("udp"), q("tcp")}}}
		return o
	}
	mk := func(answers []string, rcode, errText string) *collectorapi.Observation {
		return mkTimed(answers, rcode, errText, 2, 0)
	}
	right := []string{"A 10.96.0.20"}
	tests := []struct {
		name string
		obs  *collectorapi.Observation
		want string
		// wantRaw is a line the check's evidence must hold.
		wantRaw string
	}{
		{"right answer", mk(right, "NOERROR", ""), report.CodeDNSLiveOK, ""},
		{"wrong answer", mk([]string{"A 10.96.0.99"}, "NOERROR", ""), report.CodeDNSLiveWrong, ""},
		{"nxdomain", mk(nil, "NXDOMAIN", ""), report.CodeDNSLiveNXDomain, ""},
		{"timeout", mk(nil, "", "read udp: i/o timeout"), report.CodeDNSLiveFailed, ""},
		{"slow, asked once", mkTimed(right, "NOERROR", "", 730, 0), report.CodeDNSLiveSlow, ""},
		{"slow twice", mkTimed(right, "NOERROR", "", 640, 910), report.CodeDNSLiveSlow, "asked twice: the first answer took 910.0ms"},
		// The collector asks a slow answer again; a fast second answer is
		// the server's, the first one the loaded moment's.
		{"slow once, fast when asked again", mkTimed(right, "NOERROR", "", 3, 820), report.CodeDNSLiveOK, "asked twice: the first answer took 820.0ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: tt.obs})
			got := nodeCodes(tr, report.LayerDNS, "")
			c, ok := got[tt.want]
			if !ok {
				t.Fatalf("dns checks %v, want %s", keysOf(got), tt.want)
			}
			if _, ok := got[report.CodeDNSLiveQuery]; ok {
				t.Errorf("placeholder live-query check left in after a live query")
			}
			if tt.want == report.CodeDNSLiveOK {
				if _, ok := got[report.CodeDNSLiveSlow]; ok {
					t.Errorf("dns checks %v: a slow first answer that a second ask contradicts is not %s", keysOf(got), report.CodeDNSLiveSlow)
				}
			}
			if tt.wantRaw != "" && !slices.Contains(c.Evidence.Raw, tt.wantRaw) {
				t.Errorf("%s evidence %q, want the line %q", tt.want, c.Evidence.Raw, tt.wantRaw)
			}
		})
	}
}

// TestJudgeExternalNameTarget: CoreDNS answers an ExternalName's A and AAAA
// queries with its CNAME even when the target has no address
// (plugin/backend_lookup.go); that CNAME alone is DNS016 on the node, an
// error, while a CNAME followed by the target's address passes.
func TestJudgeExternalNameTarget(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) {
		s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
	})
	in.Slices = nil
	mk := func(a, aaaa []string) *collectorapi.Observation {
		o := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
		var qs []collectorapi.DNSQuery
		for _, tr := range []string{"udp", "tcp"} {
			qs = append(qs,
				collectorapi.DNSQuery{Server: "10.96.0.10", Transport: tr, Name: "web.default.svc.cluster.local.", Type: "A", Rcode: "NOERROR", Answers: a, LatencyMillis: 2},
				collectorapi.DNSQuery{Server: "10.96.0.10", Transport: tr, Name: "web.default.svc.cluster.local.", Type: "AAAA", Rcode: "NOERROR", Answers: aaaa, LatencyMillis: 2})
		}
		o.Sections.DNS = &collectorapi.Section[collectorapi.DNSObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.DNSObservation{
			Servers: []string{"10.96.0.10"}, Queries: qs}}
		return o
	}
	cname := "CNAME db.example.com."
	for _, tt := range []struct {
		name    string
		a, aaaa []string
		want    bool
	}{
		{"CNAME only", []string{cname}, []string{cname}, true},
		{"target has an IPv4 address", []string{cname, "A 192.0.2.7"}, []string{cname}, false},
		{"target has an IPv6 address only", []string{cname}, []string{cname, "AAAA 2001:db8::7"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: mk(tt.a, tt.aaaa)})
			c, ok := nodeCodes(tr, report.LayerDNS, "n1")[report.CodeDNSExternalUnresolved]
			if ok != tt.want {
				t.Fatalf("%s present %v, want %v: %v", report.CodeDNSExternalUnresolved, ok, tt.want, keysOf(nodeCodes(tr, report.LayerDNS, "")))
			}
			// The stand-in node's other sections judge nothing here.
			for _, l := range []report.LayerName{report.LayerEndpoints, report.LayerDatapath, report.LayerConntrack, report.LayerRoute} {
				if s := tr.Layer(l).Status; s != report.StatusSkipped {
					t.Errorf("layer %s is %s, want skipped: %v", l, s, keysOf(nodeCodes(tr, l, "")))
				}
			}
			if !tt.want && tr.Verdict.Status == report.StatusFail {
				t.Errorf("verdict fail for an ExternalName that resolves: %+v", tr.Verdict)
			}
			if !ok {
				return
			}
			if c.Status != report.StatusFail || !strings.Contains(c.Message, "CNAME to db.example.com but with no address for db.example.com") {
				t.Errorf("%s %s: %q", c.Code, c.Status, c.Message)
			}
			if tr.Layer(report.LayerDNS).Status != report.StatusFail {
				t.Errorf("DNS layer %s", tr.Layer(report.LayerDNS).Status)
			}
		})
	}
}
