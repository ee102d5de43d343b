package report

import (
	"regexp"
	"strings"
	"testing"
)

var codeShape = regexp.MustCompile(`^(API|SVC|PRT|EPS|POD|DNS|DP|CT|RT|NP|GW|ING)[0-9]{3}$`)

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
	if n == LayerFrontdoor {
		return true // first in a trace that started at a front door
	}
	for _, l := range LayerOrder {
		if l == n {
			return true
		}
	}
	return false
}
