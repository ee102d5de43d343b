package netns

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
)

// NewNamed creates a namespace named <prefix>-<pid>-<random> with lo up, for
// tests that must keep their namespaces under a prefix of their own.
func NewNamed(t testing.TB, prefix string) *NS {
	t.Helper()
	RequireRoot(t)
	n := &NS{Name: fmt.Sprintf("%s-%d-%04x", prefix, os.Getpid()%100000, rand.IntN(0x10000))}
	run(t, "ip", "netns", "add", n.Name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", n.Name).CombinedOutput(); err != nil {
			t.Logf("ip netns del %s: %v: %s", n.Name, err, out)
		}
	})
	run(t, "ip", "-n", n.Name, "link", "set", "lo", "up")
	return n
}
