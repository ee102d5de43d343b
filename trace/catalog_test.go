package trace

import (
	"regexp"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// placeholder matches a {name} left unfilled in an emitted message.
var placeholder = regexp.MustCompile(`\{[a-zA-Z]+\}`)

// assertCatalogued fails the test if a check of t uses a code outside the
// catalog, a status that contradicts nothing, or leaves a placeholder.
func assertCatalogued(tb testing.TB, tr *report.ServiceTrace) {
	tb.Helper()
	if len(tr.Layers) != len(report.LayerOrder) {
		tb.Fatalf("trace has %d layers, want %d", len(tr.Layers), len(report.LayerOrder))
	}
	for i, l := range tr.Layers {
		if l.Name != report.LayerOrder[i] {
			tb.Errorf("layer %d is %s, want %s", i, l.Name, report.LayerOrder[i])
		}
		for _, c := range l.Checks {
			spec, ok := report.Catalog[c.Code]
			if !ok {
				tb.Errorf("layer %s: check code %s is not in the catalog", l.Name, c.Code)
				continue
			}
			if spec.Layer != "" && spec.Layer != l.Name {
				tb.Errorf("check %s belongs to layer %s, found in %s", c.Code, spec.Layer, l.Name)
			}
			for _, s := range []string{c.Message, c.NextStep} {
				if m := placeholder.FindString(s); m != "" {
					tb.Errorf("check %s left placeholder %s in %q", c.Code, m, s)
				}
			}
		}
	}
}
