package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The rules the real kube-proxy programs are cached, keyed by its version,
// under ~/.cache/svctrace/bench-netfilter-<version>/: kube-proxy's first
// full sync of 10k Services through iptables-nft takes minutes on an idle
// machine and did not finish in 15 minutes on a loaded one, while restoring
// what it wrote takes seconds. Each size is programmed once, dumped, and
// restored on later runs (and by the collectors/iptables equality tests).
//
// Files: iptables-<family>-<n>.rules (iptables-legacy-save / ip6tables-legacy-save
// output) and nftables-<family>-<n>.rules (`nft list ruleset`), each with a
// .meta beside it saying which kube-proxy wrote it, when, and how long its
// sync took.
//
// The iptables rules are programmed through the legacy backend: kube-proxy's
// iptables proxier writes the same iptables-restore input whichever backend
// its iptables binary uses, and iptables-legacy-restore takes 1.8 s for
// what iptables-nft-restore with --noflush takes minutes for. Both iptables
// modes of the benchmark restore the same saved ruleset into their backend.

// ruleCache is one kube-proxy version's cache directory.
type ruleCache struct {
	dir       string
	kpVersion string // kube-proxy --version, e.g. "Kubernetes v1.37.2"
}

func newRuleCache(kp string) (ruleCache, error) {
	out, err := exec.Command(kp, "--version").Output()
	if err != nil {
		return ruleCache{}, fmt.Errorf("%s --version: %v", kp, err)
	}
	v := strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
	f := strings.Fields(v)
	if len(f) == 0 {
		return ruleCache{}, fmt.Errorf("%s --version printed nothing", kp)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ruleCache{}, err
	}
	dir := filepath.Join(home, ".cache", "svctrace", "bench-netfilter-"+f[len(f)-1])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ruleCache{}, err
	}
	return ruleCache{dir: dir, kpVersion: v}, nil
}

func familyName(ipv6 bool) string {
	if ipv6 {
		return "ipv6"
	}
	return "ipv4"
}

// path is the cached ruleset of kind ("iptables" or "nftables").
func (c ruleCache) path(kind string, ipv6 bool, n int) string {
	return filepath.Join(c.dir, fmt.Sprintf("%s-%s-%d.rules", kind, familyName(ipv6), n))
}

// nfacctMatch is kube-proxy's "-m nfacct --nfacct-name X": the nfacct
// objects it creates are not part of the dump, and a restore into a fresh
// namespace fails on them. They count dropped invalid packets in
// KUBE-FORWARD, which no reader looks at.
var nfacctMatch = regexp.MustCompile(` -m nfacct --nfacct-name +\S+`)

// rules returns the cached ruleset of kind, family and size, programming it
// with the real kube-proxy first when it is not cached yet; note says where
// it came from.
func (c ruleCache) rules(api, kp, tmp, prefix, kind string, ipv6 bool, n int, timeout time.Duration) (path, note string, err error) {
	path = c.path(kind, ipv6, n)
	if meta, err := os.ReadFile(path + ".meta"); err == nil {
		if _, err := os.Stat(path); err == nil {
			return path, "cached: " + strings.TrimSpace(string(meta)), nil
		}
	}
	mode := "legacy"
	if kind == "nftables" {
		mode = "nftables"
	}
	ns := fmt.Sprintf("%s-prog-%d-%s-%s-%d", prefix, os.Getpid()%100000, kind[:3], familyName(ipv6), n)
	run("ip", "netns", "add", ns)
	created = append(created, ns)
	defer run("ip", "netns", "del", ns)
	p, err := programWithKubeProxy(api, kp, tmp, ns, mode, n, ipv6, timeout)
	if err != nil {
		return "", "", err
	}
	var dump []string
	switch {
	case kind == "nftables":
		dump = []string{"nft", "list", "ruleset"}
	default:
		dump = []string{iptCmd(ipv6, "-legacy-save")}
	}
	out, err := nsCmd("/var/run/netns/"+ns, dump...).Output()
	if err != nil {
		return "", "", fmt.Errorf("%s: %v", strings.Join(dump, " "), err)
	}
	if kind == "iptables" {
		out = nfacctMatch.ReplaceAll(out, nil)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return "", "", err
	}
	meta := fmt.Sprintf("%s (%s) programmed %d Services (%s, 4 endpoints each) through the %s backend on %s; all seen %.2f s after start, %d full sync(s) took %.2f s; dumped with %s",
		c.kpVersion, kp, n, familyName(ipv6), mode, time.Now().UTC().Format(time.RFC3339), p.Observed, p.FullSyncs, p.FullSyncSum, strings.Join(dump, " "))
	if err := os.WriteFile(path+".meta", []byte(meta+"\n"), 0o644); err != nil {
		return "", "", err
	}
	return path, "programmed now: " + meta, nil
}

// restoreRules loads a cached ruleset into the namespace with the mode's
// tool and returns how long it took.
func restoreRules(nsPath, mode, path string) (float64, error) {
	var args []string
	switch mode {
	case "nft":
		args = []string{"iptables-nft-restore", path}
	case "legacy":
		args = []string{"iptables-legacy-restore", path}
	case "nftables":
		args = []string{"nft", "-f", path}
	}
	t0 := time.Now()
	cmd := nsCmd(nsPath, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return time.Since(t0).Seconds(), nil
}
