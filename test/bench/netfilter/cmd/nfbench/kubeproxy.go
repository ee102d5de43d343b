package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The bench node inside each namespace: eth0 (a veth whose peer stays in the
// namespace) holds the node IP.
const (
	benchNode    = "bench-node"
	benchNodeIP  = "10.250.0.1"
	benchCIDR    = "10.0.0.0/8" // detect-local, as kpgen's default
	benchNodeIP6 = "fd00:250::1"
	benchCIDR6   = "fd00::/8"
	fakeAPIAddr  = "127.0.0.1:18080"
	metricsURL   = "127.0.0.1:10249/metrics"
	pollInterval = time.Second
)

// kubeProxyPath finds the real kube-proxy: -kube-proxy, $SVCTRACE_KUBE_PROXY,
// or the one the testbed builds into its cache (test/testbed/build.sh).
func kubeProxyPath(flagValue string) string {
	for _, p := range []string{flagValue, os.Getenv("SVCTRACE_KUBE_PROXY")} {
		if p != "" {
			return p
		}
	}
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".cache", "svctrace", "k8s-v1.37.2", "bin", "kube-proxy")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// fakeAPIBinary is -fakeapi, or cmd/fakeapi built into dir.
func fakeAPIBinary(flagValue, dir string) string {
	if flagValue != "" {
		return flagValue
	}
	bin := filepath.Join(dir, "fakeapi")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/svctrace/kubectl-svctrace/test/bench/netfilter/cmd/fakeapi")
	if out, err := cmd.CombinedOutput(); err != nil {
		fail(fmt.Errorf("building the fake API (or pass -fakeapi): %v\n%s", err, out))
	}
	return bin
}

// backendBin makes a directory whose iptables* and ip6tables* commands are
// the given xtables multi-binary, to put first in kube-proxy's PATH.
func backendBin(dir, multi string) string {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fail(err)
	}
	target, err := exec.LookPath(multi)
	if err != nil {
		fail(err)
	}
	for _, fam := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			if err := os.Symlink(target, filepath.Join(dir, fam+suffix)); err != nil && !os.IsExist(err) {
				fail(err)
			}
		}
	}
	return dir
}

// programmed is what programWithKubeProxy measured.
type programmed struct {
	Seconds     float64 // kube-proxy start → its last successful sync (kubeproxy_sync_proxy_rules_last_timestamp_seconds)
	Observed    float64 // kube-proxy start → all n Services seen in the rules by our polling
	FullSyncs   int     // full syncs kube-proxy had done by then
	FullSyncSum float64 // their total duration (kubeproxy_sync_full_proxy_rules_duration_seconds_sum)
}

