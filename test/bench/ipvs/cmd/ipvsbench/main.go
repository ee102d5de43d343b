// Command ipvsbench measures svctrace's IPVS read of one Service against full
// `ipvsadm -Ln` and `ipvsadm -S -n` dumps, at 1k, 5k and 10k Services with 4
// endpoints each, in the same run.
//
// This host's kernel has no IPVS, so each size runs in its own user-mode Linux
// kernel (test/testbed/uml): the tool boots it with itself as the job
// ("ipvsbench guest …", host binaries over hostfs). Inside, the real
// kube-proxy in ipvs mode (iptables calls on the legacy backend) programs the
// n Services from the fake API (test/bench/netfilter/cmd/fakeapi, the same
// bench Services as nfbench) on 127.0.0.1; once /proc/net/ip_vs holds all n
// virtual servers, kube-proxy and the API are SIGKILLed so nothing resyncs,
// and the guest measures, interleaved, the median of -runs runs of
//
//   - the reader: a child process ("ipvsbench read i") running the
//     collector's IPVS reader (collectors/ipvs.Read) for bench/svc-<n/2>, wall
//     time as the caller sees it, process start included; it must find the
//     Service's 4 real servers and its ClusterIP on kube-ipvs0;
//   - `ipvsadm -Ln` and `ipvsadm -S -n` into /dev/null.
//
// It prints the ratios and the reader's peak RSS (its own VmHWM), and checks
// the targets at 10k (≤ 10 ms, ≥ 20× faster than `ipvsadm -Ln`, RSS ≤ 32 MiB;
// exit 1 if one fails). Needs root (UML networking and modules).
//
//	ipvsbench [-sizes 1000,5000,10000] [-runs 7] [-kube-proxy path] [-mem 1536M]
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/ipvs"
)

const (
	benchNode   = "bench-node"
	benchNodeIP = "10.250.0.1"
	benchCIDR   = "10.0.0.0/8"
	fakeAPIAddr = "127.0.0.1:18080"
	metricsURL  = "http://127.0.0.1:10249/metrics"
	endpoints   = 4
	// warmRuns is how often the reader child repeats its read (warm_s).
	warmRuns = 9
)

// readResult is what the reader child prints.
type readResult struct {
	RealServers int     `json:"realServers"`
	OnKubeIPVS0 bool    `json:"onKubeIPVS0"`
	Seconds     float64 `json:"seconds"` // inside the child, process start excluded
	// WarmSeconds is the median of the same read repeated in the child:
	// the reader's own cost without the first touch of its code and heap.
	WarmSeconds float64 `json:"warmSeconds"`
	// MinorFaults and MajorFaults are the child's page faults during the
	// first read (each one a host round trip in user-mode Linux).
	MinorFaults int64  `json:"minorFaults"`
	MajorFaults int64  `json:"majorFaults"`
	MaxRSSKiB   int64  `json:"maxRSSKiB"`
	Error       string `json:"error,omitempty"`
}

