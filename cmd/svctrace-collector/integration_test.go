package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakedns"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// helperDNSEnv makes the test binary serve DNS instead of running tests; the
// integration test starts it inside the Pod namespace.
const helperDNSEnv = "SVCTRACE_TEST_DNS_SERVE"

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperDNSEnv); addr != "" {
		serveDNS(addr)
		return
	}
	if spec := os.Getenv(helperAPIEnv); spec != "" {
		serveFakeAPI(spec)
		return
	}
	os.Exit(m.Run())
}

// serveDNS answers like CoreDNS's kubernetes plugin for default/web.
func serveDNS(addr string) {
	fmt.Fprintln(os.Stderr, "dns helper:", fakedns.ListenAndServe(addr))
	os.Exit(1)
}

func buildCollector(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "svctrace-collector")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

// TestCollectorInNetns runs the real binary inside a test node namespace
// (the whole process there, as in a hostNetwork Pod) against a fake Service:
// a DNAT rule standing in for kube-proxy, a live backend, a stale backend with
// a conntrack flow pinned to it, a closed and a dropped endpoint port, a DNS
// server in the Pod namespace, and no kube-proxy listening.
func TestCollectorInNetns(t *testing.T) {
	s := netns.NewScenario(t)
	bin := buildCollector(t)

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s.Pod.Start(t, []string{helperDNSEnv + "=" + s.PodIP + ":53"}, self)
	waitDNS(t, s)

	cluster := fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort)
	s.SetBackend(t, s.StalePort)
	s.Connect(t, cluster)
	s.SetBackend(t, s.BackendPort)
	s.Connect(t, cluster)

	req := collectorapi.Request{
		APIVersion: collectorapi.RequestAPIVersion, Kind: collectorapi.RequestKind, NodeName: "node-a",
		Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", Type: "ClusterIP", ClusterIPs: []string{s.ClusterIP},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort), TargetPort: "8080"}}},
		Endpoints: []collectorapi.Endpoint{
			{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.BackendPort)}, Ready: true, Serving: true},
		},
		PodIPs:                []string{s.PodIP},
		ClusterDNS:            []string{s.PodIP},
		ConntrackSampleMillis: 200,
		ProbeTimeoutMillis:    500,
	}
	// Extra endpoints only for the probes: a closed port and a dropped one.
	probeReq := req
	probeReq.Endpoints = append([]collectorapi.Endpoint{}, req.Endpoints...)
	probeReq.Endpoints = append(probeReq.Endpoints,
		collectorapi.Endpoint{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.ClosedPort)}},
		collectorapi.Endpoint{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.DroppedPort)}})

	obs := runIn(t, s.Node, bin, probeReq)

	if obs.Service != "default/web" || obs.NodeName != "node-a" {
		t.Errorf("envelope %+v", obs)
	}
	for name, st := range map[string]collectorapi.SectionStatus{
		"proxy": obs.Sections.Proxy.Status, "route": obs.Sections.Route.Status, "conntrack": obs.Sections.Conntrack.Status,
		"dns": obs.Sections.DNS.Status, "probe": obs.Sections.Probe.Status, "ebpf": obs.Sections.EBPF.Status,
		"iptables": obs.Sections.IPTables.Status, "nftables": obs.Sections.NFTables.Status,
	} {
		if st != collectorapi.StatusOK {
			t.Errorf("section %s: %s", name, st)
		}
	}
	if st := obs.Sections.IPVS.Status; st != collectorapi.StatusUnavailable && st != collectorapi.StatusOK {
		t.Errorf("ipvs status %s: %s", st, obs.Sections.IPVS.Error)
	}

	// proxy: nothing listens on 10249/10256 in this namespace.
	p := obs.Sections.Proxy.Data
	if p.Mode != "" || p.ProxyMode.ErrorClass != collectorapi.ErrClassRefused || len(p.Fingerprints) == 0 {
		t.Errorf("proxy %+v", p)
	}

	// route
	rt := obs.Sections.Route.Data
	if len(rt.Routes) != 1 || rt.Routes[0].Device != "veth-pod" || rt.Routes[0].Link == nil || rt.Routes[0].Link.Kind != "veth" {
		t.Errorf("route %+v", rt.Routes)
	}

	// conntrack: both flows, one pinned to the stale backend.
	ct := obs.Sections.Conntrack.Data
	if ct.Flows == nil || len(ct.Flows.Frontends) != 1 || ct.Flows.Frontends[0].Total < 2 {
		t.Fatalf("conntrack flows %+v (%s)", ct.Flows, ct.FlowsError)
	}
	stale := fmt.Sprintf("%s:%d", s.PodIP, s.StalePort)
	foundStale := false
	for _, b := range ct.Flows.Frontends[0].Backends {
		if b.Backend == stale && !b.Expected {
			foundStale = true
		}
	}
	if !foundStale || ct.Flows.UnexpectedTotal < 1 {
		t.Errorf("stale backend not reported: %+v", ct.Flows)
	}

	// dns over both transports
	answered := map[string]bool{}
	for _, q := range obs.Sections.DNS.Data.Queries {
		if q.Rcode == "NOERROR" && len(q.Answers) > 0 {
			answered[q.Transport+" "+q.Type] = true
		}
	}
	for _, w := range []string{"udp A", "tcp A", "udp SRV", "tcp SRV"} {
		if !answered[w] {
			t.Errorf("dns %s not answered: %+v", w, obs.Sections.DNS.Data.Queries)
		}
	}

	// probes: ClusterIP connects via DNAT, backend connects, closed is refused, dropped times out.
	got := map[string]collectorapi.Probe{}
	for _, pr := range obs.Sections.Probe.Data.Probes {
		got[pr.Address] = pr
	}
	check := func(addr, outcome, class string) {
		t.Helper()
		pr, ok := got[addr]
		if !ok || pr.Outcome != outcome || pr.ErrorClass != class {
			t.Errorf("probe %s: %+v, want %s/%s", addr, pr, outcome, class)
		}
	}
	check(cluster, "connected", "")
	check(fmt.Sprintf("%s:%d", s.PodIP, s.BackendPort), "connected", "")
	check(fmt.Sprintf("%s:%d", s.PodIP, s.ClosedPort), "failed", collectorapi.ErrClassRefused)
	check(fmt.Sprintf("%s:%d", s.PodIP, s.DroppedPort), "failed", collectorapi.ErrClassTimeout)

	// self-measurement
	res := obs.Collector.Resources
	t.Logf("collector peak RSS self %d KiB, children %d KiB; run %.1f ms", res.PeakRSSSelfKiB, res.PeakRSSChildrenKiB, obs.DurationMillis)
	if res.PeakRSSSelfKiB <= 0 || res.PeakRSSSelfKiB > 64*1024 {
		t.Errorf("peak RSS %d KiB outside (0, 64 MiB]", res.PeakRSSSelfKiB)
	}
	if obs.Collector.Capabilities.EffectiveHex == "" {
		t.Error("capabilities not reported")
	}
}

