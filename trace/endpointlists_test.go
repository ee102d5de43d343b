package trace

import (
	"fmt"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestLargeTraceNamesSharedEndpointSets: on 30 nodes of a 5,000-endpoint
// Service, a healthy node's evidence names the one shared set instead of
// listing 5,000 endpoints, and a node that programs 3 of them reports the
// set and its 3 exceptions as missing. A small trace keeps its lists.
func TestLargeTraceNamesSharedEndpointSets(t *testing.T) {
	in := bigInput(5000)
	in.Service.Spec.Ports[0].NodePort = 30080
	all, three := bigObservation(t, in), bigObservation(t, bigInput(3))
	var views []plan.NodeView
	for i := range 30 {
		v := plan.NodeView{Node: fmt.Sprintf("node-%02d", i), Observation: all}
		if i == 7 {
			v.Observation = three
		}
		views = append(views, v)
	}
	tr := Assemble(in, &plan.NodeReport{Nodes: views}, Options{Now: fixedNow})
	if len(tr.EndpointSets) != 1 || len(tr.EndpointSets[0].Endpoints) != 5000 {
		t.Fatalf("endpoint sets %d, want one of 5,000", len(tr.EndpointSets))
	}
	id := tr.EndpointSets[0].ID
	matched, partial := 0, false
	for _, c := range tr.Layer(report.LayerDatapath).Checks {
		switch {
		case c.Code == report.CodeDPRulesMatch:
			if f := c.Evidence.Fields[0]; f.Set != id || len(f.Items) != 0 {
				t.Errorf("node %s: %+v, want set %s", c.Node, f, id)
			}
			matched++
		case c.Code == report.CodeDPMissingEndpoints && c.Node == "node-07":
			missing, expected := c.Evidence.Fields[0], c.Evidence.Fields[1]
			if missing.Set != id || len(missing.Except) != 3 || missing.Value != "4997 endpoints" {
				t.Errorf("missing on node-07: %+v, want set %s except 3 programmed", missing, id)
			}
			if expected.Key != "expected" || expected.Set != id {
				t.Errorf("expected on node-07: %+v", expected)
			}
			partial = true
		}
	}
	if matched != 29 || !partial {
		t.Errorf("%d matching nodes and node-07 reported %t, want 29 and a DP007", matched, partial)
	}

	small := Assemble(in, &plan.NodeReport{Nodes: views[7:8]}, Options{Now: fixedNow})
	if len(small.EndpointSets) != 0 {
		t.Errorf("one node: %d shared sets, want the lists inline", len(small.EndpointSets))
	}
	for _, c := range small.Layer(report.LayerDatapath).Checks {
		if c.Code == report.CodeDPMissingEndpoints && len(c.Evidence.Fields[0].Items) != 4997 {
			t.Errorf("one node: missing lists %d, want 4997", len(c.Evidence.Fields[0].Items))
		}
	}
}
