package trace

import (
	"slices"
	"testing"
)

func findingCodes(fs []Finding) []string {
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

	if d := Diff(before, before); !d.Empty() || len(d.Added)+len(d.Gone)+len(d.Changed) != 0 {
		t.Fatalf("a trace differs from itself: %+v", d)
	}
	d := Diff(before, after)
	if d.Empty() || len(d.Added) == 0 {
		t.Fatalf("no finding added by a not-ready Pod: %+v", d)
	}
	for _, f := range d.Added {
		if f.Layer != LayerEndpoints {
			t.Errorf("added %s/%s: the fault is in the endpoints layer only", f.Layer, f.Code)
		}
	}
	if len(d.Gone) != 0 || len(d.Changed) != 0 {
		t.Errorf("gone %q, changed %+v: the healthy trace had no findings", findingCodes(d.Gone), d.Changed)
	}
	// The way back: the same findings, gone.
	back := Diff(after, before)
	if !slices.Equal(findingCodes(back.Gone), findingCodes(d.Added)) || len(back.Added) != 0 {
		t.Errorf("reverse diff: gone %q added %q, want gone %q", findingCodes(back.Gone), findingCodes(back.Added), findingCodes(d.Added))
	}
	if d.Before.Verdict.Status != StatusPass || d.After.Verdict.Status == StatusPass || d.After.Service.Name != "web" {
		t.Errorf("sides: %+v → %+v", d.Before, d.After)
	}
}

func traceWith(layer LayerName, status Status, checks ...Check) *ServiceTrace {
	t := &ServiceTrace{Service: ServiceSummary{Namespace: "default", Name: "web"}}
	for _, name := range LayerOrder {
		l := Layer{Name: name, Status: StatusPass}
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
	warn := func(code, node, msg string) Check {
		return Check{Code: code, Node: node, Status: StatusWarn, Severity: SeverityWarning, Message: msg}
	}
	fail := func(code, node, msg string) Check {
		c := warn(code, node, msg)
		c.Status, c.Severity = StatusFail, SeverityError
		return c
	}
	tests := []struct {
		name                 string
		before, after        *ServiceTrace
		added, gone, changed []string
		layersMoved          int
	}{
		{name: "same finding on another node is new",
			before: traceWith(LayerDatapath, StatusWarn, warn("DP001", "node-a", "m")),
			after:  traceWith(LayerDatapath, StatusWarn, warn("DP001", "node-b", "m")),
			added:  []string{"datapath/DP001@node-b"}, gone: []string{"datapath/DP001@node-a"}},
		{name: "warn becomes fail",
			before:  traceWith(LayerEndpoints, StatusWarn, warn("EP001", "", "m")),
			after:   traceWith(LayerEndpoints, StatusFail, fail("EP001", "", "m")),
			changed: []string{"endpoints/EP001@"}, layersMoved: 1},
		{name: "one of two ports fixed, by message",
			before: traceWith(LayerEndpoints, StatusWarn, warn("EP002", "", "port a"), warn("EP002", "", "port b")),
			after:  traceWith(LayerEndpoints, StatusWarn, warn("EP002", "", "port b")),
			gone:   []string{"endpoints/EP002@"}},
		{name: "message changed",
			before:  traceWith(LayerEndpoints, StatusWarn, warn("EP002", "", "1 of 3 not ready")),
			after:   traceWith(LayerEndpoints, StatusWarn, warn("EP002", "", "2 of 3 not ready")),
			changed: []string{"endpoints/EP002@"}},
		{name: "passing and skipped checks are not findings",
			before: traceWith(LayerEndpoints, StatusPass, Check{Code: "EP003", Status: StatusPass}),
			after:  traceWith(LayerEndpoints, StatusPass, Check{Code: "EP004", Status: StatusSkipped}),
		},
		{name: "a skipped layer's findings do not count",
			before: traceWith(LayerDatapath, StatusSkipped, warn("DP001", "node-a", "m")),
			after:  traceWith(LayerDatapath, StatusSkipped),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Diff(tt.before, tt.after)
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
	eps := func(es ...EndpointSummary) *ServiceTrace {
		return &ServiceTrace{Endpoints: EndpointsSummary{Endpoints: es}}
	}
	before := eps(EndpointSummary{IP: "10.0.0.1", Ready: true, Serving: true},
		EndpointSummary{IP: "10.0.0.2", Ready: true, Serving: true},
		EndpointSummary{IP: "10.0.0.3", Ready: true, Serving: true})
	after := eps(EndpointSummary{IP: "10.0.0.1", Serving: true, Terminating: true},
		EndpointSummary{IP: "10.0.0.2", Ready: true, Serving: true},
		EndpointSummary{IP: "10.0.0.4"})
	got := EndpointChanges(before, after)
	want := []EndpointChange{
		{IP: "10.0.0.1", Before: "ready", After: "terminating (serving)"},
		{IP: "10.0.0.4", After: "not ready"},
		{IP: "10.0.0.3", Before: "ready"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("changes %+v, want %+v", got, want)
	}
	if c := EndpointChanges(after, after); len(c) != 0 {
		t.Errorf("no change expected: %+v", c)
	}
}

func TestDiffNodeMoves(t *testing.T) {
	before := traceWith(LayerDatapath, StatusPass)
	after := traceWith(LayerDatapath, StatusPass)
	before.Layer(LayerDatapath).Nodes = []NodeResult{{Node: "node-a", Status: StatusPass}, {Node: "node-b", Status: StatusPass}}
	after.Layer(LayerDatapath).Nodes = []NodeResult{{Node: "node-b", Status: StatusFail}, {Node: "node-c", Status: StatusPass}}
	d := Diff(before, after)
	want := []NodeMove{
		{Layer: LayerDatapath, Node: "node-a", Before: StatusPass},
		{Layer: LayerDatapath, Node: "node-b", Before: StatusPass, After: StatusFail},
		{Layer: LayerDatapath, Node: "node-c", After: StatusPass},
	}
	if !slices.Equal(d.Nodes, want) || d.Empty() {
		t.Errorf("node moves %+v, want %+v", d.Nodes, want)
	}
}
