package framework

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScenarioName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"TestDiffAroundFault", "TestDiffAroundFault"},
		{"TestITPLocalFromNodeWithoutEndpoints/iptables", "TestITPLocalFromNodeWithoutEndpoints-iptables"},
		{"TestShapes/ExternalName_with_a_port#01", "TestShapes-ExternalName_with_a_port-01"},
		{"TestX/a (b)/c:d", "TestX-a-b-c-d"},
		{"TestX/../../etc", "TestX-..-..-etc"},
		{"..", "trace"},
		{"/", "trace"},
		{"TestÄrger/ü", "Test-rger"},
		{strings.Repeat("a", 150), strings.Repeat("a", maxScenarioName)},
		{strings.Repeat("a", maxScenarioName-1) + "/b", strings.Repeat("a", maxScenarioName-1)},
	} {
		got := ScenarioName(tt.in)
		if got != tt.want {
			t.Errorf("ScenarioName(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if filepath.Base(got) != got || got == "." || got == ".." {
			t.Errorf("ScenarioName(%q) = %q is not one path element", tt.in, got)
		}
	}
}

// TestRecordDir: off without the variable and for a trace that saves or
// watches already; otherwise one fresh directory per trace of the test,
// numbered from the second, and an empty one is removed at the test's end
// while one holding a bundle stays.
func TestRecordDir(t *testing.T) {
	t.Setenv(RecordScenariosEnv, "")
	if d := RecordDir(t, []string{"web"}); d != "" {
		t.Fatalf("recording off, got %q", d)
	}
	root := t.TempDir()
	t.Setenv(RecordScenariosEnv, root)
	for _, args := range [][]string{{"web", "--save", "x"}, {"web", "--save=x"}, {"web", "-w"}, {"web", "--watch=true"}} {
		if d := RecordDir(t, args); d != "" {
			t.Errorf("%q: got %q, want no recording", args, d)
		}
	}
	t.Run("relative", func(t *testing.T) {
		t.Setenv(RecordScenariosEnv, "testdata-recorded")
		repo, err := RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(filepath.Join(repo, "testdata-recorded")) })
		if d, want := RecordDir(t, []string{"web"}), filepath.Join(repo, "testdata-recorded", "TestRecordDir-relative"); d != want {
			t.Errorf("got %q, want %q", d, want)
		}
	})
	var kept, empty string
	t.Run("two traces/iptables", func(t *testing.T) {
		kept = RecordDir(t, []string{"web", "-n", "ns"})
		empty = RecordDir(t, []string{"web", "-n", "ns"})
		if want := filepath.Join(root, "TestRecordDir-two_traces-iptables"); kept != want {
			t.Errorf("first trace: %q, want %q", kept, want)
		}
		if want := filepath.Join(root, "TestRecordDir-two_traces-iptables-2"); empty != want {
			t.Errorf("second trace: %q, want %q", empty, want)
		}
		if err := os.WriteFile(filepath.Join(kept, "bundle.json"), []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(filepath.Join(kept, "bundle.json")); err != nil {
		t.Errorf("the recorded bundle is gone: %v", err)
	}
	if _, err := os.Stat(empty); !os.IsNotExist(err) {
		t.Errorf("the empty directory %s is left: %v", empty, err)
	}
}
