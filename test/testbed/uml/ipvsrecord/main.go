// Command ipvsrecord records what the svctrace collector observes of the real
// kube-proxy in IPVS mode, for the trace package's tests. This host's kernel
// has no IPVS, so it runs inside user-mode Linux (test/testbed/uml): the
// fake API (test/bench/netfilter/cmd/fakeapi) serves the Scenarios below on
// 127.0.0.1, the real kube-proxy (mode ipvs, legacy iptables) programs them
// on a node with two node IPs (dummy eth0 10.250.0.1, eth1 10.251.0.1), and
// the real svctrace-collector binary reads each Service (sections proxy,
// ipvs). Then it breaks one Service per fault by hand (ipvsadm, ip, ipset,
// sysctl) and observes it again while kube-proxy still runs (its periodic
// resync is set to 10 minutes so that it does not repair the faults first;
// the tool checks each fault is still there after the observation).
//
// Output, in -out (default collectors/testdata/observations/ipvs-uml): one
// <scenario>.json observation each, api.json (the Services and
// EndpointSlices served), and raw/ (ipvsadm -Ln, ipset save, ip addr of
// kube-ipvs0, iptables-legacy-save, kube-proxy's log). Needs root.
//
//	go run ./test/testbed/uml/ipvsrecord [-kube-proxy path] [-out dir]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakeapi"
)

const (
	nodeName = "uml-node"
	nodeIP   = "10.250.0.1"
	nodeIP2  = "10.251.0.1"
	other    = "other-node"
	apiAddr  = "127.0.0.1:18080"
)

// fault is a hand-made break of one Service, made after kube-proxy synced.
type fault struct {
	cmds  [][]string
	check []string // a command whose output must still show the fault afterwards…
	want  string   // …by containing this ("!": by not containing it; "~": blanks squeezed)
}

// scenario is one Service and, optionally, a fault.
type scenario struct {
	svc   fakeapi.Service
	fault *fault
}

func svc(name, ip string, mut ...func(*fakeapi.Service)) fakeapi.Service {
	s := fakeapi.Service{Namespace: "default", Name: name, ClusterIP: ip, PortName: "http", Port: 80, TargetPort: 8080,
		Endpoints: []string{"10.244.0.5", "10.244.2.7"}, EndpointNodes: []string{nodeName, other}}
	for _, m := range mut {
		m(&s)
	}
	return s
}

func nodePort(p int32) func(*fakeapi.Service) {
	return func(s *fakeapi.Service) { s.Type, s.NodePort = corev1.ServiceTypeNodePort, p }
}

