// Command nfbench measures reading one Service's netfilter state with the
// svctrace readers against the baseline of dumping everything, at 1k, 5k and
// 10k Services (4 endpoints each), in each mode/backend, in the same run:
//
//   - iptables, nf_tables backend: iptables.Read vs a full `iptables-nft-save`
//   - iptables, legacy backend:    iptables.Read vs `iptables-legacy-save -t nat`
//   - nftables:                    nftables.Read vs `nft list table ip kube-proxy`
//
// Rules come from the real kube-proxy (-source kubeproxy, the default when
// its binary is found): it runs in a network namespace per mode that the tool
// creates and deletes, against a fake API (internal/testutil/fakeapi)
// serving the n Services, with its iptables commands pointed at the mode's
// backend; once all n Services are in the rules it is killed, so nothing
// resyncs while we measure. -source kpgen loads rules from kpgen (a generator
// reproducing kube-proxy v1.37's layout, not kube-proxy itself) instead. The reader runs as a child process inside that
// namespace (as the collector runs in the node's), so its peak RSS is its
// own; the iptables commands it starts are reported separately. Needs root.
//
//	nfbench [-sizes 1000,5000,10000] [-runs 5] [-modes nft,legacy,nftables] [-source auto|kubeproxy|kpgen] [-kube-proxy path]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/iptables"
	"github.com/svctrace/kubectl-svctrace/collectors/nftables"
	"github.com/svctrace/kubectl-svctrace/test/bench/netfilter/kpgen"
)

