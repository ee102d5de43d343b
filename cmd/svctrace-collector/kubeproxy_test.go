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

	"github.com/svctrace/kubectl-svctrace/collectors"
	"github.com/svctrace/kubectl-svctrace/collectors/testnetns"
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
			s := testnetns.NewPlainScenario(t)
			s.Node.Start(t, []string{fmt.Sprintf("%s=127.0.0.1:18080,svct-node,%s,%s,%s", helperAPIEnv, s.NodeIP, s.ClusterIP, s.PodIP)}, self)
			dir := t.TempDir()
			kubeconfig := filepath.Join(dir, "kubeconfig")
			writeFile(t, kubeconfig, `apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "http://127.0.0.1:18080"}}]
users: [{name: fake, user: {}}]
contexts: [{name: fake, context: {cluster: fake, user: fake}}]
current-context: fake
`)
			config := filepath.Join(dir, "kube-proxy.yaml")
			// conntrack all zero: kube-proxy must not touch the host's
			// global conntrack sysctls from the test namespace.
			writeFile(t, config, fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: %s
hostnameOverride: svct-node
clusterCIDR: 10.244.0.0/16
bindAddress: %s
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
iptables: {localhostNodePorts: false}
clientConnection: {kubeconfig: %q}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
`, mode, s.NodeIP, kubeconfig))
			logFile, err := os.Create(filepath.Join(dir, "kube-proxy.log"))
			if err != nil {
				t.Fatal(err)
			}
			defer logFile.Close()
			cmd := exec.Command("nsenter", "--net="+s.Node.Path(), "--", kp, "--config="+config, "-v=1")
			cmd.Stdout, cmd.Stderr = logFile, logFile
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

			waitProgrammed(t, s, mode, filepath.Join(dir, "kube-proxy.log"))
			cluster := fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort)
			s.Connect(t, cluster)

			req := collectors.Request{APIVersion: collectors.RequestAPIVersion, Kind: collectors.RequestKind, NodeName: "svct-node",
				Service: collectors.ServiceSpec{Namespace: "default", Name: "web", Type: "ClusterIP", ClusterIPs: []string{s.ClusterIP},
					Ports: []collectors.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort), TargetPort: "8080"}}},
				Endpoints: []collectors.Endpoint{{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.BackendPort)},
					Ready: true, Serving: true, NodeName: "svct-node"}},
				PodIPs:   []string{s.PodIP},
				Sections: []string{"proxy", "iptables", "nftables", "conntrack", "route", "probe"}, ConntrackSampleMillis: 200}
			if dump := os.Getenv("SVCTRACE_DUMP_DIR"); dump != "" {
				t.Setenv("SVCTRACE_DUMP_OBSERVATION", filepath.Join(dump, "real-kube-proxy-"+mode+"-netns.json"))
			}
			obs := runIn(t, s.Node, bin, req)

			p := obs.Sections.Proxy.Data
			if p.Mode != mode {
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
			var probed bool
			for _, pr := range obs.Sections.Probe.Data.Probes {
				if pr.Address == cluster && pr.Outcome == "connected" {
					probed = true
				}
			}
			if !probed {
				t.Errorf("ClusterIP probe through kube-proxy's rules: %+v", obs.Sections.Probe.Data.Probes)
			}
			ct := obs.Sections.Conntrack.Data
			if ct.Flows == nil || len(ct.Flows.Frontends) != 1 || ct.Flows.Frontends[0].Backends[0].Backend != fmt.Sprintf("%s:%d", s.PodIP, s.BackendPort) {
				t.Errorf("conntrack flows through kube-proxy's DNAT: %+v", ct.Flows)
			}
			section := map[string]*collectors.Section[json.RawMessage]{"nftables": obs.Sections.NFTables, "iptables": obs.Sections.IPTables}[mode]
			if section.Status != collectors.StatusOK || section.Data == nil || !strings.Contains(string(*section.Data), s.PodIP) {
				t.Errorf("%s section does not show the endpoint %s: %s %s", mode, s.PodIP, section.Status, section.Error)
			}

			// Stop kube-proxy: /proxyMode is gone, the rules (and so the
			// fingerprint and the programmed endpoint) stay behind.
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			obs = runIn(t, s.Node, bin, req)
			p = obs.Sections.Proxy.Data
			if p.Mode != "" || p.ProxyMode.ErrorClass != collectors.ErrClassRefused || p.Healthz.Fetch.ErrorClass != collectors.ErrClassRefused {
				t.Errorf("stopped kube-proxy: mode %q, proxyMode %+v, healthz %+v", p.Mode, p.ProxyMode, p.Healthz.Fetch)
			}
			found = false
			for _, fp := range p.Fingerprints {
				if fp.Check == fingerprint && fp.Found {
					found = true
				}
			}
			section = map[string]*collectors.Section[json.RawMessage]{"nftables": obs.Sections.NFTables, "iptables": obs.Sections.IPTables}[mode]
			if !found || section.Data == nil || !strings.Contains(string(*section.Data), s.PodIP) {
				t.Errorf("stopped kube-proxy: fingerprint found=%v, %s rules still listed=%v", found, mode, section.Data != nil && strings.Contains(string(*section.Data), s.PodIP))
			}
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitProgrammed waits until kube-proxy has written the ClusterIP's rules.
func waitProgrammed(t *testing.T, s *testnetns.Scenario, mode, log string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var out string
		if mode == "nftables" {
			out, _ = s.Node.Run("nft", "list", "map", "ip", "kube-proxy", "service-ips")
		} else {
			out, _ = s.Node.Run("iptables-nft", "-t", "nat", "-S", "KUBE-SERVICES")
		}
		if strings.Contains(out, s.ClusterIP) {
			if o, _ := s.Node.Run("curl", "-s", "-m", "1", "127.0.0.1:10249/proxyMode"); o == mode {
				return
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	b, _ := os.ReadFile(log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	t.Fatalf("kube-proxy (%s) did not program %s within 90 s; log tail:\n%s", mode, s.ClusterIP, b)
}
