package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/kubeproxy"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakeapi"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// kubeProxyBinary finds a real kube-proxy: $SVCTRACE_KUBE_PROXY, or the one
// the testbed builds into its cache (test/testbed/build.sh).
func kubeProxyBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SVCTRACE_KUBE_PROXY"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".cache", "svctrace", "k8s-v1.37.2", "bin", "kube-proxy")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no kube-proxy binary (set SVCTRACE_KUBE_PROXY or build the testbed): %v", err)
	}
	return p
}

// TestCollectorAgainstRealKubeProxy runs the real kube-proxy v1.37 inside a
// test node namespace, fed by a minimal fake API (one Node, the Service
// default/web and its EndpointSlice), in nftables and in iptables mode, and
// checks what the collector reads from it: /proxyMode, /healthz, metric
// names, the mode's fingerprint, the ClusterIP probe and the NATed flows.
func TestCollectorAgainstRealKubeProxy(t *testing.T) {
	kp := kubeProxyBinary(t)
	bin := buildCollector(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"nftables", "iptables"} {
		t.Run(mode, func(t *testing.T) {
			s := netns.NewPlainScenario(t)
			cmd, log := startKubeProxy(t, s, self, kp, mode, fakeapi.Single("svct-node", s.NodeIP, s.ClusterIP, s.PodIP), s.NodeIP, "10.244.0.0/16")
			waitProgrammed(t, s.Node, mode, "IPv4", s.ClusterIP, log)
			cluster := fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort)
			s.Connect(t, cluster)

			req := collectorapi.Request{APIVersion: collectorapi.RequestAPIVersion, Kind: collectorapi.RequestKind, NodeName: "svct-node",
				Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", Type: "ClusterIP", ClusterIPs: []string{s.ClusterIP},
					Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort), TargetPort: "8080"}}},
				Endpoints: []collectorapi.Endpoint{{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.BackendPort)},
					Ready: true, Serving: true, NodeName: "svct-node"}},
				PodIPs:   []string{s.PodIP},
				Sections: []string{"proxy", "iptables", "nftables", "conntrack", "route", "probe"}, ConntrackSampleMillis: 200}
			if dump := os.Getenv("SVCTRACE_DUMP_DIR"); dump != "" {
				t.Setenv("SVCTRACE_DUMP_OBSERVATION", filepath.Join(dump, "real-kube-proxy-"+mode+"-netns.json"))
			}
			obs := runIn(t, s.Node, bin, req)

			p := obs.Sections.Proxy.Data
			if p.Mode != collectorapi.DatapathMode(mode) {
				t.Errorf("proxyMode %q (%+v)", p.Mode, p.ProxyMode)
			}
			if h := p.Healthz; h == nil || h.Fetch.StatusCode != 200 || h.Healthy == nil || !*h.Healthy || h.Families["IPv4"].LastUpdated == "" {
				t.Errorf("healthz %+v", h)
			}
			names := map[string]bool{}
			for _, m := range p.Metrics.Samples {
				names[m.Name] = true
			}
			for _, want := range []string{"kubeproxy_sync_proxy_rules_last_timestamp_seconds", "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
				"kubeproxy_sync_full_proxy_rules_duration_seconds_count", "kubeproxy_sync_proxy_rules_duration_seconds_count"} {
				if !names[want] {
					t.Errorf("metric %s missing; got %v", want, names)
				}
			}
			fingerprint := map[string]string{"nftables": "table ip kube-proxy", "iptables": "chain nat KUBE-PROXY-CANARY (iptables-nft, ip)"}[mode]
			found := false
			for _, fp := range p.Fingerprints {
				if fp.Check == fingerprint && fp.Found {
					found = true
				}
			}
			if !found {
				t.Errorf("fingerprint %q not found: %+v", fingerprint, p.Fingerprints)
			}
			if !connected(obs, cluster) {
				t.Errorf("ClusterIP probe through kube-proxy's rules: %+v", obs.Sections.Probe.Data.Probes)
			}
			ct := obs.Sections.Conntrack.Data
			if ct.Flows == nil || len(ct.Flows.Frontends) != 1 || ct.Flows.Frontends[0].Backends[0].Backend != fmt.Sprintf("%s:%d", s.PodIP, s.BackendPort) {
				t.Errorf("conntrack flows through kube-proxy's DNAT: %+v", ct.Flows)
			}
			status, sectionErr, data := datapathSectionJSON(t, obs, mode)
			if status != collectorapi.StatusOK || !strings.Contains(data, s.PodIP) {
				t.Errorf("%s section does not show the endpoint %s: %s %s", mode, s.PodIP, status, sectionErr)
			}

			// Stop kube-proxy: /proxyMode is gone, the rules (and so the
			// fingerprint and the programmed endpoint) stay behind.
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			obs = runIn(t, s.Node, bin, req)
			p = obs.Sections.Proxy.Data
			if p.Mode != "" || p.ProxyMode.ErrorClass != collectorapi.ErrClassRefused || p.Healthz.Fetch.ErrorClass != collectorapi.ErrClassRefused {
				t.Errorf("stopped kube-proxy: mode %q, proxyMode %+v, healthz %+v", p.Mode, p.ProxyMode, p.Healthz.Fetch)
			}
			found = false
			for _, fp := range p.Fingerprints {
				if fp.Check == fingerprint && fp.Found {
					found = true
				}
			}
			_, _, data = datapathSectionJSON(t, obs, mode)
			if !found || !strings.Contains(data, s.PodIP) {
				t.Errorf("stopped kube-proxy: fingerprint found=%v, %s rules still listed=%v", found, mode, strings.Contains(data, s.PodIP))
			}
			if mode == "iptables" {
				// The rules kube-proxy left are intact: the nf_tables reader
				// establishes the entry rule from reference counts. Then the
				// cluster IP is rejected in the node's filter OUTPUT: the
				// failed probe makes the collector read KUBE-SERVICES.
				if b := nftBackend(obs); b != nil && b.EntryProof != collectorapi.IPTablesEntryProofReferences {
					t.Errorf("nf_tables entry proof %q (fallback %q), want references", b.EntryProof, b.EntryProofFallback)
				}
				// (filter OUTPUT sees the DNATed packet: match its original
				// destination).
				s.Node.MustRun(t, "iptables", "-I", "OUTPUT", "-p", "tcp", "-m", "conntrack", "--ctorigdst", s.ClusterIP, "--ctorigdstport", fmt.Sprint(s.ServicePort),
					"-j", "REJECT", "--reject-with", "tcp-reset")
				obs = runIn(t, s.Node, bin, req)
				if connected(obs, cluster) {
					t.Fatalf("cluster IP still answers behind the REJECT rule")
				}
				b := nftBackend(obs)
				if b == nil {
					t.Skip("kube-proxy wrote through the legacy backend: no reference counts to fall back from")
				}
				if b.EntryProof != collectorapi.IPTablesEntryProofRules || !strings.Contains(b.EntryProofFallback, "the probe of clusterIP "+cluster+" failed") ||
					len(b.Ports) != 1 || len(b.Ports[0].Entry) != 1 {
					t.Errorf("after a failed cluster IP probe: proof %q, fallback %q, ports %+v", b.EntryProof, b.EntryProofFallback, b.Ports)
				}
			}
		})
	}
}