// readResult is what the reader child prints.
type readResult struct {
	Endpoints   int     `json:"endpoints"`
	Seconds     float64 `json:"seconds"`
	MaxRSSKiB   int64   `json:"maxRSSKiB"`
	ChildRSSKiB int64   `json:"childrenMaxRSSKiB"`
	Commands    int     `json:"commands"`
	Source      string  `json:"source,omitempty"`
	// Proof is how the iptables reader established the entry rules
	// (references or rules), with Fallback saying why not by references.
	Proof    string `json:"proof,omitempty"`
	Fallback string `json:"fallback,omitempty"`
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "getentries" {
		os.Exit(getEntriesChild())
	}
	if len(os.Args) > 1 && os.Args[1] == "read" {
		os.Exit(readChild(os.Args[2:]))
	}
	programOnly := len(os.Args) > 1 && os.Args[1] == "program"
	if programOnly {
		os.Args = append(os.Args[:1], os.Args[2:]...)
	}
	sizes := flag.String("sizes", "1000,5000,10000", "Service counts")
	runs := flag.Int("runs", 5, "runs per measurement (median reported)")
	modes := flag.String("modes", "nft,legacy,nftables", "nft (iptables nf_tables backend), legacy, nftables")
	source := flag.String("source", "auto", "rules from: kubeproxy (the real binary), kpgen (generator), auto (kubeproxy when found)")
	kpFlag := flag.String("kube-proxy", "", "kube-proxy binary (default $SVCTRACE_KUBE_PROXY, else the testbed's cache)")
	apiFlag := flag.String("fakeapi", "", "fake API binary (default: go build ./test/bench/netfilter/cmd/fakeapi)")
	follow := flag.Bool("no-api-endpoints", false, "give the reader no endpoints from the API: it finds them by following the rules' jumps (the reader still has to find all 4)")
	prefix := flag.String("netns-prefix", "svt-bench", "prefix of the network namespaces the run creates")
	timeout := flag.Duration("program-timeout", 10*time.Minute, "how long kube-proxy may take to program one size (a size it cannot program is reported and skipped)")
	families := flag.String("families", "ipv4", "with 'program': families to program and cache (ipv4,ipv6)")
	flag.Parse()
	noAPIEndpoints = *follow
	kp := kubeProxyPath(*kpFlag)
	if programOnly {
		*source = "kubeproxy"
	}
	switch *source {
	case "auto":
		*source = "kpgen"
		if kp != "" {
			*source = "kubeproxy"
		}
	case "kubeproxy":
		if kp == "" {
			fmt.Fprintln(os.Stderr, "nfbench: -source kubeproxy but no kube-proxy binary (set -kube-proxy or SVCTRACE_KUBE_PROXY, or build the testbed)")
			os.Exit(2)
		}
	case "kpgen":
	default:
		fmt.Fprintln(os.Stderr, "nfbench: -source must be auto, kubeproxy or kpgen")
		os.Exit(2)
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "nfbench needs root (it creates network namespaces)")
		os.Exit(2)
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	tmp, err := os.MkdirTemp("", "nfbench-")
	if err != nil {
		fail(err)
	}
	tmpDir = tmp // removed by fail and before exiting (os.Exit skips defers)
	defer os.RemoveAll(tmp)

	var cache ruleCache
	if *source == "kubeproxy" {
		if cache, err = newRuleCache(kp); err != nil {
			fail(err)
		}
	}
	if programOnly {
		api := fakeAPIBinary(*apiFlag, tmp)
		failed := false
		for _, fam := range strings.Split(*families, ",") {
			for _, s := range strings.Split(*sizes, ",") {
				n, err := strconv.Atoi(s)
				if err != nil {
					fail(err)
				}
				for _, kind := range []string{"iptables", "nftables"} {
					path, note, err := cache.rules(api, kp, tmp, *prefix, kind, fam == "ipv6", n, *timeout)
					if err != nil {
						fmt.Printf("# %s %s n=%d: not programmed: %v\n", kind, fam, n, err)
						failed = true
						continue
					}
					fmt.Printf("# %s: %s\n", path, note)
				}
			}
		}
		_ = os.RemoveAll(tmp)
		if failed {
			os.Exit(1)
		}
		return
	}

	var api string
	if *source == "kubeproxy" {
		api = fakeAPIBinary(*apiFlag, tmp)
		out, _ := exec.Command(kp, "--version").Output()
		fmt.Printf("# nfbench: median of %d runs; rules programmed by the real kube-proxy (%s, %s) from a fake API; 4 endpoints per Service\n",
			*runs, kp, strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0])
		fmt.Printf("# rules cached in %s (programmed once per size, restored on every run); load_s: the restore\n", cache.dir)
	} else {
		fmt.Printf("# nfbench: median of %d runs; rules from kpgen (kube-proxy v1.37 layout generator, NOT kube-proxy); 4 endpoints per Service\n", *runs)
		fmt.Println("# load_s: iptables-restore / nft -f of the generated rules")
	}
	if noAPIEndpoints {
		fmt.Println("# -no-api-endpoints: the reader gets no endpoints from the API and follows the rules' jumps")
	}
	fmt.Printf("%-9s %7s %10s %12s %8s %9s %9s %10s %10s  %s\n", "mode", "svcs", "reader_s", "baseline_s", "ratio", "rss_MiB", "kids_MiB", "load_s", "kp_sync_s", "baseline")
	failed := false
	reader1k := map[string]float64{}
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			fail(err)
		}
		iptFile := filepath.Join(tmp, fmt.Sprintf("ipt-%d", n))
		nftFile := filepath.Join(tmp, fmt.Sprintf("nft-%d", n))
		if *source == "kpgen" {
			svcs := kpgen.Bench(n)
			writeFile(iptFile, func(b *bytes.Buffer) error { return kpgen.IPTables(b, svcs, kpgen.Options{}) })
			writeFile(nftFile, func(b *bytes.Buffer) error { return kpgen.NFTables(b, svcs, kpgen.Options{}) })
		}
		target := n / 2 // a Service in the middle
		for _, mode := range strings.Split(*modes, ",") {
			ns := fmt.Sprintf("%s-%d-%s-%d", *prefix, os.Getpid()%100000, mode, n)
			run("ip", "netns", "add", ns)
			created = append(created, ns)
			nsPath := "/var/run/netns/" + ns
			var load []string
			var base []string
			var baseName string
			switch mode {
			case "nft":
				load = []string{"iptables-nft-restore", iptFile}
				base, baseName = []string{"iptables-nft-save"}, "iptables-nft-save (full)"
			case "legacy":
				load = []string{"iptables-legacy-restore", iptFile}
				base, baseName = []string{"iptables-legacy-save", "-t", "nat"}, "iptables-legacy-save -t nat"
			case "nftables":
				load = []string{"nft", "-f", nftFile}
				base, baseName = []string{"nft", "list", "table", "ip", "kube-proxy"}, "nft list table ip kube-proxy"
			default:
				fail(fmt.Errorf("unknown mode %s", mode))
			}
			var loadS float64
			syncS := "-"
			if *source == "kubeproxy" {
				kind := "iptables"
				if mode == "nftables" {
					kind = "nftables"
				}
				path, note, err := cache.rules(api, kp, tmp, *prefix, kind, false, n, *timeout)
				if err == nil {
					loadS, err = restoreRules(nsPath, mode, path)
				}
				if err != nil {
					fmt.Printf("# %s n=%d: not programmed, skipped: %v\n", mode, n, err)
					notProgrammed = append(notProgrammed, fmt.Sprintf("%s n=%d", mode, n))
					run("ip", "netns", "del", ns)
					continue
				}
				syncS = "cached"
				fmt.Printf("# %s n=%d: rules %s; restored in %.2f s\n", mode, n, note, loadS)
			} else {
				t0 := time.Now()
				run(append([]string{"nsenter", "--net=" + nsPath, "--"}, load...)...)
				loadS = time.Since(t0).Seconds()
			}

			var readerT, inProcT, textT, baseT []float64
			var rss, kids, textRSS int64
			var source string
			for i := 0; i < *runs; i++ {
				res, wall := runReader(self, nsPath, mode, target, "")
				source = res.Source
				if res.Proof != "" {
					source += ", entry rules by " + res.Proof
					if res.Fallback != "" {
						source += " (" + res.Fallback + ")"
					}
				}
				if res.Endpoints != 4 {
					fail(fmt.Errorf("%s n=%d: reader found %d endpoints, want 4", mode, n, res.Endpoints))
				}
				readerT = append(readerT, wall)
				inProcT = append(inProcT, res.Seconds)
				rss = max(rss, res.MaxRSSKiB)
				kids = max(kids, res.ChildRSSKiB)
				if mode != "nftables" {
					tres, twall := runReader(self, nsPath, mode, target, iptables.ReaderText)
					if tres.Endpoints != 4 || tres.Source != collectorapi.IPTablesReaderText {
						fail(fmt.Errorf("%s n=%d: text reader found %d endpoints (reader %q)", mode, n, tres.Endpoints, tres.Source))
					}
					textT = append(textT, twall)
					textRSS = max(textRSS, tres.MaxRSSKiB)
				}
				t1 := time.Now()
				run(append([]string{"nsenter", "--net=" + nsPath, "--"}, base...)...)
				baseT = append(baseT, time.Since(t1).Seconds())
			}
			r, b := median(readerT), median(baseT)
			if len(textT) > 0 {
				fmt.Printf("# %s n=%d: reader in process %.4f s (the rest is process start); text reader (iptables commands) %.4f s, %.1fx the kernel reader, peak RSS %.1f MiB\n",
					mode, n, median(inProcT), median(textT), median(textT)/r, float64(textRSS)/1024)
			} else {
				fmt.Printf("# %s n=%d: reader in process %.4f s (the rest is process start)\n", mode, n, median(inProcT))
			}
			fmt.Printf("%-9s %7d %10.4f %12.4f %8.2f %9.1f %9.1f %10.2f %10s  %s (reader: %s)\n", mode, n, r, b, b/r, float64(rss)/1024, float64(kids)/1024, loadS, syncS, baseName, source)
			if n == 1000 {
				reader1k[mode] = r
			}
			var floor *getEntriesResult
			if mode == "legacy" {
				floor = getEntriesFloor(self, nsPath)
				fmt.Printf("# legacy n=%d: the kernel hands out the nat table whole: %d bytes (%.1f MiB) in one IPT_SO_GET_ENTRIES; a process doing only that peaks at %.1f MiB (%.1f MiB before the buffer); the reader at %.1f MiB\n",
					n, floor.Bytes, float64(floor.Bytes)/(1<<20), float64(floor.MaxRSSKiB)/1024, float64(floor.BaselineKiB)/1024, float64(rss)/1024)
			}
			if n == 10000 {
				failed = checkTargets(mode, r, b, reader1k[mode], rss, floor) || failed
			}
			run("ip", "netns", "del", ns)
		}
	}
	if len(notProgrammed) > 0 {
		fmt.Printf("# not programmed (no figures): %s\n", strings.Join(notProgrammed, ", "))
	}
	if failed {
		_ = os.RemoveAll(tmp)
		os.Exit(1)
	}
}

