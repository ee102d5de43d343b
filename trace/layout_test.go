package trace

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const tracePkg = "github.com/svctrace/kubectl-svctrace/trace"

// TestSubpackagesNeverImportTrace: the judge's sub-packages (the API input,
// the node plan, the expectation, the programmed model, the report, netpol)
// are what trace is built from; one that imported trace back would tie the
// model to the judge. go list -deps of each must not name trace itself.
func TestSubpackagesNeverImportTrace(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	out, err := exec.Command("go", "list", "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	subs := map[string]bool{}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == tracePkg {
			continue
		}
		subs[strings.TrimPrefix(pkg, tracePkg+"/")] = true
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
	for _, want := range []string{"input", "plan", "expect", "programmed", "report", "netpol"} {
		if !subs[want] {
			t.Errorf("go list found no trace/%s: the check would not cover it", want)
		}
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

// TestNodesNeverImportTrace: the node side implements the plan's contract
// (plan.NodeInspector) and returns a plan.NodeReport; it never sees the
// judge. Importing trace would let it call into the judge, and would link
// every judge into whatever embeds the node runner.
func TestNodesNeverImportTrace(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command")
	}
	out, err := exec.Command("go", "list", "-deps", "../nodes").Output()
	if err != nil {
		t.Fatalf("go list -deps ../nodes: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, tracePkg+"/plan") {
		t.Fatalf("package nodes does not depend on %s/plan: the check would prove nothing", tracePkg)
	}
	if slices.Contains(deps, tracePkg) {
		t.Errorf("package nodes depends on %s; it may import trace/plan, trace/input and trace/report only", tracePkg)
	}
}

// codeFiles says, per check-code prefix, which files of trace may emit it:
// the layer's own file first, then the few that judge one observation for
// several layers (a probe's result speaks for the route, the datapath and
// the endpoint; the client Pod's own view for every layer it crosses) and
// node.go, which reports a node it could not inspect (DP001). A new file
// that emits codes, or an emission from a file of another layer (a DP code
// from dns.go), fails TestCodePrefixNamesTheFile until this table says so.
var codeFiles = map[string][]string{
	"API": {"judge.go"},
	"SVC": {"service.go"},
	"PRT": {"ports.go"},
	"EPS": {"endpoints.go", "sockets.go", "probes.go"},
	"POD": {"pods.go"},
	"DNS": {"dns.go", "clientpod.go"},
	"DP":  {"datapath.go", "frontends.go", "ipvs.go", "ebpf.go", "masquerade.go", "synclag.go", "probes.go", "clientpod.go", "node.go"},
	"CT":  {"conntrack.go"},
	"RT":  {"route.go", "probes.go", "clientpod.go"},
	"NP":  {"policy.go", "clientpod.go"},
}

// catalogPrefixes maps every report.Code* constant to its code's prefix
// ("DP" for "DP007"), read from trace/report/catalog_*.go, and checks that
// each of those files holds the codes of its own prefix only: the catalog is
// split by layer the same way.
func catalogPrefixes(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("report/catalog*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	prefixes := map[string]string{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		filePrefix := strings.ToUpper(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "catalog_"), ".go"))
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("%s: %s is not a string literal", fset.Position(name.Pos()), name.Name)
					}
					prefix := strings.TrimRight(strings.Trim(lit.Value, `"`), "0123456789")
					prefixes[name.Name] = prefix
					if filepath.Base(path) == "catalog.go" || prefix != filePrefix {
						t.Errorf("%s: %s (%s) belongs in report/catalog_%s.go", fset.Position(name.Pos()), name.Name, lit.Value, strings.ToLower(prefix))
					}
				}
			}
		}
	}
	if len(prefixes) < 100 {
		t.Fatalf("read %d catalog codes; the check would prove nothing", len(prefixes))
	}
	return prefixes
}

// TestCodePrefixNamesTheFile: a check code's prefix says which file emits
// it (codeFiles), so that the judge of a layer is found by its name and a
// layer's checks are not scattered over the files of others. Comparing a
// check's code (==, a case, a map key) is reading, which explain.go does for
// every layer to chain causes; every other use of a report.Code* constant
// in trace's non-test files counts as emitting it.
func TestCodePrefixNamesTheFile(t *testing.T) {
	prefixes := catalogPrefixes(t)
	for prefix, files := range codeFiles {
		for _, f := range files {
			if _, err := os.Stat(f); err != nil {
				t.Errorf("codeFiles[%s] names %s: %v (keep the table true)", prefix, f, err)
			}
		}
	}
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	emitted := 0
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		reads := map[ast.Expr]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BinaryExpr:
				if n.Op == token.EQL || n.Op == token.NEQ {
					reads[n.X], reads[n.Y] = true, true
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					reads[e] = true
				}
			case *ast.CompositeLit:
				if _, isMap := n.Type.(*ast.MapType); isMap {
					for _, e := range n.Elts {
						if kv, ok := e.(*ast.KeyValueExpr); ok {
							reads[kv.Key] = true
						}
					}
				}
			}
			return true
		})
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || reads[sel] {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "report" || !strings.HasPrefix(sel.Sel.Name, "Code") {
				return true
			}
			prefix, known := prefixes[sel.Sel.Name]
			if !known {
				t.Errorf("%s: report.%s is not a catalog code", fset.Position(sel.Pos()), sel.Sel.Name)
				return true
			}
			emitted++
			allowed, ok := codeFiles[prefix]
			if !ok {
				t.Errorf("%s: report.%s: prefix %s has no entry in codeFiles", fset.Position(sel.Pos()), sel.Sel.Name, prefix)
			} else if !slices.Contains(allowed, path) {
				t.Errorf("%s: report.%s is a %s code; %s codes are emitted from %s", fset.Position(sel.Pos()), sel.Sel.Name, prefix, prefix, strings.Join(allowed, ", "))
			}
			return true
		})
	}
	if emitted < 100 {
		t.Fatalf("found %d code emissions in trace; the check would prove nothing", emitted)
	}
}

// branchWords are words that say how or when code was written rather than
// what it judges: the name of the branch or work that added it, or a
// catch-all. A deny-list, not an allow-list: the nouns of the domain are
// open-ended (a new datapath, a new layer), and an allow-list would be
// edited by whoever adds a file and so would prove nothing, while these
// words are the ones the files were once named with. "client" alone is
// ambiguous in a kubectl plugin (the API client or the --from Pod), so the
// --from Pod's view is clientpod. "matrix" is not here: the endpoint
// matrix is a noun of the result model (report.EndpointMatrix); the judge
// that fills it is named after what it judges, reachability.
var branchWords = []string{
	"failmodes", "sets", "client", "misc", "util", "utils", "helper", "helpers",
	"common", "extra", "more", "new", "fixes", "stuff", "impl", "v2",
}

// TestFileNamesAreDomainNouns: a file of trace or of its sub-packages is
// named after the layer, the object or the question it handles, never
// after one of branchWords (a word of its name, split at "_", test files
// by their name without "_test").
func TestFileNamesAreDomainNouns(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		stem := strings.TrimSuffix(strings.TrimSuffix(d.Name(), ".go"), "_test")
		for _, w := range strings.Split(stem, "_") {
			if slices.Contains(branchWords, w) {
				t.Errorf("trace/%s: %q says how the code came to be, not what it judges; name the file after its layer or noun", path, w)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d file names under trace; the check would prove nothing", files)
	}
}
