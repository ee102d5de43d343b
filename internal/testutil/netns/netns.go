// Package netns gives integration tests network namespaces of their own,
// so that nothing a test does touches the root namespace's rules, routes or
// sysctls. Every namespace and process it creates is removed in t.Cleanup.
// Tests that use it are skipped when not run as root.
package netns

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	vnetns "github.com/vishvananda/netns"
)

// NS is a named network namespace (/var/run/netns/<Name>) owned by one test.
type NS struct {
	Name string
}

// Path is the namespace's bind mount, usable with nsenter --net=.
func (n *NS) Path() string { return "/var/run/netns/" + n.Name }

// RequireRoot skips the test when it cannot create namespaces.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
}

// RequireTools skips the test when one of the commands is not installed.
func RequireTools(t testing.TB, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
}

// New creates a namespace named svct-<prefix>-<random> with lo up.
func New(t testing.TB, prefix string) *NS {
	t.Helper()
	return NewNamed(t, "svct-"+prefix)
}

// MustRun runs a command inside the namespace and fails the test on error.
func (n *NS) MustRun(t testing.TB, args ...string) string {
	t.Helper()
	return run(t, append([]string{"ip", "netns", "exec", n.Name}, args...)...)
}

// Run runs a command inside the namespace and returns its combined output and error.
func (n *NS) Run(args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", n.Name}, args...)...).CombinedOutput()
	return string(out), err
}

// Start runs a long-lived command inside the namespace (nsenter, so it shares
// the test's mount namespace) and kills it, by its PID, at cleanup.
func (n *NS) Start(t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("nsenter", append([]string{"--net=" + n.Path(), "--"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", args, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// Handle opens the namespace (closed at cleanup), for netlink.NewHandleAt
// and conntrack.Dial's NetNS.
func (n *NS) Handle(t testing.TB) vnetns.NsHandle {
	t.Helper()
	h, err := vnetns.GetFromName(n.Name)
	if err != nil {
		t.Fatalf("open netns %s: %v", n.Name, err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// Do runs f on an OS thread switched into the namespace. The goroutine keeps
// the thread locked and exits, so Go discards that thread instead of reusing
// it in the root namespace. f must not start goroutines that need the
// namespace (they would run on other threads).
func Do(t testing.TB, n *NS, f func()) {
	t.Helper()
	h := n.Handle(t)
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the thread dies with this goroutine.
		if err := vnetns.Set(h); err != nil {
			done <- fmt.Errorf("setns %s: %w", n.Name, err)
			return
		}
		defer func() { done <- nil }()
		f()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// VethPair links namespace a (interface aName, address aCIDR) to namespace b.
func VethPair(t testing.TB, a *NS, aName, aCIDR string, b *NS, bName, bCIDR string) {
	t.Helper()
	tmp := fmt.Sprintf("svct%04x", rand.IntN(0x10000))
	// Create both ends inside a, so no link ever appears in the root namespace.
	a.MustRun(t, "ip", "link", "add", aName, "type", "veth", "peer", "name", tmp)
	a.MustRun(t, "ip", "link", "set", tmp, "netns", b.Name)
	b.MustRun(t, "ip", "link", "set", tmp, "name", bName)
	a.MustRun(t, "ip", "addr", "add", aCIDR, "dev", aName)
	b.MustRun(t, "ip", "addr", "add", bCIDR, "dev", bName)
	a.MustRun(t, "ip", "link", "set", aName, "up")
	b.MustRun(t, "ip", "link", "set", bName, "up")
}

// WaitListen waits until something in the namespace accepts TCP on addr (ip:port).
func WaitListen(t testing.TB, n *NS, addr string) {
	t.Helper()
	host, port, _ := strings.Cut(addr, ":")
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		out, _ := n.Run("ss", "-Hltn", "src", host, "sport", "= :"+port)
		if strings.TrimSpace(out) != "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s in %s", addr, n.Name)
}

func run(t testing.TB, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
