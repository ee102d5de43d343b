package trace

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

var updateCatalogDoc = flag.Bool("update-catalog", false, "rewrite docs/checks.md from the catalog")

// TestCatalogDoc keeps docs/checks.md, the list of every check code users and
// bots see, equal to the catalog. Regenerate with
// `go test ./trace -run TestCatalogDoc -update-catalog`.
func TestCatalogDoc(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# svctrace check codes\n\n")
	b.WriteString("Every finding svctrace reports carries one of these stable codes (`apiVersion: svctrace.dev/v1alpha1`).\n")
	b.WriteString("Codes are never renumbered or reused. Severity is the default: `error` fails its layer, `warning` warns, `info` passes.\n")
	b.WriteString("Generated from `trace/report/catalog*.go` (one file per layer) by `go test ./trace -run TestCatalogDoc -update-catalog`.\n\n")
	b.WriteString("| code | layer | severity | title | message template |\n|---|---|---|---|---|\n")
	for _, code := range report.CatalogCodes() {
		s := report.Catalog[code]
		layer := string(s.Layer)
		if layer == "" {
			layer = "any"
		}
		msg := strings.ReplaceAll(s.Message, "|", "\\|")
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", code, layer, s.Severity, s.Title, msg)
	}
	const path = "../docs/checks.md"
	if *updateCatalogDoc {
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./trace -run TestCatalogDoc -update-catalog)", err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Fatalf("docs/checks.md is out of date: run go test ./trace -run TestCatalogDoc -update-catalog")
	}
}
