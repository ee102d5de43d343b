package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/loopback"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// metricsRecorded is the shape of a v1.37 kube-proxy /metrics page in
// nftables mode (trimmed; names checked against the real kube-proxy in
// TestCollectorAgainstRealKubeProxy, values from a test run).
const metricsRecorded = `# HELP kubeproxy_sync_proxy_rules_last_timestamp_seconds [ALPHA] The last time proxy rules were successfully synced
# TYPE kubeproxy_sync_proxy_rules_last_timestamp_seconds gauge
kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} 1.7644224e+09
kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds{ip_family="IPv4"} 1.7644225e+09
# TYPE kubeproxy_sync_full_proxy_rules_duration_seconds histogram
kubeproxy_sync_full_proxy_rules_duration_seconds_bucket{ip_family="IPv4",le="0.001"} 0
kubeproxy_sync_full_proxy_rules_duration_seconds_bucket{ip_family="IPv4",le="+Inf"} 3
kubeproxy_sync_full_proxy_rules_duration_seconds_sum{ip_family="IPv4"} 0.0412
kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family="IPv4"} 3
kubeproxy_sync_proxy_rules_nftables_sync_failures_total{ip_family="IPv4"} 2
kubeproxy_sync_proxy_rules_no_local_endpoints_total{ip_family="IPv4",traffic_policy="external"} 1
kubeproxy_proxy_healthz_total{code="200"} 12
kubeproxy_proxy_healthz_total{code="503",note="a \"quoted\" value"} 1
go_goroutines 42
rest_client_requests_total{code="200",host="10.0.0.1:6443",method="GET"} 100
`

func TestParseMetrics(t *testing.T) {
	got, err := ParseMetrics(strings.NewReader(metricsRecorded), picked)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]collectorapi.MetricSample{}
	for _, s := range got {
		byKey[s.Name+"|"+s.Labels["code"]+s.Labels["ip_family"]] = s
	}
	if len(got) != 8 {
		t.Fatalf("want 8 picked samples (no buckets, no go_ or rest_ metrics), got %d: %+v", len(got), got)
	}
	if s := byKey["kubeproxy_sync_proxy_rules_last_timestamp_seconds|IPv4"]; s.Value != 1.7644224e+09 {
		t.Errorf("last sync %+v", s)
	}
	if s := byKey["kubeproxy_sync_full_proxy_rules_duration_seconds_count|IPv4"]; s.Value != 3 {
		t.Errorf("full sync count %+v", s)
	}
	if s := byKey["kubeproxy_sync_proxy_rules_nftables_sync_failures_total|IPv4"]; s.Value != 2 {
		t.Errorf("nft failures %+v", s)
	}
	if s := byKey["kubeproxy_proxy_healthz_total|503"]; s.Labels["note"] != `a "quoted" value` {
		t.Errorf("escaped label %+v", s)
	}
	if _, err := ParseMetrics(strings.NewReader(`kubeproxy_proxy_healthz_total{code="200" 1`), picked); err == nil {
		t.Error("broken labels accepted")
	}
}

// healthz503 has the shape of a real v1.37.2 kube-proxy answer (captured in
// TestCollectorAgainstRealKubeProxy), with the IPv4 family turned unhealthy.
const healthz503 = `{"lastUpdated":"2026-11-29T13:11:27.67814801Z","currentTime":"2026-11-29T13:13:27.678116984Z","nodeEligible":true,"healthy":false,"status":{"IPv4":{"lastUpdated":"2026-11-29T13:11:27.617694995Z","healthy":false},"IPv6":{"lastUpdated":"2026-11-29T13:13:27.654698219Z","healthy":true}}}`

func fakeKubeProxy(t *testing.T, mode string) (metrics, healthz string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/proxyMode", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(mode)) })
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(metricsRecorded)) })
	m := httptest.NewServer(mux)
	t.Cleanup(m.Close)
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(healthz503))
	}))
	t.Cleanup(h.Close)
	return strings.TrimPrefix(m.URL, "http://"), strings.TrimPrefix(h.URL, "http://")
}

func noFingerprints(context.Context) []collectorapi.Fingerprint { return nil }

