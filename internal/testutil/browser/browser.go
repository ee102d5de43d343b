// Package browser runs Debian's headless Chromium for tests that must show
// a rendered page loads in a real browser (test/testbed/deps.sh installs it).
package browser

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Chromium finds the browser, or skips the test when none is installed.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed: the browser test needs it (make deps installs Debian's chromium)")
	return ""
}

// Run runs headless Chromium with a fresh profile and returns its stdout.
func Run(t testing.TB, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--disable-extensions", "--user-data-dir=" + t.TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

// DumpDOM loads a file in Chromium and returns the DOM it built, failing
// the test when the document did not parse (Chromium then shows its XML
// error page instead).
func DumpDOM(t testing.TB, bin, path string) string {
	t.Helper()
	dom := string(Run(t, bin, "--dump-dom", "file://"+path))
	if strings.Contains(dom, "parsererror") || strings.Contains(dom, "This page contains the following errors") {
		t.Fatalf("Chromium could not parse %s:\n%.2000s", path, dom)
	}
	return dom
}
