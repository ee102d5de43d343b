package trace_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/kubectl-svctrace/bundle"
	"github.com/svctrace/kubectl-svctrace/cmd/cli"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

var update = flag.Bool("update", false, "rewrite the scenario goldens (testdata/scenarios/*/"+goldenFile+") from this build's judge")

// scenarioRoot holds the recorded traces the judge is re-run on: one
// directory per scenario, each a bundle written by --save beside its
// scenario.yaml and its golden.
const scenarioRoot = "testdata/scenarios"

const (
	goldenFile   = "want.txt"
	scenarioFile = "scenario.yaml"
)

// scenario is a scenario's scenario.yaml: where its bundle comes from and
// what it is there to prove, so a reviewer of a golden change knows what
// the recording showed.
type scenario struct {
	// Recorded says which svctrace commit took the trace, on which cluster
	// and datapath.
	Recorded string `json:"recorded"`
	// Proves is what the judge must keep saying about it.
	Proves string `json:"proves"`
	// Frozen marks a bundle that must never be recorded again: it proves
	// that a bundle from an older svctrace still decodes. SHA256 then holds
	// the digest of each of its files as recorded.
	Frozen bool              `json:"frozen,omitempty"`
	SHA256 map[string]string `json:"sha256,omitempty"`
}

// TestScenarios re-judges every recorded bundle with this build's judge,
// through the path kubectl svctrace analyze takes (bundle.Read, then
// Bundle.Analyze), and compares the findings per layer and node with the
// scenario's golden. Regenerate with `make scenarios` (go test ./trace/
// -run TestScenarios -update), and only for an intended judge change: the
// diff of want.txt is what a reviewer reads.
func TestScenarios(t *testing.T) {
	dirs, err := scenarioDirs(scenarioRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no recorded scenario under %s: the judge is proven on nothing", scenarioRoot)
	}
	frozen := 0
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			sc, err := readScenario(dir)
			if err != nil {
				t.Fatal(err)
			}
			if sc.Frozen {
				frozen++
			}
			got, err := judgeScenario(dir)
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join(dir, goldenFile)
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run make scenarios)", err)
			}
			if d := lineDiff(string(want), got); d != "" {
				t.Errorf("%s: this build judges the recorded trace differently (-want +got); if the change is intended, run make scenarios and review the diff:\n%s", golden, d)
			}
		})
	}
	if frozen == 0 {
		t.Errorf("no scenario under %s is frozen: keep one bundle from an older svctrace to prove old bundles still decode", scenarioRoot)
	}
}

// scenarioDirs lists the directories under root that hold a bundle.
func scenarioDirs(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && bundle.IsBundle(filepath.Join(root, e.Name())) {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	return dirs, nil
}

// readScenario reads and checks dir's scenario.yaml; a frozen scenario's
// files must still be byte for byte what was recorded.
func readScenario(dir string) (*scenario, error) {
	data, err := os.ReadFile(filepath.Join(dir, scenarioFile))
	if err != nil {
		return nil, fmt.Errorf("%w (say what was recorded, where, and what it proves)", err)
	}
	var sc scenario
	if err := yaml.UnmarshalStrict(data, &sc); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, scenarioFile), err)
	}
	if strings.TrimSpace(sc.Recorded) == "" || strings.TrimSpace(sc.Proves) == "" {
		return nil, fmt.Errorf("%s: recorded and proves must both be given", filepath.Join(dir, scenarioFile))
	}
	if !sc.Frozen {
		return &sc, nil
	}
	if len(sc.SHA256) == 0 {
		return nil, fmt.Errorf("%s: a frozen scenario lists the sha256 of its recorded files", filepath.Join(dir, scenarioFile))
	}
	for _, name := range slices.Sorted(maps.Keys(sc.SHA256)) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(data)
		if got := hex.EncodeToString(sum[:]); got != sc.SHA256[name] {
			return nil, fmt.Errorf("%s of the frozen scenario %s changed (sha256 %s, recorded %s): it must stay as recorded",
				name, filepath.Base(dir), got, sc.SHA256[name])
		}
	}
	return &sc, nil
}