// guestResult is what the guest writes for the host.
type guestResult struct {
	Services       int     `json:"services"`
	VirtualServers int     `json:"virtualServers"`
	LoadSeconds    float64 `json:"loadSeconds"`   // kube-proxy start → all n in /proc/net/ip_vs
	KPSyncSeconds  float64 `json:"kpSyncSeconds"` // kube-proxy's own sync duration sum at that point
	KPSyncs        int     `json:"kpSyncs"`
	Reader         float64 `json:"readerSeconds"`
	ReaderInside   float64 `json:"readerInsideSeconds"`
	ReaderWarm     float64 `json:"readerWarmSeconds"`
	ReaderMinFlt   int64   `json:"readerMinorFaults"`
	ReaderMajFlt   int64   `json:"readerMajorFaults"`
	// ReaderModprobe is the reader with modprobe on its PATH (see runReader).
	ReaderModprobe       float64 `json:"readerModprobeSeconds"`
	ReaderModprobeInside float64 `json:"readerModprobeInsideSeconds"`
	ReaderRSSKiB         int64   `json:"readerRSSKiB"`
	IpvsadmL             float64 `json:"ipvsadmLSeconds"`
	IpvsadmS             float64 `json:"ipvsadmSSeconds"`
	IpvsadmLBytes        int     `json:"ipvsadmLBytes"`
	// True is `/bin/true`: what starting any process costs in this kernel.
	True  float64 `json:"trueSeconds"`
	Error string  `json:"error,omitempty"`
}

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "read":
			os.Exit(readChild(os.Args[2:]))
		case "guest":
			os.Exit(guest(os.Args[2:]))
		}
	}
	sizes := flag.String("sizes", "1000,5000,10000", "Service counts")
	runs := flag.Int("runs", 7, "runs per measurement (median reported)")
	kpFlag := flag.String("kube-proxy", "", "kube-proxy binary (default $SVCTRACE_KUBE_PROXY, else the testbed's cache)")
	mem := flag.String("mem", "1536M", "UML guest memory")
	umlRun := flag.String("uml", "test/testbed/uml/run.sh", "the UML runner")
	flag.Parse()
	kp := kubeProxyPath(*kpFlag)
	if kp == "" {
		fatal("no kube-proxy binary (set -kube-proxy or SVCTRACE_KUBE_PROXY, or build the testbed)")
	}
	if os.Geteuid() != 0 {
		fatal("needs root (user-mode Linux networking and modules)")
	}
	self, err := os.Executable()
	if err != nil {
		fatal("%v", err)
	}
	tmp, err := os.MkdirTemp("", "ipvsbench-")
	if err != nil {
		fatal("%v", err)
	}
	defer os.RemoveAll(tmp)
	// The guest runs binaries from the host's file system: copy ourselves out
	// of go run's build cache, and build the fake API.
	bin := filepath.Join(tmp, "ipvsbench")
	if out, err := exec.Command("cp", self, bin).CombinedOutput(); err != nil {
		fatal("copy self: %v %s", err, out)
	}
	api := filepath.Join(tmp, "fakeapi")
	if out, err := exec.Command("go", "build", "-o", api, "github.com/svctrace/kubectl-svctrace/test/bench/netfilter/cmd/fakeapi").CombinedOutput(); err != nil {
		fatal("building the fake API: %v\n%s", err, out)
	}
	version, _ := exec.Command(kp, "--version").Output()
	modules := umlModules(*umlRun)
	fmt.Printf("# ipvsbench: median of %d runs, inside user-mode Linux %s; IPVS programmed by the real kube-proxy (%s, %s, mode ipvs) from a fake API; %d endpoints per Service\n",
		*runs, kernelRelease(), kp, strings.TrimSpace(string(version)), endpoints)
	fmt.Println("# reader_s: collectors/ipvs.Read of one Service in a child process, wall time incl. process start (inside_s: without it)")
	fmt.Println("# load_s: kube-proxy start -> all Services in /proc/net/ip_vs; kp_sync_s: its finished syncs' durations summed (n_syncs)")
	fmt.Println("# reader_mp_s: the same with modprobe on its PATH (moby/ipvs forks `modprobe -va ip_vs` once per process; the collector image has none)")
	fmt.Println("# warm_s: the same read repeated in that process (median); faults: its page faults in the first read (minor/major)")
	fmt.Println("# true_s: /bin/true, the cost of starting any process in this kernel")
	fmt.Printf("%7s %9s %9s %9s %9s %11s %11s %11s %8s %8s %8s %8s %8s %10s\n", "svcs", "reader_s", "inside_s", "warm_s", "faults", "reader_mp_s", "ipvsadm_L", "ipvsadm_S", "L/read", "S/read", "rss_MiB", "true_s", "load_s", "kp_sync_s")
	var results []guestResult
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			fatal("%v", err)
		}
		out := filepath.Join(tmp, fmt.Sprintf("out-%d", n))
		if err := os.MkdirAll(out, 0o755); err != nil {
			fatal("%v", err)
		}
		cmd := exec.Command("bash", *umlRun, "svtb-ipvsbench", bin, strings.Join([]string{"guest", s, strconv.Itoa(*runs), out, kp, api}, " "))
		cmd.Args = append([]string{"bash", *umlRun, "svtb-ipvsbench", bin}, "guest", s, strconv.Itoa(*runs), out, kp, api)
		cmd.Env = append(os.Environ(), "UML_MEM="+*mem, "UML_MODULES="+modules, "UML_TIMEOUT=3000")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		runErr := cmd.Run()
		var r guestResult
		b, err := os.ReadFile(filepath.Join(out, "result.json"))
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err != nil || r.Error != "" || runErr != nil {
			tail, _ := os.ReadFile(filepath.Join(out, "kube-proxy.log"))
			if len(tail) > 3000 {
				tail = tail[len(tail)-3000:]
			}
			fatal("n=%d: guest failed (run: %v, result: %v %s); kube-proxy log tail:\n%s", n, runErr, err, r.Error, tail)
		}
		results = append(results, r)
		fmt.Printf("%7d %9.4f %9.4f %9.4f %9s %11.4f %11.4f %11.4f %8.1f %8.1f %8.1f %8.4f %8.1f %10s\n", n, r.Reader, r.ReaderInside, r.ReaderWarm,
			fmt.Sprintf("%d/%d", r.ReaderMinFlt, r.ReaderMajFlt), r.ReaderModprobe, r.IpvsadmL, r.IpvsadmS,
			r.IpvsadmL/r.Reader, r.IpvsadmS/r.Reader, float64(r.ReaderRSSKiB)/1024, r.True, r.LoadSeconds,
			fmt.Sprintf("%.2f (%d)", r.KPSyncSeconds, r.KPSyncs))
	}
	if !checkTargets(results) {
		os.Exit(1)
	}
}

