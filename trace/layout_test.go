package trace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const tracePkg = "github.com/svctrace/kubectl-svctrace/trace"

// TestSubpackagesNeverImportTrace: the judge's sub-packages (the
// expectation, the programmed model, the report, netpol) are what trace is
// built from; one that imported trace back would tie the model to the
// judge. go list -deps of each must not name trace itself.
func TestSubpackagesNeverImportTrace(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	subs := 0
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == tracePkg {
			continue
		}
		subs++
		deps, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, d := range strings.Fields(string(deps)) {
			if d == tracePkg {
				t.Errorf("%s depends on %s", pkg, tracePkg)
			}
		}
	}
	if subs < 4 {
		t.Fatalf("go list found %d sub-packages of trace; the check would prove nothing", subs)
	}
}

// TestDatapathModesOnlyInProgrammed: which datapath mode a node runs is
// read and turned into rules and predicates by the programmed package
// alone; the judge asks those (programmed.IsEBPF, RulesOf, …) so that a new
// datapath is a new translator there, not a new case in every judge file.
// A collectorapi.Mode* constant anywhere else in trace's non-test code
// fails this test.
func TestDatapathModesOnlyInProgrammed(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "programmed" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files++
		alias := ""
		for _, imp := range f.Imports {
			if strings.Trim(imp.Path.Value, `"`) == "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1" {
				alias = "v1alpha1"
				if imp.Name != nil {
					alias = imp.Name.Name
				}
			}
		}
		if alias == "" {
			return nil
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == alias && strings.HasPrefix(sel.Sel.Name, "Mode") {
					t.Errorf("%s: %s.%s outside trace/programmed", fset.Position(sel.Pos()), alias, sel.Sel.Name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 20 {
		t.Fatalf("read %d files of trace; the check would prove nothing", files)
	}
}
