// Package teardown checks the testbed's own lifecycle: `down` leaves nothing
// behind, and `up` works again, also over the leftovers of a killed run. It
// takes the cluster away while it runs, so it needs SVCTRACE_E2E_TEARDOWN=1 as
// well and runs alone after the rest of the suite (test/testbed/e2e.sh).
package teardown

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
)

const (
	stateDir = "/var/lib/svctrace-testbed"
	runDir   = "/run/svctrace-testbed"
)

var ourExes = map[string]bool{"etcd": true, "kube-apiserver": true, "kube-controller-manager": true, "kube-scheduler": true,
	"kubelet": true, "kube-proxy": true, "containerd": true, "containerd-shim-runc-v2": true, "socat": true,
	"kube-router": true, "flanneld": true,
	// The IPVS node's user-mode Linux kernel: all its host processes (the
	// kernel, its helpers, each guest process) carry the kernel's command
	// line, which names the testbed's state dir (uml_dir=…).
	"linux": true}

func setup(t *testing.T) string {
	if !framework.Enabled() || os.Getenv("SVCTRACE_E2E_TEARDOWN") != "1" {
		t.Skip("testbed lifecycle test: set SVCTRACE_E2E=1 and SVCTRACE_E2E_TEARDOWN=1")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	root, err := framework.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func script(t *testing.T, root, name string, args ...string) string {
	t.Helper()
	return scriptEnv(t, root, nil, name, args...)
}

// scriptEnv runs a testbed script with env added to the test's environment.
func scriptEnv(t *testing.T, root string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(root, "test", "testbed", name)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %v: %s\n%s", name, args, time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("%s failed: %v", name, err)
	}
	return out.String()
}

// testbedProcesses lists live processes that are testbed daemons (by binary
// name and a testbed path on the command line) or live in a testbed cgroup.
func testbedProcesses(t *testing.T) []string {
	var found []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		cmdline := strings.Join(args, " ")
		if ourExes[filepath.Base(args[0])] && (strings.Contains(cmdline, stateDir) || strings.Contains(cmdline, runDir)) {
			found = append(found, filepath.Dir(p)+": "+cmdline)
			continue
		}
		cg, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "cgroup"))
		if strings.Contains(string(cg), ":/svtb-node") {
			found = append(found, filepath.Dir(p)+" (testbed cgroup): "+cmdline)
		}
	}
	return found
}

func readSysctl(t *testing.T, name string) string {
	b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(name, ".", "/"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// assertClean checks that nothing of the testbed is left on the machine.
func assertClean(t *testing.T, root string, sysctls map[string]string, created map[string]bool) {
	t.Helper()
	if ps := testbedProcesses(t); len(ps) > 0 {
		t.Errorf("testbed processes left:\n%s", strings.Join(ps, "\n"))
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "svtb-") {
			t.Errorf("netns left: %s", l)
		}
	}
	if m, _ := filepath.Glob("/var/run/netns/svtb-*"); len(m) > 0 {
		t.Errorf("netns files left: %v", m)
	}
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mounts), "\n") {
		f := strings.Fields(l)
		if len(f) > 1 && (strings.HasPrefix(f[1], stateDir) || strings.HasPrefix(f[1], runDir) || strings.Contains(f[1], "/netns/svtb-")) {
			t.Errorf("mount left: %s", l)
		}
	}
	if cg, _ := filepath.Glob("/sys/fs/cgroup/*/svtb-*"); len(cg) > 0 {
		t.Errorf("cgroups left: %v", cg)
	}
	// Paths the kubelets and containerds create outside their configured dirs
	// (none of them existed before the testbed's first up on the CI machine).
	for _, d := range []string{"/run/containerd", "/var/lib/cni", "/var/lib/kubelet", "/usr/libexec/kubernetes", "/var/log/containers"} {
		if created[d] {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("%s (created by the testbed) left", d)
			}
		}
	}
	if m, _ := filepath.Glob("/var/lib/cni/results/svtb-*"); len(m) > 0 {
		t.Errorf("CNI results left: %v", m)
	}
	for _, d := range []string{stateDir, runDir, filepath.Join(root, ".testbed", "kubeconfig")} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s left", d)
		}
	}
	for k, v := range sysctls {
		if got := readSysctl(t, k); got != v {
			t.Errorf("sysctl %s = %s after down, was %s before up", k, got, v)
		}
	}
}

// createdPaths reads which machine-wide paths the running testbed created.
func createdPaths(t *testing.T) map[string]bool {
	b, _ := os.ReadFile(filepath.Join(stateDir, "created-paths"))
	m := map[string]bool{}
	for _, l := range strings.Fields(string(b)) {
		m[l] = true
	}
	return m
}