// Scenarios are the recorded Services, in the order of the files.
var Scenarios = []scenario{
	{svc: svc("web", "10.96.0.50")},
	{svc: svc("np", "10.96.0.51", nodePort(30080))},
	{svc: svc("sticky", "10.96.0.52", func(s *fakeapi.Service) { s.AffinitySeconds = 600 })},
	{svc: svc("etp-local", "10.96.0.53", nodePort(30081), func(s *fakeapi.Service) { s.ETPLocal = true })},
	{svc: svc("etp-local-none", "10.96.0.54", nodePort(30082), func(s *fakeapi.Service) {
		s.ETPLocal, s.Endpoints, s.EndpointNodes = true, []string{"10.244.2.8"}, []string{other}
	})},
	{svc: svc("ext", "10.96.0.55", func(s *fakeapi.Service) { s.ExternalIPs = []string{"192.0.2.10"} })},
	{svc: svc("lb", "10.96.0.56", nodePort(30083), func(s *fakeapi.Service) {
		s.Type, s.LoadBalancerIPs = corev1.ServiceTypeLoadBalancer, []string{"192.0.2.20"}
	})},
	{svc: svc("empty", "10.96.0.57", func(s *fakeapi.Service) { s.Endpoints, s.EndpointNodes = nil, nil })},
	// internalTrafficPolicy Local on a NodePort Service with no local
	// endpoint: syncEndpoint gives the ClusterIP the cluster endpoints.
	{svc: svc("itp-local-np-none", "10.96.0.58", nodePort(30084), func(s *fakeapi.Service) {
		s.ITPLocal, s.Endpoints, s.EndpointNodes = true, []string{"10.244.2.9"}, []string{other}
	})},
	// An externalIP that is the node's own second address: not bound to
	// kube-ipvs0 (shouldBind).
	{svc: svc("ext-node-ip", "10.96.0.59", func(s *fakeapi.Service) { s.ExternalIPs = []string{nodeIP2} })},
	{svc: svc("fault-rs-deleted", "10.96.0.60"), fault: &fault{
		cmds:  [][]string{{"ipvsadm", "-d", "-t", "10.96.0.60:80", "-r", "10.244.2.7:8080"}},
		check: []string{"ipvsadm", "-Ln", "-t", "10.96.0.60:80"}, want: "!10.244.2.7"}},
	{svc: svc("fault-no-kube-ipvs0", "10.96.0.61"), fault: &fault{
		cmds:  [][]string{{"ip", "addr", "del", "10.96.0.61/32", "dev", "kube-ipvs0"}},
		check: []string{"ip", "-o", "addr", "show", "dev", "kube-ipvs0"}, want: "!10.96.0.61/"}},
	{svc: svc("fault-weight0", "10.96.0.62"), fault: &fault{
		cmds:  [][]string{{"ipvsadm", "-e", "-t", "10.96.0.62:80", "-r", "10.244.2.7:8080", "-m", "-w", "0"}},
		check: []string{"ipvsadm", "-Ln", "-t", "10.96.0.62:80"}, want: "~10.244.2.7:8080 Masq 0 "}},
	{svc: svc("fault-persistence", "10.96.0.63", func(s *fakeapi.Service) { s.AffinitySeconds = 600 }), fault: &fault{
		cmds:  [][]string{{"ipvsadm", "-E", "-t", "10.96.0.63:80", "-s", "rr", "-p", "60"}},
		check: []string{"ipvsadm", "-Ln", "-t", "10.96.0.63:80"}, want: "persistent 60"}},
	{svc: svc("fault-no-ipset", "10.96.0.64"), fault: &fault{
		cmds:  [][]string{{"ipset", "del", "KUBE-CLUSTER-IP", "10.96.0.64,tcp:80"}},
		check: []string{"ipset", "list", "KUBE-CLUSTER-IP"}, want: "!10.96.0.64,tcp:80"}},
	{svc: svc("fault-sysctls", "10.96.0.65"), fault: &fault{
		cmds: [][]string{{"sysctl", "-w", "net.ipv4.vs.expire_nodest_conn=0"}, {"sysctl", "-w", "net.ipv4.vs.conn_reuse_mode=1"}},
		// Observed last: the sysctls are node-wide.
		check: []string{"sysctl", "-n", "net.ipv4.vs.expire_nodest_conn"}, want: "0"}},
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "guest" {
		if err := guest(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "ipvsrecord guest:", err)
			os.Exit(1)
		}
		return
	}
	kpFlag := flag.String("kube-proxy", "", "kube-proxy binary (default $SVCTRACE_KUBE_PROXY, else the testbed's cache)")
	outFlag := flag.String("out", "collectors/testdata/observations/ipvs-uml", "output directory")
	umlRun := flag.String("uml", "test/testbed/uml/run.sh", "the UML runner")
	flag.Parse()
	kp := *kpFlag
	if kp == "" {
		kp = os.Getenv("SVCTRACE_KUBE_PROXY")
	}
	if kp == "" {
		home, _ := os.UserHomeDir()
		kp = filepath.Join(home, ".cache/svctrace/k8s-v1.37.2/bin/kube-proxy")
	}
	out, err := filepath.Abs(*outFlag)
	check(err)
	tmp, err := os.MkdirTemp("", "ipvsrecord-")
	check(err)
	defer os.RemoveAll(tmp)
	self, err := os.Executable()
	check(err)
	run("cp", self, filepath.Join(tmp, "ipvsrecord"))
	run("go", "build", "-o", filepath.Join(tmp, "fakeapi"), "./test/bench/netfilter/cmd/fakeapi")
	run("go", "build", "-o", filepath.Join(tmp, "svctrace-collector"), "./cmd/svctrace-collector")
	check(os.MkdirAll(filepath.Join(out, "raw"), 0o755))

	c := fakeapi.Cluster{NodeName: nodeName, NodeIP: nodeIP, PodCIDR: "10.244.0.0/24"}
	for _, s := range Scenarios {
		c.Services = append(c.Services, s.svc)
	}
	check(os.WriteFile(filepath.Join(tmp, "cluster.json"), []byte(c.Encode()), 0o644))
	_, svcs, slices := c.Objects()
	api, err := json.MarshalIndent(map[string]any{"node": nodeName, "services": svcs, "endpointSlices": slices}, "", "  ")
	check(err)
	check(os.WriteFile(filepath.Join(out, "api.json"), append(api, '\n'), 0o644))

	modules, err := exec.Command("bash", "-c", `source "$1" && echo "$UML_IPVS_MODULES"`, "_", filepath.Join(filepath.Dir(*umlRun), "lib.sh")).Output()
	check(err)
	cmd := exec.Command("bash", *umlRun, "svtb-ipvsrecord", filepath.Join(tmp, "ipvsrecord"), "guest", tmp, out, kp)
	cmd.Env = append(os.Environ(), "UML_MEM=768M", "UML_MODULES="+strings.TrimSpace(string(modules)), "UML_TIMEOUT=900")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	check(cmd.Run())
	fmt.Println("recorded into", out)
}

