package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const schemaPath = "../docs/schema/servicetrace.v1alpha1.json"

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("servicetrace.v1alpha1.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("servicetrace.v1alpha1.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// TestGoldenJSONMatchesSchema validates every JSON golden (and a fresh
// rendering of every scenario) against docs/schema.
func TestGoldenJSONMatchesSchema(t *testing.T) {
	sch := compileSchema(t)
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no JSON goldens (%v)", err)
	}
	for _, file := range files {
		validateJSONFile(t, sch, file)
	}
	for _, sc := range scenarios {
		var buf bytes.Buffer
		if err := JSON(&buf, sc.trace()); err != nil {
			t.Fatal(err)
		}
		inst, _ := jsonschema.UnmarshalJSON(&buf)
		if err := sch.Validate(inst); err != nil {
			t.Errorf("scenario %s: %v", sc.name, err)
		}
	}
}

// TestSchemaRejectsDrift proves the schema can fail: an unknown field or a
// bad status is rejected.
func TestSchemaRejectsDrift(t *testing.T) {
	sch := compileSchema(t)
	b, err := os.ReadFile("testdata/healthy.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		strings.Replace(string(b), `"status": "pass"`, `"status": "fine"`, 1),
		strings.Replace(string(b), `"apiVersion"`, `"surprise": 1, "apiVersion"`, 1),
		strings.Replace(string(b), `"code": "DNS001"`, `"code": "dns-1"`, 1),
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(bad))
		if err != nil {
			t.Fatal(err)
		}
		if sch.Validate(inst) == nil {
			t.Errorf("schema accepted a drifted document")
		}
	}
}

// validateJSONFile validates the JSON document in file against sch.
func validateJSONFile(t *testing.T, sch *jsonschema.Schema, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s: %v", file, err)
	}
}