// checkTargets applies the targets at 10k and the flatness check (10k
// reader within 1.5× of 1k, plus 2 ms of noise).
func checkTargets(rs []guestResult) bool {
	ok := true
	var first *guestResult
	for i := range rs {
		r := &rs[i]
		if first == nil {
			first = r
		}
		if r.Services != 10000 {
			continue
		}
		check := func(pass bool, what string) {
			verdict := "ok"
			if !pass {
				verdict, ok = "FAIL", false
			}
			fmt.Printf("# target at 10k: %s: %s\n", what, verdict)
		}
		// Process start in user-mode Linux costs tens to hundreds of ms
		// (true_s), so the absolute target applies to the read itself.
		check(r.ReaderInside <= 0.010, fmt.Sprintf("reader (in process) %.1f ms <= 10 ms", r.ReaderInside*1000))
		check(r.ReaderWarm <= 0.010, fmt.Sprintf("reader (repeated in process) %.1f ms <= 10 ms", r.ReaderWarm*1000))
		check(r.IpvsadmL/r.Reader >= 20, fmt.Sprintf("ipvsadm -Ln / reader %.1fx >= 20x", r.IpvsadmL/r.Reader))
		check(r.ReaderRSSKiB <= 32*1024, fmt.Sprintf("reader RSS %.1f MiB <= 32 MiB", float64(r.ReaderRSSKiB)/1024))
		if first != r {
			check(r.Reader <= first.Reader*1.5+0.002, fmt.Sprintf("flat: %d -> 10k reader %.1f -> %.1f ms", first.Services, first.Reader*1000, r.Reader*1000))
			check(r.ReaderInside <= first.ReaderInside*1.5+0.002, fmt.Sprintf("flat: %d -> 10k reader in process %.1f -> %.1f ms", first.Services, first.ReaderInside*1000, r.ReaderInside*1000))
			check(r.ReaderWarm <= first.ReaderWarm*1.5+0.002, fmt.Sprintf("flat: %d -> 10k reader repeated in process %.1f -> %.1f ms", first.Services, first.ReaderWarm*1000, r.ReaderWarm*1000))
		}
	}
	return ok
}