// nftBackend is the iptables section's nf_tables backend holding
// kube-proxy's chains, nil when there is none.
func nftBackend(obs *collectorapi.Observation) *collectorapi.IPTablesBackendObservation {
	if obs.Sections.IPTables == nil || obs.Sections.IPTables.Data == nil {
		return nil
	}
	for i, b := range obs.Sections.IPTables.Data.Backends {
		if b.Backend == collectorapi.IPTablesBackendNFTables && b.KubeProxyChains {
			return &obs.Sections.IPTables.Data.Backends[i]
		}
	}
	return nil
}

// datapathSectionJSON is the nftables or iptables section (by kube-proxy
// mode) with its data as JSON ("" when it has none), for checks that only
// ask whether an address shows up anywhere in it.
func datapathSectionJSON(t *testing.T, obs *collectorapi.Observation, mode string) (collectorapi.SectionStatus, string, string) {
	t.Helper()
	if mode == "nftables" {
		return sectionJSON(t, obs.Sections.NFTables)
	}
	return sectionJSON(t, obs.Sections.IPTables)
}

func sectionJSON[T any](t *testing.T, s *collectorapi.Section[T]) (collectorapi.SectionStatus, string, string) {
	t.Helper()
	if s == nil {
		return "", "section missing", ""
	}
	if s.Data == nil {
		return s.Status, s.Error, ""
	}
	b, err := json.Marshal(s.Data)
	if err != nil {
		t.Fatal(err)
	}
	return s.Status, s.Error, string(b)
}

