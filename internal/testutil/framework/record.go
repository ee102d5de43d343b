package framework

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// RecordScenariosEnv names the variable that turns recording on: when it
// holds a directory, every end-to-end trace also saves its bundle there
// (--save), one directory per trace, named after the test. Those bundles
// are what trace/testdata/scenarios is made of (see its README). Off when
// empty.
const RecordScenariosEnv = "SVCTRACE_RECORD_SCENARIOS"

// RecordDir returns a fresh directory to save the bundle of the trace that
// args describe, $SVCTRACE_RECORD_SCENARIOS/<test name> (a relative
// directory is taken from the repository root), with -2, -3, … for
// the test's next traces; "" when recording is off, or when args already
// save (--save) or watch (--watch cannot save). The directory is created
// here, so that two traces never get the same one, and removed at the
// test's end if no bundle was written into it (a trace that exited 1).
func RecordDir(t testing.TB, args []string) string {
	t.Helper()
	root := os.Getenv(RecordScenariosEnv)
	if root == "" || slices.ContainsFunc(args, savesOrWatches) {
		return ""
	}
	if !filepath.IsAbs(root) {
		// go test runs each package in its own directory; a relative
		// directory means the one make was run from, the repository root.
		repo, err := RepoRoot()
		if err != nil {
			t.Fatalf("%s=%s: %v", RecordScenariosEnv, root, err)
		}
		root = filepath.Join(repo, root)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		t.Fatalf("%s: %v", RecordScenariosEnv, err)
	}
	base := ScenarioName(t.Name())
	for n := 1; ; n++ {
		name := base
		if n > 1 {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		dir := filepath.Join(root, name)
		err := os.Mkdir(dir, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", RecordScenariosEnv, err)
		}
		// Remove fails on a directory that holds a bundle, which is kept.
		t.Cleanup(func() { _ = os.Remove(dir) })
		return dir
	}
}

func savesOrWatches(arg string) bool {
	for _, flag := range []string{"--save", "--watch", "-w"} {
		if arg == flag || strings.HasPrefix(arg, flag+"=") {
			return true
		}
	}
	return false
}

// maxScenarioName keeps a recorded directory's name readable in a listing.
const maxScenarioName = 100

// ScenarioName turns a test name (TestITPLocal/iptables) into one path
// element (TestITPLocal-iptables): letters, digits, '_', '.' and '-' are
// kept, every other run of characters becomes one '-', and a name never
// starts or ends with '-' or '.', so it can be neither "." nor "..".
func ScenarioName(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range testName {
		keep := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-'
		if !keep {
			dash = true
			continue
		}
		if dash && b.Len() > 0 {
			b.WriteByte('-')
		}
		dash = false
		b.WriteRune(r)
	}
	name := b.String()
	if len(name) > maxScenarioName {
		name = name[:maxScenarioName]
	}
	name = strings.Trim(name, "-.")
	if name == "" {
		return "trace"
	}
	return name
}
