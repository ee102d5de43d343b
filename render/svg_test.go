package render

import (
	"bytes"
	"context"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
			if hops != 6 {
				t.Errorf("%d hops, want 6", hops)
			}
			tr := sc.trace()
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

// chromium finds Debian's chromium (test/testbed/deps.sh installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed: the SVG browser test needs it (make deps installs Debian's chromium)")
	return ""
}

func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

// TestSVGInChromium loads the pictures in headless Chromium: the document
// parses (no XML error page), its DOM holds the hops and cells, and a
// screenshot shows the failing hop's red where the trace fails and none
// where it passes.
func TestSVGInChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	for _, name := range []string{"nodes-healthy", "nodes-failing", "nodes-100", "nodes-12-endpoints", "no-endpoints", "not-found", "escape"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".svg")
			if err := os.WriteFile(path, renderSVG(t, name), 0o644); err != nil {
				t.Fatal(err)
			}
			dom := string(runChromium(t, bin, "--dump-dom", "file://"+path))
			if strings.Contains(dom, "parsererror") || strings.Contains(dom, "This page contains the following errors") {
				t.Fatalf("Chromium could not parse the SVG:\n%.2000s", dom)
			}
			for _, want := range []string{`data-hop="dns"`, `data-hop="service"`, `data-hop="datapath"`, `data-hop="endpoints"`} {
				if !strings.Contains(dom, want) {
					t.Errorf("DOM lacks %s:\n%.2000s", want, dom)
				}
			}
			if strings.HasPrefix(name, "nodes-") && !strings.Contains(dom, `class="row"`) {
				t.Errorf("DOM lacks the grid cells")
			}
			shot := filepath.Join(dir, name+".png")
			runChromium(t, bin, "--screenshot="+shot, "--window-size=1040,700", "--hide-scrollbars", "file://"+path)
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
