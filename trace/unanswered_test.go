package trace

import (
	"strings"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestNodeNotAnsweredLeavesLayersUnjudged: one node judged healthy and
// one that did not answer in time make every node layer unknown with that
// node's reason, so the verdict is "could not judge" (exit 4) rather than
// a pass; the same trace with both nodes answering passes.
func TestNodeNotAnsweredLeavesLayersUnjudged(t *testing.T) {
	healthy := func() plan.NodeView {
		return plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)}
	}
	const late = "collector on node n2 did not answer within 45s; --node-timeout raises the limit"
	for _, tt := range []struct {
		name  string
		views []plan.NodeView
		want  report.Status
	}{
		{"both answered", []plan.NodeView{healthy(), {Node: "n2", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)}}, report.StatusPass},
		{"n2 did not answer", []plan.NodeView{healthy(), {Node: "n2", Failure: late}}, report.StatusUnknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := judgeViews(t, nodeInput(), tt.views...)
			for _, l := range report.NodeLayers {
				got := tr.Layer(l)
				if got.Status != tt.want {
					t.Errorf("layer %s = %s (%s), want %s", l, got.Status, got.Reason, tt.want)
				}
				if tt.want == report.StatusUnknown && !strings.Contains(got.Reason, "node n2 not judged: "+late) {
					t.Errorf("layer %s reason %q does not name n2 and why", l, got.Reason)
				}
			}
			if tr.Verdict.Status != tt.want {
				t.Fatalf("verdict %+v, want %s", tr.Verdict, tt.want)
			}
			if tt.want == report.StatusUnknown && (tr.Verdict.Code != report.CodeNodeCollectorFailed || tr.Verdict.Node != "n2") {
				t.Errorf("verdict code %s node %s, want DP001 on n2", tr.Verdict.Code, tr.Verdict.Node)
			}
			for _, l := range []report.LayerName{report.LayerDNS, report.LayerService, report.LayerEndpoints} {
				if s := tr.Layer(l).Status; s != report.StatusPass {
					t.Errorf("API layer %s = %s: a node that did not answer must not touch it", l, s)
				}
			}
		})
	}
}

// TestJudgeReserveNests: the reserve is a part of the timeout, never all
// of it, and at least the floor where the timeout allows one.
func TestJudgeReserveNests(t *testing.T) {
	for _, tt := range []struct{ timeout, want time.Duration }{
		{time.Minute, 6 * time.Second},
		{10 * time.Second, 2 * time.Second},
		{4 * time.Second, time.Second},
		{160 * time.Second, 16 * time.Second},
	} {
		if got := plan.JudgeReserve(tt.timeout); got != tt.want || got >= tt.timeout {
			t.Errorf("JudgeReserve(%s) = %s, want %s", tt.timeout, got, tt.want)
		}
	}
}