// TestCollectorAgainstRealKubeProxyIPv6 runs the real kube-proxy in iptables
// mode for a single-stack IPv6 Service (IPv6 node IP, IPv6 ClusterIP and
// endpoint) and checks the collector's ip6tables-nft reading: the ClusterIP
// entry rule in KUBE-SERVICES, the KUBE-SVC chain and the endpoint's KUBE-SEP
// with its DNAT to [ipv6]:port; and that the ClusterIP connects through the
// rules. With SVCTRACE_DUMP_DIR set it also writes the real ip6tables-nft-save
// output there (kubeproxy-ipv6.save, the fixture in collectors/testdata/iptables).
func TestCollectorAgainstRealKubeProxyIPv6(t *testing.T) {
	kp := kubeProxyBinary(t)
	bin := buildCollector(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{collectorapi.IPTablesBackendNFTables, collectorapi.IPTablesBackendLegacy} {
		t.Run(backend, func(t *testing.T) { testKubeProxyIPv6(t, kp, bin, self, backend) })
	}
}

// testKubeProxyIPv6 runs kube-proxy in iptables mode for a single-stack
// IPv6 Service with its commands on one backend, and checks that the
// collector reads that backend's ip6tables rules (and only those).
func testKubeProxyIPv6(t *testing.T, kp, bin, self, backend string) {
	s := netns.NewPlainScenario(t)
	s.EnableIPv6(t)
	nodeIP, clusterIP, podIP := netns.NodeIP6, netns.ClusterIP6, netns.PodIP6
	var env []string
	family := "IPv6"
	if backend == collectorapi.IPTablesBackendLegacy {
		env, family = legacyEnv(t), "IPv6-legacy"
	}
	_, log := startKubeProxy(t, s, self, kp, "iptables", fakeapi.Single("svct-node", nodeIP, clusterIP, podIP), nodeIP, "fd00:10:244::/56", env...)
	waitProgrammed(t, s.Node, "iptables", family, clusterIP, log)
	cluster := fmt.Sprintf("[%s]:%d", clusterIP, s.ServicePort)
	s.Connect(t, cluster)
	if dump := os.Getenv("SVCTRACE_DUMP_DIR"); dump != "" && backend == collectorapi.IPTablesBackendNFTables {
		writeFile(t, filepath.Join(dump, "kubeproxy-ipv6.save"), s.Node.MustRun(t, "ip6tables-nft-save"))
	}

	req := collectorapi.Request{APIVersion: collectorapi.RequestAPIVersion, Kind: collectorapi.RequestKind, NodeName: "svct-node",
		Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", Type: "ClusterIP", ClusterIPs: []string{clusterIP},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort), TargetPort: "8080"}}},
		Endpoints: []collectorapi.Endpoint{{IP: podIP, Ports: map[string]int32{"http": int32(s.BackendPort)},
			Ready: true, Serving: true, NodeName: "svct-node"}},
		PodIPs:   []string{podIP},
		Sections: []string{"proxy", "iptables", "probe"}}
	obs := runIn(t, s.Node, bin, req)

	p := obs.Sections.Proxy.Data
	if p.Mode != "iptables" {
		t.Errorf("proxyMode %q (%+v)", p.Mode, p.ProxyMode)
	}
	if h := p.Healthz; h == nil || h.Fetch.StatusCode != 200 || h.Families["IPv6"].LastUpdated == "" {
		t.Errorf("healthz %+v", h)
	}
	if !connected(obs, cluster) {
		t.Errorf("IPv6 ClusterIP probe through kube-proxy's rules: %+v", obs.Sections.Probe.Data.Probes)
	}

	sec := obs.Sections.IPTables
	if sec.Status != collectorapi.StatusOK || sec.Data == nil {
		t.Fatalf("iptables section: %s %s", sec.Status, sec.Error)
	}
	ipt := sec.Data
	var b *collectorapi.IPTablesBackendObservation
	for i := range ipt.Backends {
		if ipt.Backends[i].Backend == backend && ipt.Backends[i].Family == "IPv6" {
			b = &ipt.Backends[i]
		} else if ipt.Backends[i].KubeProxyChains {
			t.Errorf("kube-proxy chains reported in another backend/family: %+v", ipt.Backends[i])
		}
	}
	if b == nil || b.Error != "" || !b.KubeProxyChains || len(b.Ports) != 1 {
		t.Fatalf("no IPv6 %s backend with the Service's port: %+v", backend, ipt.Backends)
	}
	// Read from the kernel: netlink for nf_tables, the ip6tables blob for
	// legacy; no iptables command needed.
	wantReader := map[string]string{collectorapi.IPTablesBackendNFTables: collectorapi.IPTablesReaderNetlink,
		collectorapi.IPTablesBackendLegacy: collectorapi.IPTablesReaderKernelBlob}[backend]
	if b.Reader != wantReader || len(b.Commands) != 0 {
		t.Errorf("IPv6 %s read by %q (want %q), commands %q", backend, b.Reader, wantReader, b.Commands)
	}
	port := b.Ports[0]
	spn := kubeproxy.ServicePortName("default", "web", "http")
	svcChain := kubeproxy.IPTablesServiceChains(spn, "tcp").Service
	if port.Service == nil || !port.Service.Exists || port.Service.Name != svcChain || len(port.Service.Selection) != 1 {
		t.Errorf("KUBE-SVC chain %s: %+v", svcChain, port.Service)
	}
	entry := false
	for _, e := range port.Entry {
		if strings.Contains(e.Raw, "-d "+clusterIP+"/128") && strings.Contains(e.Raw, "-j "+svcChain) {
			entry = true
		}
	}
	// nf_tables: established by the kernel's reference counts, without
	// reading KUBE-SERVICES.
	for _, e := range port.EntryReferences {
		if b.EntryProof == collectorapi.IPTablesEntryProofReferences && e.Kind == "clusterIP" && e.Target == svcChain && e.Count == 1 {
			entry = true
		}
	}
	if !entry {
		t.Errorf("no ClusterIP entry rule for %s in KUBE-SERVICES: %+v %+v (proof %q, fallback %q)", clusterIP, port.Entry, port.EntryReferences, b.EntryProof, b.EntryProofFallback)
	}
	wantEP := fmt.Sprintf("[%s]:%d", podIP, s.BackendPort)
	if len(port.Endpoints) != 1 {
		t.Fatalf("endpoints: %+v", port.Endpoints)
	}
	e := port.Endpoints[0]
	if !e.Exists || e.Endpoint != wantEP || e.DNAT != wantEP || e.Name != kubeproxy.IPTablesEndpointChain(spn, "tcp", wantEP) {
		t.Errorf("endpoint chain: want %s DNAT to %s, got %+v", kubeproxy.IPTablesEndpointChain(spn, "tcp", wantEP), wantEP, e)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// startKubeProxy serves cluster from a fake API (this test binary, see
// fakeapi_test.go) and starts the real kube-proxy in mode, both inside the
// Scenario's Node namespace. Both are killed at cleanup; the returned command
// may be killed earlier. The second result is kube-proxy's log file.
func startKubeProxy(t *testing.T, s *netns.Scenario, self, kp, mode string, cluster fakeapi.Cluster, nodeIP, clusterCIDR string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	s.Node.Start(t, []string{fakeAPISpec(cluster)}, self)
	netns.WaitListen(t, s.Node, fakeAPIAddr)
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	writeFile(t, kubeconfig, fakeapi.Kubeconfig(fakeAPIAddr))
	config := filepath.Join(dir, "kube-proxy.yaml")
	writeFile(t, config, fakeapi.KubeProxyConfig(mode, cluster.NodeName, nodeIP, clusterCIDR, kubeconfig))
	log := filepath.Join(dir, "kube-proxy.log")
	logFile, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logFile.Close() })
	cmd := exec.Command("nsenter", "--net="+s.Node.Path(), "--", kp, "--config="+config, "-v=1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, log
}

// legacyEnv makes kube-proxy's iptables commands the legacy backend: a PATH
// whose iptables*, ip6tables* are links to xtables-legacy-multi, and a lock
// file of the test's own.
func legacyEnv(t *testing.T) []string {
	t.Helper()
	multi, err := exec.LookPath("xtables-legacy-multi")
	if err != nil {
		t.Skipf("no legacy iptables: %v", err)
	}
	dir := t.TempDir()
	for _, fam := range []string{"iptables", "ip6tables"} {
		for _, suffix := range []string{"", "-save", "-restore"} {
			if err := os.Symlink(multi, filepath.Join(dir, fam+suffix)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "XTABLES_LOCKFILE=" + filepath.Join(dir, "xtables.lock")}
}

// waitProgrammed waits until kube-proxy has written the ClusterIP's rules
// (family "IPv4" or "IPv6") and answers /proxyMode.
func waitProgrammed(t *testing.T, node *netns.NS, mode, family, clusterIP, log string) {
	t.Helper()
	legacy := strings.HasSuffix(family, "-legacy")
	family = strings.TrimSuffix(family, "-legacy")
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var out string
		switch {
		case mode == "nftables":
			out, _ = node.Run("nft", "list", "map", map[string]string{"IPv4": "ip", "IPv6": "ip6"}[family], "kube-proxy", "service-ips")
		case family == "IPv6" && legacy:
			// Listing names an existing table only: kube-proxy created it.
			if names, _ := node.Run("cat", "/proc/net/ip6_tables_names"); strings.Contains(names, "nat") {
				out, _ = node.Run("ip6tables-legacy-save", "-t", "nat")
			}
		case family == "IPv6":
			out, _ = node.Run("ip6tables-nft", "-t", "nat", "-S", "KUBE-SERVICES")
		default:
			out, _ = node.Run("iptables-nft", "-t", "nat", "-S", "KUBE-SERVICES")
		}
		if strings.Contains(out, clusterIP) {
			if o, _ := node.Run("curl", "-s", "-m", "1", "127.0.0.1:10249/proxyMode"); o == mode {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	b, _ := os.ReadFile(log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	t.Fatalf("kube-proxy (%s) did not program %s within 90 s; log tail:\n%s", mode, clusterIP, b)
}

// connected reports whether the collector's probe of addr connected.
func connected(obs *collectorapi.Observation, addr string) bool {
	for _, pr := range obs.Sections.Probe.Data.Probes {
		if pr.Address == addr && pr.Outcome == "connected" {
			return true
		}
	}
	return false
}
