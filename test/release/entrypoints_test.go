package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestEntryPointsInstallDepsFirst: every target a newcomer may type first
// installs the Debian packages before anything long runs, so a missing
// package is an error in seconds, not after a 20-minute build. make -n
// prints the recipe without running it.
func TestEntryPointsInstallDepsFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make not installed")
	}
	for _, target := range []string{"demo", "testbed-up", "e2e", "bench-netfilter", "ci"} {
		cmd := exec.Command("make", "-n", "--no-print-directory", target)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n %s: %v", target, err)
		}
		first := strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
		want := "bash test/testbed/deps.sh"
		if target == "ci" {
			want = "bash test/ci.sh" // which runs make deps as its first step
		}
		if first != want {
			t.Errorf("make %s starts with %q, want %q", target, first, want)
		}
	}
	ci, err := os.ReadFile(filepath.Join(root, "test/ci.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(ci), "make --no-print-directory deps"), strings.Index(string(ci), "make --no-print-directory lint"); i < 0 || i > j {
		t.Error("test/ci.sh does not run deps first")
	}
	// The scripts the targets call, run directly, check packages before building.
	up, err := os.ReadFile(filepath.Join(root, "test/testbed/up.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if i, j := strings.Index(string(up), `"$TESTBED_DIR/deps.sh"`), strings.Index(string(up), `"$TESTBED_DIR/build.sh"`); i < 0 || j < 0 || i > j {
		t.Error("test/testbed/up.sh does not run deps.sh before build.sh")
	}
}
