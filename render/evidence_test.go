package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestTextBoundsLargeEvidence: the terminal view (-o wide, which shows a
// passing check's evidence) shows 20 items of a list and 400 bytes of a
// line, and says how much more -o json has.
func TestTextBoundsLargeEvidence(t *testing.T) {
	tr := scenarios[0].trace()
	var items []string
	for i := range 5000 {
		items = append(items, fmt.Sprintf("10.252.%d.%d:8080", i/256, i%256))
	}
	l := tr.Layer(report.LayerEndpoints)
	l.Checks[0].Evidence = &report.Evidence{
		Fields: []report.Field{{Key: "endpoints", Items: items}},
		Raw:    []string{"map { " + strings.Repeat("0 : 10.252.0.1:8080, ", 300) + "}"},
	}
	var buf bytes.Buffer
	if err := Text(&buf, tr, TextOptions{Details: true}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 600 {
			t.Errorf("line of %d bytes: %.80s…", len(line), line)
		}
	}
	if !strings.Contains(out, "… 4980 more in -o json") {
		t.Errorf("the item count left out is not said:\n%s", out)
	}
	if !strings.Contains(out, "more bytes in -o json)") {
		t.Errorf("the clipped line does not say so:\n%s", out)
	}
	if !strings.Contains(out, "10.252.0.19:8080") || strings.Contains(out, "10.252.0.20:8080") {
		t.Errorf("want exactly the first 20 items")
	}
}