func savedSysctls(t *testing.T) map[string]string {
	b, err := os.ReadFile(filepath.Join(stateDir, "sysctls.saved"))
	if err != nil {
		t.Fatalf("the running testbed has no saved sysctls: %v", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// TestUpOverOtherCNIAndAfterKill9: `up` over a running testbed whose Pod
// network differs from SVTB_CNI recreates it, and `up` over the leftovers of
// a killed testbed (netns, mounts, cgroups, state dirs, stale objects in
// etcd) brings it back, here with the other Pod network than the one killed,
// so both directions of the recreation are walked. Each network is what it
// says: with flannel, flanneld runs on each kubelet node and the route
// between their Pod CIDRs goes through flannel.1; with ptp there is no
// flanneld and the route is a static one via the other node. It runs before
// TestDownLeavesNothingAndUpAgain, which takes this testbed down and checks
// that nothing is left, then leaves it up in the default mode.
func TestUpOverOtherCNIAndAfterKill9(t *testing.T) {
	root := setup(t)
	script(t, root, "up.sh")
	def := cniMode(t)
	other := map[string]string{"flannel": "ptp", "ptp": "flannel"}[def]
	if other == "" {
		t.Fatalf("unknown running CNI %q", def)
	}
	out := scriptEnv(t, root, []string{"SVTB_CNI=" + other}, "up.sh")
	if !strings.Contains(out, "recreating it") {
		t.Errorf("up with SVTB_CNI=%s over a %s testbed did not recreate it", other, def)
	}
	requireCNI(t, other)
	script(t, root, "status.sh")

	// Simulate a crash: SIGKILL every testbed daemon (by its recorded pid) and its containers.
	pidfiles, _ := filepath.Glob(filepath.Join(runDir, "*.pid"))
	if len(pidfiles) == 0 {
		t.Fatal("no pid files")
	}
	for _, ps := range testbedProcesses(t) {
		var pid int
		if _, err := fmtSscan(ps, &pid); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	time.Sleep(time.Second)
	if ps := testbedProcesses(t); len(ps) > 0 {
		t.Fatalf("processes survived SIGKILL: %v", ps)
	}
	scriptEnv(t, root, []string{"SVTB_CNI=" + def}, "up.sh")
	requireCNI(t, def)
	script(t, root, "status.sh")
}

// requireCNI checks that the running testbed's Pod network is mode.
func requireCNI(t *testing.T, mode string) {
	t.Helper()
	if got := cniMode(t); got != mode {
		t.Fatalf("running CNI %q, want %q", got, mode)
	}
	flanneld := 0
	for _, p := range testbedProcesses(t) {
		if strings.Contains(p, "flanneld") {
			flanneld++
		}
	}
	route, err := exec.Command("nsenter", "--net=/var/run/netns/svtb-node1", "--", "ip", "route", "show", "10.244.2.0/24").CombinedOutput()
	if err != nil {
		t.Fatalf("route on svtb-node1: %v: %s", err, route)
	}
	switch mode {
	case "flannel":
		if flanneld != 2 || !strings.Contains(string(route), "dev flannel.1") {
			t.Errorf("flannel: %d flanneld processes, route %q", flanneld, route)
		}
	case "ptp":
		if flanneld != 0 || !strings.Contains(string(route), "via 10.0.0.12 dev eth0") {
			t.Errorf("ptp: %d flanneld processes, route %q", flanneld, route)
		}
	}
}

func TestDownLeavesNothingAndUpAgain(t *testing.T) {
	root := setup(t)
	script(t, root, "up.sh") // idempotent: healthy stays up
	rootBefore := rootNetnsState(t)
	sysctls, created := savedSysctls(t), createdPaths(t)
	if len(testbedProcesses(t)) < 10 {
		t.Fatalf("expected the testbed's processes to be found while it runs: %v", testbedProcesses(t))
	}
	saved := saveFaultyTrace(t, root)
	script(t, root, "down.sh")
	assertClean(t, root, sysctls, created)
	assertSameRootNetns(t, "after down", rootBefore)
	// A trace saved before is judged again with no cluster at all.
	saved.judgeOffline(t)
	script(t, root, "down.sh") // down twice is fine
	script(t, root, "up.sh")
	script(t, root, "status.sh")
	assertSameRootNetns(t, "after up", rootBefore)
}

// rootNetnsState snapshots what the testbed must never change in the machine's
// own network namespace: links, addresses, routes, policy rules, the nftables
// ruleset (which includes iptables-nft rules) and forwarding sysctls.
func rootNetnsState(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	for name, args := range map[string][]string{
		"links":  {"ip", "-o", "link", "show"},
		"addrs":  {"ip", "-o", "addr", "show"},
		"routes": {"ip", "route", "show", "table", "all"},
		"rules":  {"ip", "rule", "show"},
		"nft":    {"nft", "list", "ruleset"},
	} {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v: %s", args, err, out)
		}
		m[name] = string(out)
	}
	for _, k := range []string{"net.ipv4.ip_forward", "net.ipv4.conf.all.route_localnet", "net.bridge.bridge-nf-call-iptables"} {
		if b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(k, ".", "/")); err == nil {
			m[k] = strings.TrimSpace(string(b))
		}
	}
	return m
}

func assertSameRootNetns(t *testing.T, when string, before map[string]string) {
	t.Helper()
	after := rootNetnsState(t)
	for k, v := range before {
		if after[k] != v {
			t.Errorf("root netns %s changed %s (the testbed must not touch it):\nbefore:\n%s\nafter:\n%s", k, when, v, after[k])
		}
	}
}

func cniMode(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, "cni-mode"))
	if err != nil {
		t.Fatalf("running CNI: %v", err)
	}
	return strings.TrimSpace(string(b))
}
