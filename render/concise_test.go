package render

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestHealthyReportIsShort: the healthy two-endpoint Service, inspected on
// both nodes, fits in 30 lines by default in every variant; -o wide says more.
func TestHealthyReportIsShort(t *testing.T) {
	var tr = findScenario(t, "nodes-healthy").trace()
	for _, v := range variants {
		var buf bytes.Buffer
		if err := Text(&buf, tr, v.opts); err != nil {
			t.Fatal(err)
		}
		n := strings.Count(buf.String(), "\n")
		switch {
		case v.opts.Details && n <= 30:
			t.Errorf("%s: -o wide prints only %d lines; it should show every check's evidence", v.name, n)
		case !v.opts.Details && n > 30:
			t.Errorf("%s: %d lines, want at most 30:\n%s", v.name, n, buf.String())
		}
	}
}

// TestPicturesFitEightyColumns: the path and the grid stay inside 80
// columns in every scenario and variant (the lines between the header and
// the Service block).
func TestPicturesFitEightyColumns(t *testing.T) {
	for _, sc := range scenarios {
		tr := sc.trace()
		for _, v := range variants {
			var buf bytes.Buffer
			if err := Text(&buf, tr, v.opts); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(ansi.ReplaceAllString(buf.String(), ""), "\n")
			in := false
			for _, l := range lines {
				switch {
				case strings.HasPrefix(l, "  any Pod "):
					in = true
				case l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "Nodes"):
					in = false
				}
				if in && width(l) > lineWidth {
					t.Errorf("%s/%s: %d columns: %q", sc.name, v.name, width(l), l)
				}
			}
		}
	}
}

// TestPathNamesFailingHop: the pointer sits under the hop of the verdict's
// failing layer.
func TestPathNamesFailingHop(t *testing.T) {
	for name, hop := range map[string]string{"no-endpoints": "endpoints", "nodes-100": "datapath", "selector-mismatch": "Service"} {
		var buf bytes.Buffer
		if err := Text(&buf, findScenario(t, name).trace(), TextOptions{}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(buf.String(), "\n")
		for i, l := range lines {
			if !strings.Contains(l, "▲ fails here") {
				continue
			}
			col := width(l[:strings.Index(l, "▲")])
			names := []rune(lines[i-2])
			if col >= len(names) || !strings.HasPrefix(string(names[col:]), hop) {
				t.Errorf("%s: pointer at column %d of %q, want under %s", name, col, lines[i-2], hop)
			}
			goto next
		}
		t.Errorf("%s: no failing hop pointed at:\n%s", name, buf.String())
	next:
	}
}

// TestGridFoldsIdenticalNodes: at 100 nodes the grid has one row for the
// 97 that agree and one per outlier.
func TestGridFoldsIdenticalNodes(t *testing.T) {
	var buf bytes.Buffer
	if err := Text(&buf, findScenario(t, "nodes-100").trace(), TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"  97 nodes  ✔ 50% ok", "  node-042  ✔ 100% ok        ✖ missing", "  node-077  ✖ 50% timeout", "  node-099  ?"} {
		if !strings.Contains(out, want) {
			t.Errorf("grid lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\n"); n > 70 {
		t.Errorf("100-node report is %d lines", n)
	}
}

func findScenario(t *testing.T, name string) scenario {
	t.Helper()
	for _, sc := range scenarios {
		if sc.name == name {
			return sc
		}
	}
	t.Fatalf("no scenario %s", name)
	return scenario{}
}

// TestSparseGridReadsLikeFull: a sparse port (passing cells left out of the
// result) prints the same counted grid as the full one.
func TestSparseGridReadsLikeFull(t *testing.T) {
	full := findScenario(t, "nodes-12-endpoints").trace()
	sparse := findScenario(t, "nodes-12-endpoints").trace()
	p := &sparse.Matrix.Ports[0]
	p.Sparse = true
	for i := range p.Nodes {
		var kept []report.MatrixCell
		for _, c := range p.Nodes[i].Cells {
			if c.Status != report.StatusPass && c.Status != report.StatusSkipped {
				kept = append(kept, c)
			}
		}
		p.Nodes[i].Cells = kept
	}
	var a, b bytes.Buffer
	writeGrid(&a, newTextStyle(&a, TextOptions{}), full.Matrix)
	writeGrid(&b, newTextStyle(&b, TextOptions{}), sparse.Matrix)
	if a.String() != b.String() {
		t.Errorf("sparse grid differs:\n%s\nfull:\n%s", b.String(), a.String())
	}
	if !strings.Contains(b.String(), "node-c  ✖ 11/12  probes 11 ok, 1 timeout  10.244.1.7:8080 missing") {
		t.Errorf("odd endpoints not named:\n%s", b.String())
	}
}
