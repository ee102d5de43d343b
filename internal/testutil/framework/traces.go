package framework

import (
	"fmt"
	"slices"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// CheckKeys lists every check of a trace as layer/code/node=status, sorted:
// what two traces of the same state must agree on, whatever their timings
// and collector Pod names.
func CheckKeys(tr *report.ServiceTrace) []string {
	var out []string
	for _, l := range tr.Layers {
		for _, c := range l.Checks {
			out = append(out, fmt.Sprintf("%s/%s/%s=%s", l.Name, c.Code, c.Node, c.Status))
		}
	}
	slices.Sort(out)
	return out
}
