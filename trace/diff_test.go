package trace

import (
	"slices"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func findingCodes(fs []report.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, string(f.Layer)+"/"+f.Code+"@"+f.Node)
	}
	return out
}

// TestDiffAroundAFault: one Pod of two turns not ready. The diff names the
// findings the fault brought and nothing the two traces share.
func TestDiffAroundAFault(t *testing.T) {
	before, _ := runTrace(t, healthy(), Options{NoNode: true})
	faulty := replace(healthy(),
		pod("web-1", "web", "10.244.1.5", "node-a", notReady),
		slice("web-abc", "web", "http", 8080,
			ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: false},
			ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", ready: true}))
	after, _ := runTrace(t, faulty, Options{NoNode: true})

	if d := report.Diff(before, before); !d.Empty() || len(d.Added)+len(d.Gone)+len(d.Changed) != 0 {
		t.Fatalf("a trace differs from itself: %+v", d)
	}
	d := report.Diff(before, after)
	if d.Empty() || len(d.Added) == 0 {
		t.Fatalf("no finding added by a not-ready Pod: %+v", d)
	}
	for _, f := range d.Added {
		if f.Layer != report.LayerEndpoints {
			t.Errorf("added %s/%s: the fault is in the endpoints layer only", f.Layer, f.Code)
		}
	}
	if len(d.Gone) != 0 || len(d.Changed) != 0 {
		t.Errorf("gone %q, changed %+v: the healthy trace had no findings", findingCodes(d.Gone), d.Changed)
	}
	// The way back: the same findings, gone.
	back := report.Diff(after, before)
	if !slices.Equal(findingCodes(back.Gone), findingCodes(d.Added)) || len(back.Added) != 0 {
		t.Errorf("reverse diff: gone %q added %q, want gone %q", findingCodes(back.Gone), findingCodes(back.Added), findingCodes(d.Added))
	}
	if d.Before.Verdict.Status != report.StatusPass || d.After.Verdict.Status == report.StatusPass || d.After.Service.Name != "web" {
		t.Errorf("sides: %+v → %+v", d.Before, d.After)
	}
}

func traceWith(layer report.LayerName, status report.Status, checks ...report.Check) *report.ServiceTrace {
	t := &report.ServiceTrace{Service: report.ServiceSummary{Namespace: "default", Name: "web"}}
	for _, name := range report.LayerOrder {
		l := report.Layer{Name: name, Status: report.StatusPass}
		if name == layer {
			l.Status, l.Checks = status, checks
		}
		t.Layers = append(t.Layers, l)
	}
	return t
}

// TestDiffPairsFindings: the identity is layer, code and node; several
// findings of one identity pair by message first, then in order; a status
// move is a change; passing and skipped checks are not findings.
func TestDiffPairsFindings(t *testing.T) {
	warn := func(code, node, msg string) report.Check {
		return report.Check{Code: code, Node: node, Status: report.StatusWarn, Severity: report.SeverityWarning, Message: msg}
	}
	fail := func(code, node, msg string) report.Check {
		c := warn(code, node, msg)
		c.Status, c.Severity = report.StatusFail, report.SeverityError
		return c
	}
	tests := []struct {
		name                 string
		before, after        *report.ServiceTrace
		added, gone, changed []string
		layersMoved          int
	}{
		{name: "same finding on another node is new",
			before: traceWith(report.LayerDatapath, report.StatusWarn, warn("DP001", "node-a", "m")),
			after:  traceWith(report.LayerDatapath, report.StatusWarn, warn("DP001", "node-b", "m")),
			added:  []string{"datapath/DP001@node-b"}, gone: []string{"datapath/DP001@node-a"}},
		{name: "warn becomes fail",
			before:  traceWith(report.LayerEndpoints, report.StatusWarn, warn("EP001", "", "m")),
			after:   traceWith(report.LayerEndpoints, report.StatusFail, fail("EP001", "", "m")),
			changed: []string{"endpoints/EP001@"}, layersMoved: 1},
		{name: "one of two ports fixed, by message",
			before: traceWith(report.LayerEndpoints, report.StatusWarn, warn("EP002", "", "port a"), warn("EP002", "", "port b")),
			after:  traceWith(report.LayerEndpoints, report.StatusWarn, warn("EP002", "", "port b")),
			gone:   []string{"endpoints/EP002@"}},
		{name: "message changed",
			before:  traceWith(report.LayerEndpoints, report.StatusWarn, warn("EP002", "", "1 of 3 not ready")),
			after:   traceWith(report.LayerEndpoints, report.StatusWarn, warn("EP002", "", "2 of 3 not ready")),
			changed: []string{"endpoints/EP002@"}},
		{name: "passing and skipped checks are not findings",
			before: traceWith(report.LayerEndpoints, report.StatusPass, report.Check{Code: "EP003", Status: report.StatusPass}),
			after:  traceWith(report.LayerEndpoints, report.StatusPass, report.Check{Code: "EP004", Status: report.StatusSkipped}),
		},
		{name: "a skipped layer's findings do not count",
			before: traceWith(report.LayerDatapath, report.StatusSkipped, warn("DP001", "node-a", "m")),
			after:  traceWith(report.LayerDatapath, report.StatusSkipped),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := report.Diff(tt.before, tt.after)
			var changed []string
			for _, c := range d.Changed {
				changed = append(changed, string(c.Layer)+"/"+c.Code+"@"+c.Node)
			}
			if !slices.Equal(findingCodes(d.Added), tt.added) || !slices.Equal(findingCodes(d.Gone), tt.gone) || !slices.Equal(changed, tt.changed) {
				t.Errorf("added %q gone %q changed %q, want %q %q %q", findingCodes(d.Added), findingCodes(d.Gone), changed, tt.added, tt.gone, tt.changed)
			}
			if len(d.Layers) != tt.layersMoved {
				t.Errorf("layers moved %+v, want %d", d.Layers, tt.layersMoved)
			}
		})
	}
}