func runIn(t *testing.T, ns *netns.NS, bin string, req collectorapi.Request) *collectorapi.Observation {
	t.Helper()
	raw, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", "--net="+ns.Path(), "--", bin, "--request", string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("collector: %v", err)
	}
	var obs collectorapi.Observation
	if err := json.Unmarshal(out, &obs); err != nil {
		t.Fatalf("decode observation: %v\n%s", err, out)
	}
	if os.Getenv("SVCTRACE_DUMP_OBSERVATION") != "" {
		_ = os.WriteFile(os.Getenv("SVCTRACE_DUMP_OBSERVATION"), out, 0o644)
	}
	return &obs
}

func waitDNS(t *testing.T, s *netns.Scenario) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if out, _ := s.Pod.Run("ss", "-Hltn", "sport", "= :53"); len(out) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("DNS helper did not start")
}

// TestCollectorWithPodCapabilities runs the binary the way the collector Pod
// does: only CAP_NET_ADMIN and CAP_NET_RAW (setpriv drops the rest), and
// checks that it says so and that the netlink-based sections still work.
func TestCollectorWithPodCapabilities(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	s := netns.NewScenario(t)
	bin := buildCollector(t)
	s.Connect(t, fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort))
	req := collectorapi.Request{
		APIVersion: collectorapi.RequestAPIVersion, Kind: collectorapi.RequestKind,
		Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{s.ClusterIP},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort)}}},
		Endpoints:             []collectorapi.Endpoint{{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.BackendPort)}, Ready: true}},
		PodIPs:                []string{s.PodIP},
		Sections:              []string{"proxy", "conntrack", "route", "probe", "ebpf"},
		ConntrackSampleMillis: 100,
	}
	raw, _ := json.Marshal(req)
	caps := "-all,+net_admin,+net_raw"
	cmd := exec.Command("nsenter", "--net="+s.Node.Path(), "--",
		"setpriv", "--inh-caps="+caps, "--ambient-caps="+caps, "--bounding-set="+caps, "--",
		bin, "--request", string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("collector: %v", err)
	}
	var obs collectorapi.Observation
	if err := json.Unmarshal(out, &obs); err != nil {
		t.Fatal(err)
	}
	if got := obs.Collector.Capabilities.Effective; len(got) != 2 || got[0] != "CAP_NET_ADMIN" || got[1] != "CAP_NET_RAW" {
		t.Fatalf("effective capabilities %v (%s)", got, obs.Collector.Capabilities.EffectiveHex)
	}
	ct := obs.Sections.Conntrack
	if ct.Status != collectorapi.StatusOK || ct.Data.Flows == nil || len(ct.Data.Flows.Frontends) != 1 || ct.Data.StatsError != "" {
		t.Errorf("conntrack with NET_ADMIN only: %+v %+v", ct, ct.Data)
	}
	if rt := obs.Sections.Route; rt.Status != collectorapi.StatusOK || rt.Data.Routes[0].Device != "veth-pod" {
		t.Errorf("route with NET_ADMIN only: %+v", rt)
	}
	if pr := obs.Sections.Probe; pr.Status != collectorapi.StatusOK || pr.Data.Probes[0].Outcome != "connected" {
		t.Errorf("probe with NET_ADMIN only: %+v", pr)
	}
	for _, fp := range obs.Sections.Proxy.Data.Fingerprints {
		t.Logf("fingerprint %-10s %-55s found=%v err=%q", fp.Mode, fp.Check, fp.Found, fp.Error)
	}
}

