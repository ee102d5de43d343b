package trace

import (
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestSparseRowKeepsACountNotEveryMissingCell: a node that programs none of
// a sparse port's endpoints keeps maxSparseRowCells cells and counts all of
// them, so 1,000 such nodes are not millions of "missing" cells.
func TestSparseRowKeepsACountNotEveryMissingCell(t *testing.T) {
	in := bigInput(5000)
	var views []plan.NodeView
	empty := bigObservation(t, bigInput(1))
	for _, n := range []string{"node-00", "node-01", "node-02", "node-03", "node-04"} {
		views = append(views, plan.NodeView{Node: n, Observation: empty})
	}
	tr := Assemble(in, &plan.NodeReport{Nodes: views}, Options{Now: fixedNow})
	if tr.Matrix == nil || len(tr.Matrix.Ports) == 0 {
		t.Fatal("no matrix")
	}
	p := tr.Matrix.Ports[0]
	if !p.Sparse {
		t.Fatalf("5 nodes × %d endpoints not sparse", len(p.Endpoints))
	}
	for _, r := range p.Nodes {
		if r.Status != report.StatusFail {
			t.Errorf("node %s %s, want fail", r.Node, r.Status)
		}
		if len(r.Cells) > maxSparseRowCells || r.OddCells < r.Expected-r.Programmed {
			t.Errorf("node %s keeps %d cells, counts %d odd, misses %d", r.Node, len(r.Cells), r.OddCells, r.Expected-r.Programmed)
		}
	}
}