// notProgrammed are the sizes kube-proxy could not program in time.
var notProgrammed []string

// checkTargets prints the targets at 10k Services: the iptables readers'
// (nf_tables through netlink, legacy from the kernel's table blob) and the
// nftables reader's. r1k is the reader's median at 1k Services (0 when not
// measured in this run).
func checkTargets(mode string, r, b, r1k float64, rss int64, floor *getEntriesResult) bool {
	var ok bool
	var what string
	switch mode {
	case "nft":
		flat := r1k > 0 && r <= 1.5*r1k
		ok = r <= 0.010 && b/r >= 100 && flat
		what = fmt.Sprintf("nf_tables: reader %.4fs <= 0.010s, %.1fx >= 100x faster than full iptables-nft-save, 10k/1k %.2f <= 1.5", r, b/r, r/r1k)
	case "legacy":
		ok = r <= 0.5*b
		what = fmt.Sprintf("legacy: reader %.4fs <= 0.5 x save -t nat (%.4fs): %.2fx", r, b, r/b)
	case "nftables":
		ok = r <= 0.05 && b/r >= 50
		what = fmt.Sprintf("nftables: reader %.4fs <= 0.05s and %.0fx >= 50x faster than nft list table", r, b/r)
	}
	limit := int64(64 * 1024)
	if mode != "nftables" {
		limit = 32 * 1024
	}
	rssOK := rss <= limit
	verdict := map[bool]string{true: "PASS", false: "FAIL"}
	fmt.Printf("# target %s %s; peak RSS %.1f MiB <= %d MiB %s\n", verdict[ok], what, float64(rss)/1024, limit/1024, verdict[rssOK])
	if floor != nil && !rssOK && floor.MaxRSSKiB > limit {
		fmt.Printf("# peak RSS target out of reach on this kernel interface: the nat table alone is %.1f MiB and `nfbench getentries` (IPT_SO_GET_INFO + IPT_SO_GET_ENTRIES, nothing else) peaks at %.1f MiB\n",
			float64(floor.Bytes)/(1<<20), float64(floor.MaxRSSKiB)/1024)
	}
	return !ok || !rssOK
}