// programWithKubeProxy runs the real kube-proxy in the namespace against a
// fake API (cmd/fakeapi, binary api) serving n bench Services with 4 endpoints each, waits until all n
// are in the rules (rule count / map size), checks that they landed in the
// mode's backend, and stops kube-proxy and the fake API (SIGKILL, by PID: the
// rules stay, and nothing resyncs while we measure).
func programWithKubeProxy(api, kp, tmp, ns, mode string, n int, ipv6 bool, timeout time.Duration) (programmed, error) {
	nsPath := "/var/run/netns/" + ns
	inNS := func(args ...string) []string { return append([]string{"nsenter", "--net=" + nsPath, "--"}, args...) }
	nodeIP, cidr, plen := benchNodeIP, benchCIDR, "/24"
	if ipv6 {
		nodeIP, cidr, plen = benchNodeIP6, benchCIDR6, "/64"
	}
	run(inNS("ip", "link", "set", "lo", "up")...)
	// Both ends of the veth pair stay in the namespace (no dummy module here).
	run(inNS("ip", "link", "add", "eth0", "type", "veth", "peer", "name", "eth0-peer")...)
	run(inNS("ip", "addr", "add", nodeIP+plen, "dev", "eth0", "nodad")...)
	run(inNS("ip", "link", "set", "eth0", "up")...)
	run(inNS("ip", "link", "set", "eth0-peer", "up")...)

	dir := filepath.Join(tmp, ns)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fail(err)
	}
	serve := inNS(api, "serve", fakeAPIAddr, benchNode, nodeIP, strconv.Itoa(n), "4")
	if ipv6 {
		cluster := filepath.Join(dir, "cluster.json")
		c := fmt.Sprintf(`{"NodeName":%q,"NodeIP":%q,"BenchServices":%d,"BenchEndpoints":4,"BenchIPv6":true}`, benchNode, nodeIP, n)
		if err := os.WriteFile(cluster, []byte(c), 0o600); err != nil {
			fail(err)
		}
		serve = inNS(api, "serve-cluster", fakeAPIAddr, cluster)
	}
	apiCmd := start(serve, nil, filepath.Join(dir, "fakeapi.log"))
	defer stop(apiCmd)
	waitFor(30*time.Second, "fake API listening", func() bool {
		out, _ := nsCmd(nsPath, "ss", "-Hltn", "sport", "= :18080").Output()
		return len(bytes.TrimSpace(out)) > 0
	})

	config := filepath.Join(dir, "kube-proxy.yaml") // and kubeconfig, written by the fake API's config mode
	kpMode := map[string]string{"nft": "iptables", "legacy": "iptables", "nftables": "nftables"}[mode]
	run(api, "config", dir, fakeAPIAddr, kpMode, benchNode, nodeIP, cidr)
	env := os.Environ()
	var ipt []string // our own listing command for the mode's backend
	switch mode {
	case "nft":
		env = append(env, "PATH="+backendBin(filepath.Join(tmp, "bin-nft"), "xtables-nft-multi")+":"+os.Getenv("PATH"))
		ipt = []string{iptCmd(ipv6, "-nft"), "-t", "nat", "-S", "KUBE-SERVICES"}
	case "legacy":
		// Its own lock file: kube-proxy's iptables-restore -w must not
		// wait on (or hold) the host's /run/xtables.lock.
		env = append(env, "PATH="+backendBin(filepath.Join(tmp, "bin-legacy"), "xtables-legacy-multi")+":"+os.Getenv("PATH"),
			"XTABLES_LOCKFILE="+filepath.Join(dir, "xtables.lock"))
		ipt = []string{iptCmd(ipv6, "-legacy"), "-w", "-t", "nat", "-S", "KUBE-SERVICES"}
	}
	t0 := time.Now()
	kpCmd := start(inNS(kp, "--config="+config, "-v=1"), env, filepath.Join(dir, "kube-proxy.log"))
	defer stop(kpCmd)

	count := func() int {
		if mode == "nftables" {
			fam := "ip"
			if ipv6 {
				fam = "ip6"
			}
			out, _ := nsCmd(nsPath, "nft", "list", "map", fam, "kube-proxy", "service-ips").Output()
			return bytes.Count(out, []byte(" goto service-"))
		}
		c := nsCmd(nsPath, ipt...)
		c.Env = append(os.Environ(), "XTABLES_LOCKFILE="+filepath.Join(dir, "xtables.lock"))
		out, _ := c.Output()
		return bytes.Count(out, []byte(" -j KUBE-SVC-"))
	}
	var res programmed
	var got int
	deadline := time.Now().Add(timeout)
	for {
		if kpCmd.exited() {
			return res, fmt.Errorf("%s n=%d: kube-proxy exited; log tail:\n%s", mode, n, logTail(filepath.Join(dir, "kube-proxy.log")))
		}
		m := metrics(nsPath, ipv6)
		if m["kubeproxy_sync_full_proxy_rules_duration_seconds_count"] >= 1 {
			if got = count(); got == n {
				res.Observed = time.Since(t0).Seconds()
				m = metrics(nsPath, ipv6)
				res.Seconds = m["kubeproxy_sync_proxy_rules_last_timestamp_seconds"] - float64(t0.UnixNano())/1e9
				res.FullSyncs = int(m["kubeproxy_sync_full_proxy_rules_duration_seconds_count"])
				res.FullSyncSum = m["kubeproxy_sync_full_proxy_rules_duration_seconds_sum"]
				break
			}
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("%s n=%d: kube-proxy programmed %d of %d Services in %v", mode, n, got, n, timeout)
		}
		time.Sleep(pollInterval)
	}
	stop(kpCmd)
	stop(apiCmd)

	// The rules must be in the mode's backend and only there.
	names := "/proc/net/ip_tables_names"
	if ipv6 {
		names = "/proc/net/ip6_tables_names"
	}
	legacyTables, _ := nsCmd(nsPath, "cat", names).Output()
	nftNat := nsCmd(nsPath, iptCmd(ipv6, "-nft"), "-t", "nat", "-S", "KUBE-SERVICES").Run() == nil
	switch mode {
	case "legacy":
		if !bytes.Contains(legacyTables, []byte("nat")) || nftNat {
			return res, fmt.Errorf("legacy: kube-proxy did not write legacy-only rules (ip_tables_names %q, iptables-nft KUBE-SERVICES present %v)", legacyTables, nftNat)
		}
	case "nft":
		if len(bytes.TrimSpace(legacyTables)) > 0 || !nftNat {
			return res, fmt.Errorf("nft: kube-proxy did not write nf_tables-only rules (ip_tables_names %q)", legacyTables)
		}
	}
	return res, nil
}

// iptCmd is the iptables command of a family and backend ("-nft", "-legacy",
// "-legacy-save", ...).
func iptCmd(ipv6 bool, suffix string) string {
	if ipv6 {
		return "ip6tables" + suffix
	}
	return "iptables" + suffix
}

// logTail is the end of a log file (the run's directory is removed on failure).
func logTail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// metrics fetches kube-proxy's samples of one family: name{ip_family="IPv4"}
// (or IPv6, and unlabelled ones) by name.
func metrics(nsPath string, ipv6 bool) map[string]float64 {
	label := `{ip_family="IPv4"}`
	if ipv6 {
		label = `{ip_family="IPv6"}`
	}
	out, _ := nsCmd(nsPath, "curl", "-s", "-m", "2", metricsURL).Output()
	m := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		name := strings.TrimSuffix(f[0], label)
		if strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			m[name] = v
		}
	}
	return m
}

// bg is a background command started by start.
type bg struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (b *bg) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// start runs a command in the background with its output in logPath.
func start(args, env []string, logPath string) *bg {
	lf, err := os.Create(logPath)
	if err != nil {
		fail(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	b := &bg{cmd: cmd, done: make(chan struct{})}
	started = append(started, b)
	go func() { _ = cmd.Wait(); lf.Close(); close(b.done) }()
	return b
}

// stop kills a command started by start (SIGKILL, by its PID) and waits for it.
func stop(b *bg) {
	if !b.exited() {
		_ = b.cmd.Process.Signal(syscall.SIGKILL)
	}
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
	}
}

// started are the background commands to kill if the run fails half-way.
var started []*bg

// nsCmd is a command run inside the namespace.
func nsCmd(nsPath string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + nsPath, "--"}, args...)...)
}

func waitFor(d time.Duration, what string, ok func() bool) {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			fail(fmt.Errorf("timed out waiting for %s", what))
		}
		time.Sleep(100 * time.Millisecond)
	}
}