func TestReadFakeKubeProxy(t *testing.T) {
	metrics, healthz := fakeKubeProxy(t, "nftables")
	obs, err := Read(context.Background(), Options{MetricsAddress: metrics, HealthzAddress: healthz, Fingerprints: noFingerprints})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Mode != collectorapi.ModeNFTables || obs.ProxyMode.StatusCode != 200 {
		t.Errorf("mode %q fetch %+v", obs.Mode, obs.ProxyMode)
	}
	h := obs.Healthz
	if h.Fetch.StatusCode != 503 || h.Healthy == nil || *h.Healthy || h.NodeEligible == nil || !*h.NodeEligible || h.Families["IPv4"].Healthy {
		t.Errorf("healthz %+v", h)
	}
	if obs.Metrics.Fetch.Error != "" || len(obs.Metrics.Samples) != 8 {
		t.Errorf("metrics %+v", obs.Metrics)
	}
}

func TestReadUnreachable(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(loopback.FreePort(t, "tcp"))
	obs, err := Read(context.Background(), Options{MetricsAddress: addr, HealthzAddress: addr, HTTPTimeout: 500 * time.Millisecond, Fingerprints: noFingerprints})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Mode != "" || obs.ProxyMode.ErrorClass != collectorapi.ErrClassRefused || obs.Healthz.Fetch.ErrorClass != collectorapi.ErrClassRefused {
		t.Errorf("%+v %+v", obs.ProxyMode, obs.Healthz.Fetch)
	}
}

func TestBPFFingerprints(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tc", "globals")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cilium_lb4_services_v2", "cilium_lb4_backends_v3", "cali_v4_nat_fe3"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found := map[string]string{}
	for _, fp := range BPFFingerprints(root) {
		if fp.Found {
			found[fp.Check] = fp.Evidence
		}
	}
	if len(found) != 2 || found["pinned maps "+dir+"/cilium_lb4_*"] != "cilium_lb4_backends_v3 cilium_lb4_services_v2" || found["pinned maps "+dir+"/cali_v4_nat_fe*"] != "cali_v4_nat_fe3" {
		t.Errorf("%v", found)
	}
}

// TestNodeFingerprintsInNetns plants every netfilter/link fingerprint in a
// test namespace: nftables "table ip kube-proxy", an iptables-nft canary, a
// legacy canary, a kube-ipvs0 dummy link. All are reported, none judged.
func TestNodeFingerprintsInNetns(t *testing.T) {
	ns := netns.New(t, "fp")
	ns.MustRun(t, "nft", "add", "table", "ip", "kube-proxy")
	// kube-proxy makes kube-ipvs0 a dummy link; this kernel may lack the dummy
	// driver, and the check only looks at the name, so a veth stands in.
	if _, err := ns.Run("ip", "link", "add", "kube-ipvs0", "type", "dummy"); err != nil {
		ns.MustRun(t, "ip", "link", "add", "kube-ipvs0", "type", "veth", "peer", "name", "kipvs-peer")
	}
	nftCanary := false
	if _, err := ns.Run("iptables-nft", "-t", "nat", "-N", "KUBE-PROXY-CANARY"); err == nil {
		nftCanary = true
	}
	legacyCanary := false
	if _, err := ns.Run("iptables-legacy", "-t", "mangle", "-N", "KUBE-PROXY-CANARY"); err == nil {
		legacyCanary = true
	}
	t.Logf("planted: iptables-nft canary %v, iptables-legacy canary %v", nftCanary, legacyCanary)
	var fps []collectorapi.Fingerprint
	netns.Do(t, ns, func() { fps = NodeFingerprints(context.Background(), t.TempDir()) })
	found := map[string]bool{}
	for _, fp := range fps {
		if fp.Error != "" {
			t.Errorf("%s: %s", fp.Check, fp.Error)
		}
		if fp.Found {
			found[fp.Check] = true
		}
	}
	want := []string{"table ip kube-proxy", "link kube-ipvs0"}
	if nftCanary {
		want = append(want, "chain nat KUBE-PROXY-CANARY (iptables-nft, ip)")
	}
	if legacyCanary {
		want = append(want, "legacy ip tables present", "chain mangle KUBE-PROXY-CANARY (iptables-legacy, ip)")
	}
	for _, w := range want {
		if !found[w] {
			t.Errorf("fingerprint %q not found; got %v", w, found)
		}
	}
	if found["table ip6 kube-proxy"] || found["chain filter KUBE-PROXY-CANARY (iptables-nft, ip)"] {
		t.Errorf("found fingerprints that were not planted: %v", found)
	}
}

