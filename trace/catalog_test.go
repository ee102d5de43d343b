package trace

import (
	"regexp"
	"strings"
	"testing"
)

var codeShape = regexp.MustCompile(`^(API|SVC|PRT|EPS|POD|DNS|DP|CT|RT|NP)[0-9]{3}$`)

// placeholder matches a {name} left unfilled in an emitted message.
var placeholder = regexp.MustCompile(`\{[a-zA-Z]+\}`)

func TestCatalogEntries(t *testing.T) {
	for code, spec := range Catalog {
		if code != spec.Code {
			t.Errorf("catalog key %s holds code %s", code, spec.Code)
		}
		if !codeShape.MatchString(code) {
			t.Errorf("code %s does not have the layer-prefixed shape", code)
		}
		if spec.Title == "" || spec.Message == "" || spec.NextStep == "" {
			t.Errorf("code %s lacks a title, message or next step", code)
		}
		switch spec.Severity {
		case SeverityInfo, SeverityWarning, SeverityError:
		default:
			t.Errorf("code %s has severity %q", code, spec.Severity)
		}
		if spec.Layer != "" && !isLayer(spec.Layer) {
			t.Errorf("code %s names unknown layer %q", code, spec.Layer)
		}
		if !strings.HasPrefix(spec.NextStep, "kubectl ") {
			t.Errorf("code %s: next step %q is not a kubectl command", code, spec.NextStep)
		}
	}
}

func TestCatalogDuplicatePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("buildCatalog accepted a duplicate code")
		}
	}()
	buildCatalog([]CheckSpec{{Code: "SVC001"}, {Code: "SVC001"}})
}

func TestNewCheckFillsTemplates(t *testing.T) {
	c := NewCheck(CodeSvcNotFound, Args{"service": "web", "namespace": "default", "closest": ""})
	if c.Message != "Service web not found in namespace default" || c.Status != StatusFail || c.Severity != SeverityError {
		t.Fatalf("unexpected check %+v", c)
	}
	if c.NextStep != "kubectl get services -n default" {
		t.Fatalf("next step %q", c.NextStep)
	}
	// jsonpath braces survive
	c = NewCheck(CodeSvcIPFamilies, Args{"service": "web", "namespace": "default", "families": "IPv4", "policy": "SingleStack"})
	if !strings.Contains(c.NextStep, "{.spec.clusterIPs}") {
		t.Fatalf("jsonpath lost: %q", c.NextStep)
	}
}

func TestNewCheckUnknownCodePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewCheck accepted an unknown code")
		}
	}()
	NewCheck("XYZ999", nil)
}

func isLayer(n LayerName) bool {
	for _, l := range LayerOrder {
		if l == n {
			return true
		}
	}
	return false
}

// assertCatalogued fails the test if a check of t uses a code outside the
// catalog, a status that contradicts nothing, or leaves a placeholder.
func assertCatalogued(tb testing.TB, tr *ServiceTrace) {
	tb.Helper()
	if len(tr.Layers) != len(LayerOrder) {
		tb.Fatalf("trace has %d layers, want %d", len(tr.Layers), len(LayerOrder))
	}
	for i, l := range tr.Layers {
		if l.Name != LayerOrder[i] {
			tb.Errorf("layer %d is %s, want %s", i, l.Name, LayerOrder[i])
		}
		for _, c := range l.Checks {
			spec, ok := Catalog[c.Code]
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