// guest runs inside UML: program n Services with kube-proxy, then measure.
func guest(args []string) int {
	if len(args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: ipvsbench guest <n> <runs> <outdir> <kube-proxy> <fakeapi>")
		return 2
	}
	n, _ := strconv.Atoi(args[0])
	runs, _ := strconv.Atoi(args[1])
	out, kp, api := args[2], args[3], args[4]
	res := guestResult{Services: n}
	err := guestRun(&res, n, runs, out, kp, api)
	if err != nil {
		res.Error = err.Error()
		fmt.Fprintln(os.Stderr, "ipvsbench guest:", err)
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if werr := os.WriteFile(filepath.Join(out, "result.json"), b, 0o644); werr != nil || err != nil {
		return 1
	}
	return 0
}

func guestRun(res *guestResult, n, runs int, out, kp, api string) error {
	// The node IP on a dummy eth0 (NodePort virtual servers would listen on it).
	for _, c := range [][]string{{"ip", "link", "add", "eth0", "type", "dummy"}, {"ip", "addr", "add", benchNodeIP + "/24", "dev", "eth0"},
		{"ip", "link", "set", "eth0", "up"}} {
		if b, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v %s", c, err, b)
		}
	}
	apiCmd, err := startLogged(filepath.Join(out, "fakeapi.log"), api, "serve", fakeAPIAddr, benchNode, benchNodeIP, strconv.Itoa(n), strconv.Itoa(endpoints))
	if err != nil {
		return err
	}
	defer kill(apiCmd)
	if err := waitFor(60*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", fakeAPIAddr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return fmt.Errorf("fake API not listening: %w", err)
	}
	if b, err := exec.Command(api, "config", out, fakeAPIAddr, "ipvs", benchNode, benchNodeIP, benchCIDR).CombinedOutput(); err != nil {
		return fmt.Errorf("fakeapi config: %v %s", err, b)
	}
	t0 := time.Now()
	kpCmd, err := startLogged(filepath.Join(out, "kube-proxy.log"), kp, "--config="+filepath.Join(out, "kube-proxy.yaml"), "-v=1")
	if err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- kpCmd.Wait() }()
	deadline := time.Now().Add(45 * time.Minute)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("kube-proxy exited: %v", err)
		case <-time.After(time.Second):
		}
		if res.VirtualServers = countVirtualServers(); res.VirtualServers >= n {
			res.LoadSeconds = time.Since(t0).Seconds()
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("only %d of %d virtual servers after %v", res.VirtualServers, n, time.Since(t0))
		}
	}
	// The virtual servers are in before the sync that adds them ends: wait
	// for it (its duration is kube-proxy's own programming time).
	var m map[string]float64
	_ = waitFor(10*time.Minute, func() bool {
		m = metrics()
		return m["kubeproxy_sync_proxy_rules_duration_seconds_count"] >= 1
	})
	res.KPSyncSeconds, res.KPSyncs = m["kubeproxy_sync_proxy_rules_duration_seconds_sum"], int(m["kubeproxy_sync_proxy_rules_duration_seconds_count"])
	_ = kpCmd.Process.Kill()
	<-exited
	kill(apiCmd)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	target := n / 2
	var reader, inside, warm, readerMP, insideMP, ipvsL, ipvsS, trueS []float64
	var minflt, majflt []float64
	for i := 0; i < runs; i++ {
		r, wall, err := runReader(self, target, true)
		if err != nil {
			return err
		}
		readerMP, insideMP = append(readerMP, wall), append(insideMP, r.Seconds)
		r, wall, err = runReader(self, target, false)
		if err != nil {
			return err
		}
		if r.RealServers != endpoints || !r.OnKubeIPVS0 {
			return fmt.Errorf("reader found %d real servers (want %d), ClusterIP on kube-ipvs0 %v: %s", r.RealServers, endpoints, r.OnKubeIPVS0, r.Error)
		}
		reader, inside, warm = append(reader, wall), append(inside, r.Seconds), append(warm, r.WarmSeconds)
		minflt, majflt = append(minflt, float64(r.MinorFaults)), append(majflt, float64(r.MajorFaults))
		res.ReaderRSSKiB = max(res.ReaderRSSKiB, r.MaxRSSKiB)
		var nbytes int
		d, nbytes, err := timeCommand("ipvsadm", "-Ln")
		if err != nil {
			return err
		}
		res.IpvsadmLBytes = nbytes
		ipvsL = append(ipvsL, d)
		if d, _, err = timeCommand("ipvsadm", "-S", "-n"); err != nil {
			return err
		}
		ipvsS = append(ipvsS, d)
		if d, _, err = timeCommand("/bin/true"); err != nil {
			return err
		}
		trueS = append(trueS, d)
	}
	res.True = median(trueS)
	res.Reader, res.ReaderInside, res.IpvsadmL, res.IpvsadmS = median(reader), median(inside), median(ipvsL), median(ipvsS)
	res.ReaderWarm, res.ReaderMinFlt, res.ReaderMajFlt = median(warm), int64(median(minflt)), int64(median(majflt))
	res.ReaderModprobe, res.ReaderModprobeInside = median(readerMP), median(insideMP)
	return nil
}

// countVirtualServers counts the TCP/UDP/SCTP lines of /proc/net/ip_vs.
func countVirtualServers() int {
	f, err := os.Open("/proc/net/ip_vs")
	if err != nil {
		return 0
	}
	defer f.Close()
	c := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Bytes()
		if bytes.HasPrefix(l, []byte("TCP ")) || bytes.HasPrefix(l, []byte("UDP ")) || bytes.HasPrefix(l, []byte("SCTP ")) {
			c++
		}
	}
	return c
}