// TestEndpointChangesTimeline: a rollout step as the watch prints it: one
// endpoint goes terminating while still serving, one appears, one goes.
func TestEndpointChangesTimeline(t *testing.T) {
	eps := func(es ...report.EndpointSummary) *report.ServiceTrace {
		return &report.ServiceTrace{Endpoints: report.EndpointsSummary{Endpoints: es}}
	}
	before := eps(report.EndpointSummary{IP: "10.0.0.1", Ready: true, Serving: true},
		report.EndpointSummary{IP: "10.0.0.2", Ready: true, Serving: true},
		report.EndpointSummary{IP: "10.0.0.3", Ready: true, Serving: true})
	after := eps(report.EndpointSummary{IP: "10.0.0.1", Serving: true, Terminating: true},
		report.EndpointSummary{IP: "10.0.0.2", Ready: true, Serving: true},
		report.EndpointSummary{IP: "10.0.0.4"})
	got := report.EndpointChanges(before, after)
	want := []report.EndpointChange{
		{IP: "10.0.0.1", Before: "ready", After: "terminating (serving)"},
		{IP: "10.0.0.4", After: "not ready"},
		{IP: "10.0.0.3", Before: "ready"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes %+v, want %+v", got, want)
	}
	if c := report.EndpointChanges(after, after); len(c) != 0 {
		t.Errorf("no change expected: %+v", c)
	}
}

func TestDiffNodeMoves(t *testing.T) {
	before := traceWith(report.LayerDatapath, report.StatusPass)
	after := traceWith(report.LayerDatapath, report.StatusPass)
	before.Layer(report.LayerDatapath).Nodes = []report.NodeResult{{Node: "node-a", Status: report.StatusPass}, {Node: "node-b", Status: report.StatusPass}}
	after.Layer(report.LayerDatapath).Nodes = []report.NodeResult{{Node: "node-b", Status: report.StatusFail}, {Node: "node-c", Status: report.StatusPass}}
	d := report.Diff(before, after)
	want := []report.NodeMove{
		{Layer: report.LayerDatapath, Node: "node-a", Before: report.StatusPass},
		{Layer: report.LayerDatapath, Node: "node-b", Before: report.StatusPass, After: report.StatusFail},
		{Layer: report.LayerDatapath, Node: "node-c", After: report.StatusPass},
	}
	if !slices.Equal(d.Nodes, want) || d.Empty() {
		t.Errorf("node moves %+v, want %+v", d.Nodes, want)
	}
}