// TestMetricsAskedAgainAfterTimeout: kube-proxy answers /metrics only after
// the first try gave up (kube-proxy in user-mode Linux took 1.4 s under
// load); the second, longer try gets the sync metrics.
func TestMetricsAskedAgainAfterTimeout(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			return
		}
		if calls.Add(1) == 1 {
			time.Sleep(300 * time.Millisecond)
		}
		fmt.Fprintln(w, "kubeproxy_sync_proxy_rules_last_timestamp_seconds 1.7e+09")
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	obs, err := Read(context.Background(), Options{MetricsAddress: addr, HealthzAddress: addr, HTTPTimeout: 200 * time.Millisecond, Fingerprints: noFingerprints})
	if err != nil {
		t.Fatal(err)
	}
	if m := obs.Metrics; m.Fetch.Error != "" || m.Fetch.Attempts != 2 || m.Fetch.FirstError == "" || len(m.Samples) == 0 {
		t.Errorf("metrics %+v: want the samples on the second attempt", m)
	}
}

// TestMetricsThirdAttempt: kube-proxy in user-mode Linux, mid-sync on a
// starved guest, let the first two tries (1 s, 2 s) time out; the third,
// with four times the first timeout, gets the sync metrics. A kube-proxy
// that never answers costs three tries, no more.
func TestMetricsThirdAttempt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		slow      int32 // calls that answer after a second
		wantTries int
		wantOK    bool
	}{
		{"answers on the third try", 2, 3, true},
		{"never answers in time", 99, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/metrics" {
					return
				}
				if calls.Add(1) <= tc.slow {
					time.Sleep(time.Second)
				}
				fmt.Fprintln(w, "kubeproxy_sync_proxy_rules_last_timestamp_seconds 1.7e+09")
			}))
			defer srv.Close()
			addr := strings.TrimPrefix(srv.URL, "http://")
			obs, err := Read(context.Background(), Options{MetricsAddress: addr, HealthzAddress: addr, HTTPTimeout: 200 * time.Millisecond, Fingerprints: noFingerprints})
			if err != nil {
				t.Fatal(err)
			}
			m := obs.Metrics
			if got := int(calls.Load()); got != tc.wantTries || m.Fetch.Attempts != tc.wantTries || m.Fetch.FirstError == "" {
				t.Errorf("%d calls, fetch %+v: want %d tries", got, m.Fetch, tc.wantTries)
			}
			if ok := m.Fetch.Error == "" && len(m.Samples) > 0; ok != tc.wantOK {
				t.Errorf("samples read %v (fetch %+v), want %v", ok, m.Fetch, tc.wantOK)
			}
		})
	}
}

// TestProxyModeAskedAgainAfterTimeout: kube-proxy answers /proxyMode only
// after the first try gave up (a busy node); the second, longer try gets
// the mode, and the fetch says it took two.
func TestProxyModeAskedAgainAfterTimeout(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/proxyMode" && calls.Add(1) == 1 {
			time.Sleep(300 * time.Millisecond)
		}
		if r.URL.Path == "/proxyMode" {
			fmt.Fprint(w, "iptables")
		}
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	obs, err := Read(context.Background(), Options{MetricsAddress: addr, HealthzAddress: addr, HTTPTimeout: 200 * time.Millisecond, Fingerprints: noFingerprints})
	if err != nil {
		t.Fatal(err)
	}
	if obs.Mode != collectorapi.ModeIPTables || obs.ProxyMode.Attempts != 2 || obs.ProxyMode.FirstError == "" {
		t.Errorf("mode %q, fetch %+v: want iptables on the second attempt", obs.Mode, obs.ProxyMode)
	}
}

// TestNodeNetfilterTablesInNetns: every nf_tables table is listed, an
// enforcer's own (kube-network-policies keeps "inet kube-network-policies")
// as much as kube-proxy's, and an empty ruleset reads as listed, not nil.
func TestNodeNetfilterTablesInNetns(t *testing.T) {
	ns := netns.New(t, "nft")
	var empty []string
	var err error
	netns.Do(t, ns, func() { empty, err = NodeNetfilterTables() })
	if err != nil || empty == nil || len(empty) != 0 {
		t.Fatalf("empty ruleset: %v, %v; want an empty, non-nil list", empty, err)
	}
	ns.MustRun(t, "nft", "add", "table", "ip", "kube-proxy")
	ns.MustRun(t, "nft", "add", "table", "inet", "kube-network-policies")
	var got []string
	netns.Do(t, ns, func() { got, err = NodeNetfilterTables() })
	if err != nil || !slices.Equal(got, []string{"inet kube-network-policies", "ip kube-proxy"}) {
		t.Fatalf("tables %v, %v", got, err)
	}
}
