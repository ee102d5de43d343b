package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var variants = []struct {
	name string
	opts TextOptions
}{
	{"plain", TextOptions{}},
	{"color", TextOptions{Color: true}},
	{"ascii", TextOptions{ASCII: true}},
	{"wide", TextOptions{Details: true}},
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./render/ -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden; run go test ./render/ -update and review the diff\n--- got ---\n%s", path, got)
	}
}

func TestTextGolden(t *testing.T) {
	for _, sc := range scenarios {
		tr := sc.trace()
		for _, v := range variants {
			t.Run(sc.name+"/"+v.name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := Text(&buf, tr, v.opts); err != nil {
					t.Fatal(err)
				}
				out := buf.String()
				hasANSI := strings.Contains(out, "\x1b[")
				if hasANSI != v.opts.Color {
					t.Errorf("ANSI escapes present=%v with Color=%v", hasANSI, v.opts.Color)
				}
				if v.opts.ASCII {
					for i, r := range out {
						if r > 127 {
							t.Fatalf("non-ASCII %q at %d in ASCII output", r, i)
						}
					}
				}
				golden(t, sc.name+"."+v.name+".txt", buf.Bytes())
			})
		}
	}
}

func TestStructuredGolden(t *testing.T) {
	for _, sc := range scenarios {
		tr := sc.trace()
		t.Run(sc.name, func(t *testing.T) {
			var j, y bytes.Buffer
			if err := JSON(&j, tr); err != nil {
				t.Fatal(err)
			}
			if err := YAML(&y, tr); err != nil {
				t.Fatal(err)
			}
			golden(t, sc.name+".json", j.Bytes())
			golden(t, sc.name+".yaml", y.Bytes())
			// JSON and YAML carry the same document.
			var fromJSON, fromYAML report.ServiceTrace
			if err := json.Unmarshal(j.Bytes(), &fromJSON); err != nil {
				t.Fatal(err)
			}
			if err := yaml.Unmarshal(y.Bytes(), &fromYAML); err != nil {
				t.Fatal(err)
			}
			a, _ := json.Marshal(fromJSON)
			b, _ := json.Marshal(fromYAML)
			if !bytes.Equal(a, b) {
				t.Errorf("JSON and YAML differ:\n%s\n%s", a, b)
			}
		})
	}
}

// TestTextCarriesEveryCheck makes sure the text view drops nothing the JSON has.
func TestTextCarriesEveryCheck(t *testing.T) {
	for _, sc := range scenarios {
		tr := sc.trace()
		var buf bytes.Buffer
		if err := Text(&buf, tr, TextOptions{}); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		for _, l := range tr.Layers {
			for _, c := range l.Checks {
				if !strings.Contains(out, c.Code) {
					t.Errorf("%s: text lacks check %s", sc.name, c.Code)
				}
			}
		}
		if !strings.Contains(out, tr.Verdict.Summary) && sc.name != "escape" {
			t.Errorf("%s: text lacks the verdict summary", sc.name)
		}
	}
}

func TestEscapesClusterStrings(t *testing.T) {
	for _, sc := range scenarios {
		if sc.name != "escape" {
			continue
		}
		var buf bytes.Buffer
		if err := Text(&buf, sc.trace(), TextOptions{}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), "\x1b") {
			t.Fatal("a cluster-supplied escape sequence reached the terminal")
		}
		if !strings.Contains(buf.String(), "^[[31mRED") {
			t.Fatalf("escaped label not shown:\n%s", buf.String())
		}
	}
}

func TestDecideTextOptions(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	utf := map[string]string{"LANG": "en_US.UTF-8", "TERM": "xterm-256color"}
	tests := []struct {
		name       string
		mode       string
		tty        bool
		env        map[string]string
		color, asc bool
		wantErr    bool
	}{
		{"auto tty utf8", ColorAuto, true, utf, true, false, false},
		{"auto piped", ColorAuto, false, utf, false, true, false},
		{"auto NO_COLOR", ColorAuto, true, map[string]string{"LANG": "C.UTF-8", "NO_COLOR": "1"}, false, false, false},
		{"auto dumb", ColorAuto, true, map[string]string{"LANG": "C.UTF-8", "TERM": "dumb"}, false, true, false},
		{"always dumb", ColorAlways, true, map[string]string{"LANG": "C.UTF-8", "TERM": "dumb"}, true, true, false},
		{"never tty", ColorNever, true, utf, false, true, false},
		{"always piped", ColorAlways, false, utf, true, true, false},
		{"tty without utf8 locale", ColorAuto, true, map[string]string{"LANG": "C"}, true, true, false},
		{"LC_ALL wins", ColorNever, true, map[string]string{"LC_ALL": "POSIX", "LANG": "en_US.UTF-8"}, false, true, false},
		{"bad mode", "sometimes", true, utf, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o, err := DecideTextOptions(tc.mode, tc.tty, env(tc.env))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if err == nil && (o.Color != tc.color || o.ASCII != tc.asc) {
				t.Fatalf("got color=%v ascii=%v, want %v %v", o.Color, o.ASCII, tc.color, tc.asc)
			}
		})
	}
}