func guest(args []string) error {
	if len(args) != 3 {
		return fmt.Errorf("usage: ipvsrecord guest <tmp> <out> <kube-proxy>")
	}
	tmp, out, kp := args[0], args[1], args[2]
	raw := filepath.Join(out, "raw")
	for _, c := range [][]string{
		{"ip", "link", "add", "eth0", "type", "dummy"}, {"ip", "addr", "add", nodeIP + "/24", "dev", "eth0"}, {"ip", "link", "set", "eth0", "up"},
		{"ip", "link", "add", "eth1", "type", "dummy"}, {"ip", "addr", "add", nodeIP2 + "/24", "dev", "eth1"}, {"ip", "link", "set", "eth1", "up"},
	} {
		if b, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%v: %v %s", c, err, b)
		}
	}
	api := exec.Command(filepath.Join(tmp, "fakeapi"), "serve-cluster", apiAddr, filepath.Join(tmp, "cluster.json"))
	api.Stderr = os.Stderr
	if err := api.Start(); err != nil {
		return err
	}
	defer func() { _ = api.Process.Kill(); _, _ = api.Process.Wait() }()
	if err := waitFor(60*time.Second, func() bool {
		c, err := net.DialTimeout("tcp", apiAddr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	}); err != nil {
		return fmt.Errorf("fake API: %w", err)
	}
	if b, err := exec.Command(filepath.Join(tmp, "fakeapi"), "config", tmp, apiAddr, "ipvs", nodeName, nodeIP, "10.244.0.0/16").CombinedOutput(); err != nil {
		return fmt.Errorf("fakeapi config: %v %s", err, b)
	}
	// kube-proxy's periodic resync (30 s by default) would repair the faults
	// before they are observed; nothing in the fake API changes, so no other
	// sync comes.
	cfg, err := os.OpenFile(filepath.Join(tmp, "kube-proxy.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = cfg.WriteString("ipvs: {syncPeriod: 10m}\n")
	cfg.Close()
	if err != nil {
		return err
	}
	kpLog, err := os.Create(filepath.Join(raw, "kube-proxy.log"))
	if err != nil {
		return err
	}
	defer kpLog.Close()
	kpCmd := exec.Command(kp, "--config="+filepath.Join(tmp, "kube-proxy.yaml"), "-v=2")
	kpCmd.Stdout, kpCmd.Stderr = kpLog, kpLog
	kpCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := kpCmd.Start(); err != nil {
		return err
	}
	defer func() { _ = kpCmd.Process.Kill(); _, _ = kpCmd.Process.Wait() }()
	// Every Service with endpoints gets a ClusterIP virtual server; wait for
	// all of them and for kube-proxy's first sync to finish.
	want := len(Scenarios)
	if err := waitFor(5*time.Minute, func() bool {
		b, _ := exec.Command("ipvsadm", "-Ln").Output()
		n := 0
		for _, s := range Scenarios {
			if bytes.Contains(b, []byte(s.svc.ClusterIP+":80 ")) {
				n++
			}
		}
		return n == want && synced()
	}); err != nil {
		return fmt.Errorf("kube-proxy did not program all %d Services: %w", want, err)
	}
	time.Sleep(2 * time.Second)
	dumpRaw(raw, "before-faults")

	collect := func(s scenario, name string) error {
		req := request(s.svc)
		b, err := json.Marshal(req)
		if err != nil {
			return err
		}
		c := exec.Command(filepath.Join(tmp, "svctrace-collector"), "--pretty", "--request", string(b))
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("collector %s: %v %s", name, err, stderr.String())
		}
		return os.WriteFile(filepath.Join(out, name+".json"), stdout.Bytes(), 0o644)
	}
	var faults []scenario
	for _, s := range Scenarios {
		if s.fault != nil {
			faults = append(faults, s)
			continue
		}
		if err := collect(s, s.svc.Name); err != nil {
			return err
		}
	}
	for _, s := range faults {
		for _, c := range s.fault.cmds {
			if b, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("fault %s: %v: %v %s", s.svc.Name, c, err, b)
			}
		}
		if err := collect(s, s.svc.Name); err != nil {
			return err
		}
		b, _ := exec.Command(s.fault.check[0], s.fault.check[1:]...).CombinedOutput()
		text, want := string(b), s.fault.want
		if strings.HasPrefix(want, "~") { // compare with runs of blanks squeezed
			text, want = strings.Join(strings.Fields(text), " ")+" ", want[1:]
		}
		still := strings.Contains(text, strings.TrimPrefix(want, "!"))
		if strings.HasPrefix(want, "!") {
			still = !still
		}
		if !still {
			return fmt.Errorf("fault %s was repaired before it was observed: %s", s.svc.Name, b)
		}
	}
	dumpRaw(raw, "after-faults")
	return nil
}