// runReader starts the reader child and times it from the caller's side.
// moby/ipvs runs `modprobe -va ip_vs` once per process (ipvs.New), even
// with the module loaded, as it is whenever the reader gets that far. The
// collector image has no modprobe, so there exec fails before forking: the
// reader runs with a PATH holding only ipvsadm's directory unless
// withModprobe, which measures a node-installed collector with kmod.
func runReader(self string, i int, withModprobe bool) (readResult, float64, error) {
	var r readResult
	var stdout bytes.Buffer
	cmd := exec.Command(self, "read", strconv.Itoa(i))
	if !withModprobe {
		cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	}
	cmd.Stdout = &stdout
	t := time.Now()
	err := cmd.Run()
	wall := time.Since(t).Seconds()
	if err != nil {
		return r, 0, fmt.Errorf("reader: %v", err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return r, 0, fmt.Errorf("reader output %q: %v", stdout.String(), err)
	}
	return r, wall, nil
}

// readChild reads bench/svc-<i> the way the collector's ipvs section does.
func readChild(args []string) int {
	i, err := strconv.Atoi(args[0])
	if err != nil {
		return 2
	}
	clusterIP := fmt.Sprintf("10.100.%d.%d", i/250, i%250+1) // fakeapi.BenchService(i, 4, false)
	req := &collectorapi.Request{APIVersion: "svctrace.dev/v1alpha1", Kind: collectorapi.RequestKind, NodeName: benchNode,
		Service: collectorapi.ServiceSpec{Namespace: "bench", Name: fmt.Sprintf("svc-%d", i), Type: "ClusterIP",
			ClusterIPs: []string{clusterIP}, Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, TargetPort: "8080"}}}}
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t := time.Now()
	obs, err := ipvs.Read(context.Background(), req)
	r := readResult{Seconds: time.Since(t).Seconds()}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	r.MinorFaults, r.MajorFaults = ru1.Minflt-ru0.Minflt, ru1.Majflt-ru0.Majflt
	if err != nil {
		r.Error = err.Error()
	}
	var again []float64
	for range warmRuns {
		t := time.Now()
		if _, err := ipvs.Read(context.Background(), req); err != nil && r.Error == "" {
			r.Error = err.Error()
		}
		again = append(again, time.Since(t).Seconds())
	}
	r.WarmSeconds = median(again)
	if obs != nil {
		for _, vs := range obs.VirtualServers {
			if vs.Frontend == "clusterIP" {
				r.RealServers = len(vs.RealServers)
			}
		}
		if obs.KubeIPVS0 != nil {
			for _, a := range obs.KubeIPVS0.Addresses {
				r.OnKubeIPVS0 = r.OnKubeIPVS0 || a == clusterIP
			}
		}
	}
	r.MaxRSSKiB = vmHWM()
	_ = json.NewEncoder(os.Stdout).Encode(r)
	return 0
}

func vmHWM() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			return v
		}
	}
	return 0
}

// timeCommand runs a command with stdout counted and discarded.
func timeCommand(name string, args ...string) (float64, int, error) {
	cmd := exec.Command(name, args...)
	var cw countWriter
	cmd.Stdout = &cw
	t := time.Now()
	err := cmd.Run()
	d := time.Since(t).Seconds()
	if err != nil {
		return 0, 0, fmt.Errorf("%s %v: %v", name, args, err)
	}
	return d, cw.n, nil
}

type countWriter struct{ n int }

func (c *countWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

func metrics() map[string]float64 {
	out := map[string]float64{}
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(metricsURL)
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				// Summed over labels (ip_family): one family here.
				name, _, _ := strings.Cut(f[0], "{")
				out[name] += v
			}
		}
	}
	return out
}

func startLogged(logPath, name string, args ...string) (*exec.Cmd, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	return cmd, nil
}

func kill(c *exec.Cmd) {
	if c.Process != nil && c.ProcessState == nil {
		_ = c.Process.Kill()
		_, _ = c.Process.Wait()
	}
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		time.Sleep(200 * time.Millisecond)
	}
	return nil
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// kubeProxyPath finds the real kube-proxy: the flag, $SVCTRACE_KUBE_PROXY,
// or the testbed's cache (test/testbed/build.sh).
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

// umlModules is UML_IPVS_MODULES from the runner's lib.sh.
func umlModules(runner string) string {
	out, err := exec.Command("bash", "-c", `source "$1" && echo "$UML_IPVS_MODULES"`, "_", filepath.Join(filepath.Dir(runner), "lib.sh")).Output()
	if err != nil {
		fatal("reading UML_IPVS_MODULES: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func kernelRelease() string {
	out, _ := exec.Command("linux", "--version").Output()
	return strings.TrimSpace(string(out))
}

func fatal(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "ipvsbench: "+format+"\n", args...)
	os.Exit(2)
}
