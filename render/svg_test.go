package render

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/browser"
)

func renderSVG(t *testing.T, name string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := SVG(&buf, findScenario(t, name).trace()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestSVGGolden: the picture of every scenario, well-formed XML with one
// element per hop, grid rows for a multi-node trace, and the failing hop
// flagged.
func TestSVGGolden(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			b := renderSVG(t, sc.name)
			golden(t, sc.name+".svg", b)
			dec := xml.NewDecoder(bytes.NewReader(b))
			hops, rows, failing := 0, 0, ""
			for {
				tok, err := dec.Token()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("not well-formed: %v", err)
				}
				if se, ok := tok.(xml.StartElement); ok {
					for _, a := range se.Attr {
						switch a.Name.Local {
						case "data-hop":
							hops++
						case "class":
							if a.Value == "row" {
								rows++
							}
						case "data-failing":
							failing = "yes"
						}
					}
				}
			}
			tr := sc.trace()
			want := 6
			if tr.Frontdoor != nil {
				want = 7 // the gateway's hop
			}
			if hops != want {
				t.Errorf("%d hops, want %d", hops, want)
			}
			if (failing != "") != (tr.Verdict.FirstFailingLayer != "") {
				t.Errorf("failing hop flagged=%q, verdict fails at %q", failing, tr.Verdict.FirstFailingLayer)
			}
			if tr.Matrix != nil && gridRowsCount(tr.Matrix) > 1 && rows == 0 {
				t.Errorf("a multi-node trace without grid rows")
			}
			if bytes.Contains(b, []byte("\x1b")) {
				t.Errorf("a control character reached the SVG")
			}
		})
	}
}

// TestSVGInChromium loads the pictures in headless Chromium: the document
// parses (no XML error page), its DOM holds the hops and cells, and a
// screenshot shows the failing hop's red where the trace fails and none
// where it passes.
func TestSVGInChromium(t *testing.T) {
	bin := browser.Chromium(t)
	dir := t.TempDir()
	for _, name := range []string{"nodes-healthy", "nodes-failing", "nodes-100", "nodes-12-endpoints", "no-endpoints", "not-found", "escape"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".svg")
			if err := os.WriteFile(path, renderSVG(t, name), 0o644); err != nil {
				t.Fatal(err)
			}
			dom := browser.DumpDOM(t, bin, path)
			for _, want := range []string{`data-hop="dns"`, `data-hop="service"`, `data-hop="datapath"`, `data-hop="endpoints"`} {
				if !strings.Contains(dom, want) {
					t.Errorf("DOM lacks %s:\n%.2000s", want, dom)
				}
			}
			if strings.HasPrefix(name, "nodes-") && !strings.Contains(dom, `class="row"`) {
				t.Errorf("DOM lacks the grid cells")
			}
			shot := filepath.Join(dir, name+".png")
			browser.Run(t, bin, "--screenshot="+shot, "--window-size=1040,700", "--hide-scrollbars", "file://"+path)
			f, err := os.Open(shot)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			img, err := png.Decode(f)
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			red, green := 0, 0
			b := img.Bounds()
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					r, g, bl, _ := img.At(x, y).RGBA()
					r, g, bl = r>>8, g>>8, bl>>8
					switch {
					case near(r, 0xcf) && near(g, 0x22) && near(bl, 0x2e):
						red++
					case near(r, 0x1a) && near(g, 0x7f) && near(bl, 0x37):
						green++
					}
				}
			}
			fails := findScenario(t, name).trace().Verdict.FirstFailingLayer != ""
			if fails && red < 100 {
				t.Errorf("failing trace, but only %d red pixels in the screenshot", red)
			}
			if !fails && red > 0 {
				t.Errorf("passing trace, but %d red pixels in the screenshot", red)
			}
			if name == "nodes-healthy" && green < 100 {
				t.Errorf("healthy trace, but only %d green pixels", green)
			}
		})
	}
}

func near(a, b uint32) bool { return a+12 >= b && a <= b+12 }