// judgeScenario reads the bundle in dir, checks that this build's types
// read every field it holds, judges it twice (the summary must not depend
// on the run) and returns the summary.
func judgeScenario(dir string) (string, error) {
	b, err := bundle.Read(dir)
	if err != nil {
		return "", fmt.Errorf("this build cannot read the recorded bundle: %w", err)
	}
	if err := checkLossless(dir, b); err != nil {
		return "", err
	}
	first := summarize(b, b.Analyze("scenario"))
	if again := summarize(b, b.Analyze("scenario")); again != first {
		return "", fmt.Errorf("two judgements of the same bundle differ (-first +second):\n%s", lineDiff(first, again))
	}
	return first, nil
}

// checkLossless decodes each file of the bundle into the type this build
// reads it with, encodes it again, and fails when a value of the recording
// is missing from the result: a renamed or retyped field would otherwise
// be dropped silently, and the judge would see less than was recorded.
func checkLossless(dir string, b *bundle.Bundle) error {
	types := map[string]reflect.Type{
		bundle.ManifestFile: reflect.TypeOf(b.Manifest),
		bundle.InputFile:    reflect.TypeOf(b.Input).Elem(),
		bundle.NodesFile:    reflect.TypeOf(bundle.NodeReport{}),
		bundle.ResultFile:   reflect.TypeOf(b.Result).Elem(),
	}
	var lost []string
	for _, name := range append([]string{bundle.ManifestFile}, b.Manifest.Files...) {
		typ, ok := types[name]
		if !ok {
			return fmt.Errorf("the manifest lists %s, which this build does not know", name)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		l, err := lostFields(data, typ)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for _, p := range l {
			lost = append(lost, name+": "+p)
		}
	}
	if len(lost) > 0 {
		const most = 20
		more := ""
		if len(lost) > most {
			more = fmt.Sprintf("\n… and %d more", len(lost)-most)
			lost = lost[:most]
		}
		return fmt.Errorf("this build reads the recorded bundle without these values (renamed or retyped fields? a bundle's fields are only ever added):\n%s%s",
			strings.Join(lost, "\n"), more)
	}
	return nil
}

// lostFields decodes data into a new value of typ, encodes that again and
// lists the JSON paths whose recorded value did not come back. A recorded
// zero value (null, "", 0, false, {}, []) that comes back absent is not a
// loss: it reads the same.
func lostFields(data []byte, typ reflect.Type) ([]string, error) {
	v := reflect.New(typ).Interface()
	if err := json.Unmarshal(data, v); err != nil {
		return nil, err
	}
	again, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var was, now any
	if err := json.Unmarshal(data, &was); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(again, &now); err != nil {
		return nil, err
	}
	var lost []string
	compareJSON("$", was, now, &lost)
	return lost, nil
}

func compareJSON(path string, was, now any, lost *[]string) {
	switch w := was.(type) {
	case map[string]any:
		n, ok := now.(map[string]any)
		if !ok {
			*lost = append(*lost, fmt.Sprintf("%s: recorded an object, read back %s", path, short(now)))
			return
		}
		for _, k := range slices.Sorted(maps.Keys(w)) {
			nv, ok := n[k]
			if !ok {
				if !zeroJSON(w[k]) {
					*lost = append(*lost, fmt.Sprintf("%s.%s: recorded %s, not read", path, k, short(w[k])))
				}
				continue
			}
			compareJSON(path+"."+k, w[k], nv, lost)
		}
	case []any:
		n, ok := now.([]any)
		if !ok || len(n) != len(w) {
			*lost = append(*lost, fmt.Sprintf("%s: recorded %d items, read back %s", path, len(w), short(now)))
			return
		}
		for i := range w {
			compareJSON(fmt.Sprintf("%s[%d]", path, i), w[i], n[i], lost)
		}
	default:
		if !reflect.DeepEqual(was, now) && !(zeroJSON(was) && now == nil) {
			*lost = append(*lost, fmt.Sprintf("%s: recorded %s, read back %s", path, short(was), short(now)))
		}
	}
}

func zeroJSON(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case float64:
		return x == 0
	case bool:
		return !x
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func short(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}

// summarize is a scenario's golden: the verdict, the exit code the user
// would get, and every check as "layer node status severity code" (then
// family=, where the check is about one IP family), sorted within its
// layer. Messages are left out on purpose: a golden changes when a finding
// does, not when its wording does (render's goldens cover the wording).
func summarize(b *bundle.Bundle, t *report.ServiceTrace) string {
	var w strings.Builder
	w.WriteString("# The findings of this build's judge on the recorded bundle beside this file.\n")
	w.WriteString("# Regenerate with make scenarios, only for an intended judge change; review the diff.\n")
	then := "no result saved"
	if r := b.Result; r != nil {
		then = strings.TrimSpace(fmt.Sprintf("%s %s", r.Verdict.Status, r.Verdict.Code))
	}
	fmt.Fprintf(&w, "service %s/%s (recorded by svctrace %s, judged then: %s)\n",
		b.Manifest.Service.Namespace, b.Manifest.Service.Name, orDash(b.Manifest.SvctraceVersion), then)
	v := t.Verdict
	fmt.Fprintf(&w, "verdict %s code=%s node=%s first-failing=%s root-cause=%s\n",
		v.Status, orDash(v.Code), orDash(v.Node), orDash(string(v.FirstFailingLayer)), orDash(string(v.RootCauseLayer)))
	fmt.Fprintf(&w, "exit %d\n", cli.VerdictExitCode(t))
	for _, l := range t.Layers {
		fmt.Fprintf(&w, "\nlayer %s %s\n", l.Name, l.Status)
		nodes := make([]string, 0, len(l.Nodes))
		for _, n := range l.Nodes {
			nodes = append(nodes, fmt.Sprintf("node %s %s", n.Node, n.Status))
		}
		slices.Sort(nodes)
		checks := make([]string, 0, len(l.Checks))
		for _, c := range l.Checks {
			line := fmt.Sprintf("%s %s %s %s %s", l.Name, orDash(c.Node), c.Status, c.Severity, c.Code)
			if c.Family != "" {
				line += " family=" + c.Family
			}
			if e := c.ExplainedBy; e != nil {
				line += fmt.Sprintf(" explained-by=%s/%s/%s", e.Layer, e.Code, orDash(e.Node))
			}
			checks = append(checks, line)
		}
		slices.Sort(checks)
		for _, line := range append(nodes, checks...) {
			w.WriteString(line + "\n")
		}
	}
	return w.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// lineDiff is a line diff of want and got ("" when equal): unchanged lines
// with a two-space prefix near a change, removed ones with "-", added ones
// with "+".
func lineDiff(want, got string) string {
	if want == got {
		return ""
	}
	a, b := splitLines(want), splitLines(got)
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			lines = append(lines, line{' ', a[i]})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, line{'-', a[i]})
			i++
		default:
			lines = append(lines, line{'+', b[j]})
			j++
		}
	}
	const context = 2
	var out bytes.Buffer
	last := -1
	for k, l := range lines {
		near := false
		for d := max(0, k-context); d <= min(len(lines)-1, k+context); d++ {
			if lines[d].op != ' ' {
				near = true
				break
			}
		}
		if !near {
			continue
		}
		if last >= 0 && k > last+1 {
			out.WriteString("  ...\n")
		}
		last = k
		text, ok := strings.CutSuffix(l.text, "\n")
		if !ok {
			text += " (no newline at the end)"
		}
		if l.op == ' ' {
			fmt.Fprintf(&out, "  %s\n", text)
		} else {
			fmt.Fprintf(&out, "%c %s\n", l.op, text)
		}
	}
	return out.String()
}

// splitLines splits s after each newline; a last line without one stays a
// line of its own, so that a missing final newline shows as a change.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