// noAPIEndpoints (-no-api-endpoints) reaches the reader child through the
// environment.
var noAPIEndpoints bool

const noAPIEndpointsEnv = "NFBENCH_NO_API_ENDPOINTS"

// readerEnv carries iptables.Query.Reader to the reader child: the text
// reader (the iptables commands) is measured in the same run as the kernel
// readers.
const readerEnv = "NFBENCH_IPTABLES_READER"

// runReader runs this binary's "read" mode inside the namespace and returns
// its report and wall time (process start to exit, as a caller sees it).
func runReader(self, nsPath, mode string, target int, reader string) (readResult, float64) {
	cmd := exec.Command("nsenter", "--net="+nsPath, "--", self, "read", mode, strconv.Itoa(target))
	cmd.Env = append(os.Environ(), readerEnv+"="+reader)
	if noAPIEndpoints {
		cmd.Env = append(cmd.Env, noAPIEndpointsEnv+"=1")
	}
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("reader: %v: %s", err, stderr.String()))
	}
	wall := time.Since(t0).Seconds()
	var res readResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		fail(fmt.Errorf("reader output %q: %v", out.String(), err))
	}
	return res, wall
}

// getEntriesFloor runs this binary's "getentries" mode inside the namespace.
func getEntriesFloor(self, nsPath string) *getEntriesResult {
	out, err := exec.Command("nsenter", "--net="+nsPath, "--", self, "getentries").Output()
	if err != nil {
		fail(fmt.Errorf("getentries: %v", err))
	}
	var res getEntriesResult
	if err := json.Unmarshal(out, &res); err != nil {
		fail(fmt.Errorf("getentries output %q: %v", out, err))
	}
	return &res
}