// BenchmarkCollectorPeakRSS runs the whole binary (conntrack section) in a
// node namespace whose table holds 50,000 other NATed entries and reports the
// process's own peak RSS for each flow-dump method, measured in the same run:
//
//	go test -run '^$' -bench CollectorPeakRSS -benchtime 1x ./cmd/svctrace-collector
func BenchmarkCollectorPeakRSS(b *testing.B) {
	s := netns.NewScenario(b)
	bin := buildCollector(b)
	s.Connect(b, fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort))
	s.Flood(b, 50000)
	req := collectorapi.Request{APIVersion: collectorapi.RequestAPIVersion, Kind: collectorapi.RequestKind,
		Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{s.ClusterIP},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort)}}},
		Sections: []string{"conntrack"}, ConntrackSampleMillis: 10}
	raw, _ := json.Marshal(req)
	for _, method := range []string{"tuple-filter", "status-filter"} {
		b.Run("method="+method, func(b *testing.B) {
			var rss int64
			var dumped int
			for i := 0; i < b.N; i++ {
				out, err := exec.Command("nsenter", "--net="+s.Node.Path(), "--", bin, "--conntrack-method", method, "--request", string(raw)).Output()
				if err != nil {
					b.Fatal(err)
				}
				var obs collectorapi.Observation
				if err := json.Unmarshal(out, &obs); err != nil {
					b.Fatal(err)
				}
				rss = obs.Collector.Resources.PeakRSSSelfKiB
				if f := obs.Sections.Conntrack.Data.Flows; f != nil {
					dumped = f.DumpedEntries
				}
			}
			b.ReportMetric(float64(rss)/1024, "peakRSS-MiB")
			b.ReportMetric(float64(dumped), "entries-dumped")
		})
	}
}