// request is what the plugin would send for the Service.
func request(s fakeapi.Service) *collectorapi.Request {
	spec := collectorapi.ServiceSpec{Namespace: s.Namespace, Name: s.Name, Type: string(corev1.ServiceTypeClusterIP),
		ClusterIPs: []string{s.ClusterIP}, ExternalIPs: s.ExternalIPs, LoadBalancerIPs: s.LoadBalancerIPs, SessionAffinity: "None",
		InternalTrafficPolicy: "Cluster",
		Ports:                 []collectorapi.ServicePort{{Name: s.PortName, Protocol: "TCP", Port: s.Port, NodePort: s.NodePort, TargetPort: strconv.Itoa(int(s.TargetPort))}}}
	if s.Type != "" {
		spec.Type = string(s.Type)
	}
	if s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer || len(s.ExternalIPs) > 0 {
		spec.ExternalTrafficPolicy = "Cluster"
		if s.ETPLocal {
			spec.ExternalTrafficPolicy = "Local"
		}
	}
	if s.AffinitySeconds > 0 {
		spec.SessionAffinity, spec.AffinityTimeoutSecs = "ClientIP", s.AffinitySeconds
	}
	req := &collectorapi.Request{APIVersion: collectorapi.RequestAPIVersion, Kind: collectorapi.RequestKind, NodeName: nodeName,
		Service: spec, Sections: []string{collectorapi.SectionProxy, collectorapi.SectionIPVS}}
	for i, ip := range s.Endpoints {
		req.Endpoints = append(req.Endpoints, collectorapi.Endpoint{IP: ip, Ports: map[string]int32{s.PortName: s.TargetPort},
			Ready: true, Serving: true, NodeName: s.EndpointNodes[i]})
	}
	return req
}

func dumpRaw(dir, suffix string) {
	for name, c := range map[string][]string{
		"ipvsadm-Ln":         {"ipvsadm", "-Ln"},
		"ipset-save":         {"ipset", "save"},
		"ip-addr-kube-ipvs0": {"ip", "addr", "show", "dev", "kube-ipvs0"},
		"iptables-save":      {"iptables-legacy-save"},
		"sysctl-vs":          {"sysctl", "net.ipv4.vs.conntrack", "net.ipv4.vs.conn_reuse_mode", "net.ipv4.vs.expire_nodest_conn", "net.ipv4.vs.expire_quiescent_template"},
	} {
		b, err := exec.Command(c[0], c[1:]...).CombinedOutput()
		if err != nil {
			b = append(b, []byte("error: "+err.Error()+"\n")...)
		}
		_ = os.WriteFile(filepath.Join(dir, name+"."+suffix+".txt"), b, 0o644)
	}
}

// synced: kube-proxy has finished a sync (its duration histogram counts one).
func synced() bool {
	cl := http.Client{Timeout: 3 * time.Second}
	resp, err := cl.Get("http://127.0.0.1:10249/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		// kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family="IPv4"} N
		if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[0], "kubeproxy_sync_proxy_rules_duration_seconds_count") && f[1] != "0" {
			return true
		}
	}
	return false
}

func waitFor(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v", d)
		}
		time.Sleep(500 * time.Millisecond)
	}
	return nil
}

func run(args ...string) {
	if b, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "ipvsrecord: %v: %v\n%s", args, err, b)
		os.Exit(1)
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "ipvsrecord:", err)
		os.Exit(1)
	}
}