// readChild reads one bench Service the way the collector would and prints
// a readResult.
func readChild(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nfbench read <mode> <index>")
		return 2
	}
	mode := args[0]
	idx, _ := strconv.Atoi(args[1])
	s := kpgen.BenchService(idx) // what cmd/fakeapi serves too (it checks)
	svc := collectorapi.ServiceSpec{Namespace: s.Namespace, Name: s.Name, ClusterIPs: []string{s.ClusterIP},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}
	var eps []collectorapi.Endpoint
	for _, e := range s.Endpoints {
		eps = append(eps, collectorapi.Endpoint{IP: e.IP, Ports: map[string]int32{"http": e.Port}, Ready: true, Serving: true})
	}
	if os.Getenv(noAPIEndpointsEnv) != "" {
		eps = nil // found by following jumps; still checked against s.Endpoints below
	}
	ctx := context.Background()
	var res readResult
	t0 := time.Now()
	switch mode {
	case "nft", "legacy":
		obs, err := iptables.Read(ctx, iptables.Query{Service: svc, Endpoints: eps, LockFile: filepath.Join(os.TempDir(), "nfbench-xtables.lock"),
			Reader: os.Getenv(readerEnv)})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		for _, b := range obs.Backends {
			if b.Error != "" {
				fmt.Fprintln(os.Stderr, b.Backend, b.Error)
				return 1
			}
			res.Commands += len(b.Commands)
			if b.KubeProxyChains && len(b.Ports) > 0 {
				res.Source, res.Proof, res.Fallback = b.Reader, b.EntryProof, b.EntryProofFallback
				want := map[string]bool{}
				for _, e := range s.Endpoints {
					want[fmt.Sprintf("%s:%d", e.IP, e.Port)] = true
				}
				for _, e := range b.Ports[0].Endpoints {
					// Counted only when the KUBE-SEP chain exists and DNATs to
					// an endpoint the API lists (kube-proxy drops the endpoint
					// comments at this scale, so this is the chain's own rule).
					if e.Exists && want[e.DNAT] {
						res.Endpoints++
					}
				}
			}
		}
	case "nftables":
		obs, err := nftables.Read(ctx, nftables.Query{Service: svc, Endpoints: eps})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		res.Source = obs.Source
		if t := obs.Tables[0]; t.Error != "" {
			fmt.Fprintln(os.Stderr, t.Error)
			return 1
		} else if len(t.Ports) > 0 && t.Ports[0].Service.Exists && len(t.Ports[0].Service.Rules) > 0 && t.Ports[0].Service.Rules[0].Numgen != nil &&
			len(t.Ports[0].ServiceIPs) > 0 && t.Ports[0].ServiceIPs[0].Found {
			// Counted only when the numgen DNAT map sends to an endpoint the
			// API lists.
			for _, e := range t.Ports[0].Service.Rules[0].Numgen.Entries {
				for _, w := range s.Endpoints {
					if e.Address == fmt.Sprintf("%s:%d", w.IP, w.Port) {
						res.Endpoints++
					}
				}
			}
		}
	}
	res.Seconds = time.Since(t0).Seconds()
	// VmHWM is this process's own peak RSS. getrusage's ru_maxrss is not:
	// exec keeps the high-water mark of the mm it replaces, and Go starts
	// children with CLONE_VM, so a child's ru_maxrss starts at its parent's
	// RSS. Children's figure below is therefore an upper bound.
	res.MaxRSSKiB = vmHWM()
	var kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	res.ChildRSSKiB = kids.Maxrss
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

func vmHWM() int64 { return statusKiB("VmHWM:") }

// statusKiB is one "Vm…:" line of /proc/self/status, in KiB.
func statusKiB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return -1
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func writeFile(path string, gen func(*bytes.Buffer) error) {
	var b bytes.Buffer
	if err := gen(&b); err != nil {
		fail(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		fail(err)
	}
}

func run(args ...string) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout = nil
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		fail(fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, stderr.String()))
	}
}

// created are the namespaces to remove if the run fails half-way; tmpDir
// the run's temporary directory.
var (
	created []string
	tmpDir  string
)

func fail(err error) {
	for _, b := range started {
		if !b.exited() {
			_ = b.cmd.Process.Kill()
		}
	}
	for _, ns := range created {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	if tmpDir != "" {
		_ = os.RemoveAll(tmpDir)
	}
	fmt.Fprintln(os.Stderr, "nfbench:", err)
	os.Exit(1)
}
