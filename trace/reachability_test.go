package trace

import (
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestEndpointMatrix: each node's row says what it programmed and reached
// for each endpoint, and agrees with the datapath checks.
func TestEndpointMatrix(t *testing.T) {
	probes := func(outcomes ...string) *collectorapi.Section[collectorapi.ProbeObservation] {
		var ps []collectorapi.Probe
		for i, o := range outcomes {
			addr := []string{"10.244.1.5:8080", "10.244.2.7:8080"}[i]
			p := collectorapi.Probe{Target: "endpoint", Address: addr, Protocol: "TCP", Outcome: "connected"}
			if o != "ok" {
				p.Outcome, p.ErrorClass = "failed", o
			}
			ps = append(ps, p)
		}
		return okSection(&collectorapi.ProbeObservation{Probes: ps})
	}
	healthy := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	healthy.Sections.Probe = probes("ok", "ok")
	oneMissing := observation(t, collectorapi.ModeIPTables, &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{
		iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 1))}}, nil)
	refused := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	refused.Sections.Probe = probes("ok", "refused")

	tr := judgeViews(t, nodeInput(),
		plan.NodeView{Node: "n1", Observation: healthy},
		plan.NodeView{Node: "n2", Observation: oneMissing},
		plan.NodeView{Node: "n3", Observation: refused},
		plan.NodeView{Node: "n4", Failure: "could not pull its image"})
	if tr.Matrix == nil || len(tr.Matrix.Ports) != 1 {
		t.Fatalf("matrix %+v, want one port", tr.Matrix)
	}
	p := tr.Matrix.Ports[0]
	if p.Port != "default/web:http (80/TCP)" || len(p.Endpoints) != 2 || p.Endpoints[0] != "10.244.1.5:8080" {
		t.Fatalf("port %q endpoints %v", p.Port, p.Endpoints)
	}
	type cell struct {
		status  report.Status
		problem string
		share   float64
		probe   string
	}
	want := map[string]struct {
		status report.Status
		cells  []cell
	}{
		"n1": {report.StatusPass, []cell{{report.StatusPass, "", 0.5, "ok"}, {report.StatusPass, "", 0.5, "ok"}}},
		"n2": {report.StatusFail, []cell{{report.StatusPass, "", 1, ""}, {report.StatusFail, "missing", 0, ""}}},
		"n3": {report.StatusFail, []cell{{report.StatusPass, "", 0.5, "ok"}, {report.StatusFail, "refused", 0.5, "refused"}}},
		"n4": {report.StatusUnknown, []cell{{report.StatusUnknown, "", 0, ""}, {report.StatusUnknown, "", 0, ""}}},
	}
	if len(p.Nodes) != len(want) {
		t.Fatalf("%d rows, want %d", len(p.Nodes), len(want))
	}
	for _, row := range p.Nodes {
		w := want[row.Node]
		if row.Status != w.status {
			t.Errorf("%s: status %s (%s), want %s", row.Node, row.Status, row.Reason, w.status)
		}
		for i, c := range row.Cells {
			got := cell{c.Status, c.Problem, c.Share, c.Probe}
			if got != w.cells[i] {
				t.Errorf("%s %s: %+v, want %+v", row.Node, p.Endpoints[i], got, w.cells[i])
			}
		}
	}
	// The row of n2 fails where the datapath check does.
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPMissingEndpoints, "n2")
}

// TestEndpointMatrixNotInspected: no node report, no grid.
func TestEndpointMatrixNotInspected(t *testing.T) {
	if m := Assemble(nodeInput(), nil, Options{Now: fixedNow}).Matrix; m != nil {
		t.Fatalf("matrix without inspected nodes: %+v", m)
	}
}

// TestEndpointMatrixUnequalShare: a share off the fair one warns.
func TestEndpointMatrixUnequalShare(t *testing.T) {
	skewed := observation(t, collectorapi.ModeIPTables, &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{
		iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 0.9), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.1))}}, nil)
	tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: skewed})
	row := tr.Matrix.Ports[0].Nodes[0]
	if row.Status != report.StatusWarn || row.Cells[0].Problem != "unequal share" || row.Cells[0].FairShare != 0.5 {
		t.Fatalf("row %+v", row)
	}
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPUnequalShares, "n1")
}

// TestEndpointMatrixSparse: past the cell bound, rows keep their counts
// and only the cells that do not pass.
func TestEndpointMatrixSparse(t *testing.T) {
	defer func(n int) { maxMatrixCells = n }(maxMatrixCells)
	maxMatrixCells = 3
	oneMissing := observation(t, collectorapi.ModeIPTables, &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{
		iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 1))}}, nil)
	tr := judgeViews(t, nodeInput(),
		plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)},
		plan.NodeView{Node: "n2", Observation: oneMissing},
		plan.NodeView{Node: "n3", Failure: "could not pull its image"})
	p := tr.Matrix.Ports[0]
	if !p.Sparse {
		t.Fatal("6 cells over a bound of 3, not sparse")
	}
	byNode := map[string]report.MatrixRow{}
	for _, r := range p.Nodes {
		byNode[r.Node] = r
	}
	if r := byNode["n1"]; len(r.Cells) != 0 || r.Expected != 2 || r.Programmed != 2 {
		t.Errorf("n1 %+v", r)
	}
	if r := byNode["n2"]; len(r.Cells) != 1 || r.Cells[0].Endpoint != "10.244.2.7:8080" || r.Cells[0].Problem != "missing" || r.Programmed != 1 {
		t.Errorf("n2 %+v", r)
	}
	if r := byNode["n3"]; len(r.Cells) != 0 || r.Status != report.StatusUnknown {
		t.Errorf("n3 %+v", r)
	}
}

// TestMetadataClient: the --from client is recorded as --from names it.
func TestMetadataClient(t *testing.T) {
	in := nodeInput()
	from := &report.PolicyClient{Pod: pod("frontend", "shop", "10.244.3.3", "n1")}
	from.Pod.Namespace = "shop"
	if got := Assemble(in, nil, Options{Now: fixedNow, From: from}).Metadata.Client; got != "pod/shop/frontend" {
		t.Errorf("client %q", got)
	}
	if got := Assemble(nodeInput(), nil, Options{Now: fixedNow, From: &report.PolicyClient{NodeName: "n2"}}).Metadata.Client; got != "node/n2" {
		t.Errorf("client %q", got)
	}
	if got := Assemble(nodeInput(), nil, Options{Now: fixedNow}).Metadata.Client; got != "" {
		t.Errorf("client %q without --from", got)
	}
}
