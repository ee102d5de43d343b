package trace

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// nodeInput is web (10.96.0.20:80 → 8080) with endpoints on n1 and n2.
func nodeInput(mut ...func(*corev1.Service)) *input.Input {
	svc := service("web", mut...)
	sl := slice("web-abc", "web", "http", 8080,
		ep{ip: "10.244.1.5", pod: "web-1", node: "n1", ready: true},
		ep{ip: "10.244.2.7", pod: "web-2", node: "n2", ready: true})
	in := &input.Input{Namespace: "default", Name: "web", Service: svc, Slices: []discoveryv1.EndpointSlice{*sl},
		Nodes: map[string]*corev1.Node{"n1": node("n1", true), "n2": node("n2", true)},
	}
	in.Pods = []corev1.Pod{*pod("web-1", "web", "10.244.1.5", "n1"), *pod("web-2", "web", "10.244.2.7", "n2")}
	dns := clusterDNS()
	in.DNSService = dns[0].(*corev1.Service)
	in.DNSSlices = []discoveryv1.EndpointSlice{*dns[1].(*discoveryv1.EndpointSlice)}
	return in
}

// okSection is a section whose reader ran and saw data.
func okSection[T any](data *T) *collectorapi.Section[T] {
	return &collectorapi.Section[T]{Status: collectorapi.StatusOK, Data: data}
}

// iptRules is the nf_tables backend of a kube-proxy in iptables mode with
// the given endpoint → share selection for web:http.
func iptRules(backend string, affinity int, sel ...collectorapi.IPTablesEndpointJump) collectorapi.IPTablesBackendObservation {
	svcChain := &collectorapi.IPTablesChain{Name: "KUBE-SVC-X", Exists: true, Selection: sel}
	if affinity > 0 {
		svcChain.Affinity = []collectorapi.IPTablesAffinityRule{{Name: "KUBE-SEP-A", Seconds: affinity}}
	}
	var eps []collectorapi.IPTablesEndpointChain
	for _, s := range sel {
		eps = append(eps, collectorapi.IPTablesEndpointChain{IPTablesChain: collectorapi.IPTablesChain{Name: s.Target, Exists: true}, DNAT: s.Endpoint})
	}
	return collectorapi.IPTablesBackendObservation{Backend: backend, Family: "IPv4", KubeProxyChains: true,
		MarkMasq: []collectorapi.IPTablesRule{markMasqRule}, MasqMark: markMasqRule.Mark,
		Ports: []collectorapi.IPTablesPortObservation{{ServicePortName: "default/web:http", Protocol: "tcp", Port: 80,
			Entry:     []collectorapi.IPTablesEntryRule{{Kind: "clusterIP", IPTablesRule: collectorapi.IPTablesRule{Raw: "-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp --dport 80 -j KUBE-SVC-X", Jump: "KUBE-SVC-X"}}},
			Service:   svcChain,
			Endpoints: eps}}}
}

// markMasqRule is KUBE-MARK-MASQ as the real kube-proxy v1.37.2 wrote it
// (collectors/testdata/observations/real-kube-proxy-iptables-netns.json).
var markMasqRule = collectorapi.IPTablesRule{Raw: "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000", Chain: "KUBE-MARK-MASQ", Jump: "MARK", Mark: "0x4000/0x4000"}

func jump(target, endpoint string, share float64) collectorapi.IPTablesEndpointJump {
	return collectorapi.IPTablesEndpointJump{Target: target, Endpoint: endpoint, Share: share}
}

func observation(t *testing.T, mode collectorapi.DatapathMode, ipt *collectorapi.IPTablesObservation, nft *collectorapi.NFTablesObservation) *collectorapi.Observation {
	o := &collectorapi.Observation{APIVersion: collectorapi.ObservationAPIVersion, Kind: collectorapi.ObservationKind, CollectedAt: time.Unix(1000, 0)}
	o.Sections.Proxy = &collectorapi.Section[collectorapi.ProxyObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.ProxyObservation{Mode: mode}}
	if ipt != nil {
		o.Sections.IPTables = okSection(ipt)
	}
	if nft != nil {
		o.Sections.NFTables = okSection(nft)
	}
	o.Sections.Route = &collectorapi.Section[collectorapi.RouteObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.RouteObservation{
		IPv4Forward: "1", RPFilterAll: "0", Routes: []collectorapi.RouteLookup{
			{Destination: "10.244.1.5", Device: "veth1", Type: "unicast", Link: &collectorapi.LinkInfo{Name: "veth1", AdminUp: true, OperState: "up"}},
			{Destination: "10.244.2.7", Device: "eth0", Gateway: "10.0.0.12", Type: "unicast", Link: &collectorapi.LinkInfo{Name: "eth0", AdminUp: true, OperState: "up"}}}}}
	o.Sections.Conntrack = &collectorapi.Section[collectorapi.ConntrackObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.ConntrackObservation{
		Count: 10, Max: 1000, SampleIntervalMillis: 200, StatsDelta: &collectorapi.ConntrackCounters{}}}
	return o
}

func judgeViews(t *testing.T, in *input.Input, views ...plan.NodeView) *report.ServiceTrace {
	t.Helper()
	tr := Assemble(in, &plan.NodeReport{Nodes: views}, Options{Now: fixedNow})
	assertCatalogued(t, tr)
	return tr
}

func nodeCodes(tr *report.ServiceTrace, layer report.LayerName, node string) map[string]report.Check {
	out := map[string]report.Check{}
	for _, c := range tr.Layer(layer).Checks {
		if node == "" || c.Node == node {
			out[c.Code] = c
		}
	}
	return out
}

func healthyIPT() *collectorapi.IPTablesObservation {
	return &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))}}
}

func TestJudgeNodesHealthyIPTables(t *testing.T) {
	in := nodeInput()
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)})
	dp := nodeCodes(tr, report.LayerDatapath, "n1")
	if _, ok := dp[report.CodeDPRulesMatch]; !ok {
		t.Fatalf("datapath checks = %v, want %s", keysOf(dp), report.CodeDPRulesMatch)
	}
	for _, l := range []report.LayerName{report.LayerDatapath, report.LayerConntrack, report.LayerRoute} {
		if s := tr.Layer(l).Status; s != report.StatusPass {
			t.Errorf("layer %s = %s (%s), want pass", l, s, tr.Layer(l).Reason)
		}
		if n := tr.Layer(l).Nodes; len(n) != 1 || n[0].Node != "n1" || n[0].Status != report.StatusPass {
			t.Errorf("layer %s node results = %+v", l, n)
		}
	}
}

func TestJudgeNodesDatapathFaults(t *testing.T) {
	tests := []struct {
		name  string
		svc   func(*corev1.Service)
		mode  collectorapi.DatapathMode
		ipt   *collectorapi.IPTablesObservation
		nft   *collectorapi.NFTablesObservation
		proxy func(*collectorapi.ProxyObservation)
		want  []string
	}{
		{name: "stale and missing endpoints", mode: collectorapi.ModeIPTables,
			ipt: &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
				jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-9", "10.244.9.9:8080", 0.5))}},
			want: []string{report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints}},
		{name: "wrong DNAT port", mode: collectorapi.ModeIPTables,
			ipt: &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
				jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:9090", 0.5))}},
			want: []string{report.CodeDPWrongDNATPort}},
		{name: "unequal shares", mode: collectorapi.ModeIPTables,
			ipt: &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
				jump("KUBE-SEP-1", "10.244.1.5:8080", 0.9), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.1))}},
			want: []string{report.CodeDPUnequalShares}},
		{name: "no rules and kube-proxy down", mode: "",
			ipt: &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{{Backend: collectorapi.IPTablesBackendNFTables, Family: "IPv4", KubeProxyChains: true}}},
			proxy: func(p *collectorapi.ProxyObservation) {
				p.ProxyMode.Error = "connection refused"
				p.ProxyMode.URL = "http://127.0.0.1:10249/proxyMode"
			},
			want: []string{report.CodeDPNoRules, report.CodeDPProxyUnreachable}},
		{name: "affinity configured, not programmed", mode: collectorapi.ModeIPTables, ipt: healthyIPT(),
			svc:  func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP },
			want: []string{report.CodeDPAffinityMissing}},
		{name: "affinity programmed, not configured", mode: collectorapi.ModeIPTables,
			ipt: &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 10800,
				jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))}},
			want: []string{report.CodeDPAffinityExtra}},
		{name: "leftover legacy rules", mode: collectorapi.ModeIPTables,
			ipt: &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{
				iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5)),
				iptRules(collectorapi.IPTablesBackendLegacy, 0, jump("KUBE-SEP-9", "10.244.9.9:8080", 1))}},
			want: []string{report.CodeDPLeftovers, report.CodeDPRulesMatch}},
		{name: "nftables healthy", mode: collectorapi.ModeNFTables, nft: nftObservation("10.244.1.5:8080", "10.244.2.7:8080"),
			want: []string{report.CodeDPRulesMatch}},
		{name: "nftables stale", mode: collectorapi.ModeNFTables, nft: nftObservation("10.244.1.5:8080", "10.244.3.3:8080"),
			want: []string{report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints}},
		{name: "nftables mode with iptables leftovers", mode: collectorapi.ModeNFTables, nft: nftObservation("10.244.1.5:8080", "10.244.2.7:8080"),
			ipt:  healthyIPT(),
			want: []string{report.CodeDPLeftovers, report.CodeDPRulesMatch}},
		{name: "service-proxy-name", mode: collectorapi.ModeIPTables, ipt: &collectorapi.IPTablesObservation{},
			svc:  func(s *corev1.Service) { s.Labels = map[string]string{"service.kubernetes.io/service-proxy-name": "x"} },
			want: []string{report.CodeDPIgnoredByProxy}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var muts []func(*corev1.Service)
			if tt.svc != nil {
				muts = append(muts, tt.svc)
			}
			in := nodeInput(muts...)
			obs := observation(t, tt.mode, tt.ipt, tt.nft)
			if tt.proxy != nil {
				tt.proxy(obs.Sections.Proxy.Data)
			}
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			got := nodeCodes(tr, report.LayerDatapath, "n1")
			for _, code := range tt.want {
				if _, ok := got[code]; !ok {
					t.Errorf("missing %s; got %v", code, keysOf(got))
				}
			}
			if _, ok := got[report.CodeDPRulesMatch]; ok && len(tt.want) > 0 && tt.want[len(tt.want)-1] != report.CodeDPRulesMatch {
				t.Errorf("rules reported matching despite %v", tt.want)
			}
		})
	}
}

func nftObservation(endpoints ...string) *collectorapi.NFTablesObservation {
	var entries []collectorapi.NFTablesNumgenEntry
	for i, e := range endpoints {
		entries = append(entries, collectorapi.NFTablesNumgenEntry{Index: uint32(i), Address: e, Share: 1 / float64(len(endpoints))})
	}
	return &collectorapi.NFTablesObservation{Source: collectorapi.NFTablesSourceNetlink, Tables: []collectorapi.NFTablesTableObservation{{Family: "ip", Name: "kube-proxy", Present: true,
		Ports: []collectorapi.NFTablesPortObservation{{ServicePortName: "default/web:http", Protocol: "tcp", Port: 80,
			ServiceIPs: []collectorapi.NFTablesElement{{Map: "service-ips", Key: "10.96.0.20 . tcp . 80", Found: true, Verdict: "goto service-X", Target: "service-X"}},
			Service:    &collectorapi.NFTablesChain{Name: "service-X", Exists: true, Rules: []collectorapi.NFTablesRule{{Text: "numgen random mod 2 vmap", Numgen: &collectorapi.NFTablesNumgenMap{Kind: "dnat", Modulus: uint32(len(endpoints)), Entries: entries}}}}}}}}}
}

func TestJudgeNodesRouteProbesConntrack(t *testing.T) {
	in := nodeInput()
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	obs.Sections.Route.Data.IPv4Forward = "0"
	obs.Sections.Probe = &collectorapi.Section[collectorapi.ProbeObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.ProbeObservation{Probes: []collectorapi.Probe{
		{Target: "clusterIP", PortName: "http", Address: "10.96.0.20:80", Protocol: "TCP", Outcome: "failed", ErrorClass: "timeout"},
		{Target: "endpoint", PortName: "http", Address: "10.244.1.5:8080", Protocol: "TCP", Outcome: "connected"},
		{Target: "endpoint", PortName: "http", Address: "10.244.2.7:8080", Protocol: "TCP", Outcome: "failed", ErrorClass: "refused"},
	}}}
	obs.Sections.Conntrack.Data.StatsDelta = &collectorapi.ConntrackCounters{InsertFailed: 3}
	obs.Sections.Conntrack.Data.Flows = &collectorapi.ServiceFlows{UnexpectedTotal: 2, Frontends: []collectorapi.FrontendFlows{{Frontend: "10.96.0.20:80/TCP", Total: 2,
		Backends: []collectorapi.BackendFlows{{Backend: "10.244.9.9:8080", Count: 2}, {Backend: "10.96.0.20:80", Count: 1}}}}}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	for layer, want := range map[report.LayerName][]string{
		report.LayerRoute:     {report.CodeRTForwardOff},
		report.LayerDatapath:  {report.CodeDPClusterIPFails},
		report.LayerEndpoints: {report.CodeEpsRefused},
		report.LayerConntrack: {report.CodeCTInsertFailed, report.CodeCTStaleFlows},
	} {
		got := nodeCodes(tr, layer, "n1")
		for _, code := range want {
			if _, ok := got[code]; !ok {
				t.Errorf("layer %s: missing %s; got %v", layer, code, keysOf(got))
			}
		}
	}
	if c := nodeCodes(tr, report.LayerConntrack, "n1")[report.CodeCTStaleFlows]; strings.Contains(c.Message, "10.96.0.20:80 (") || !strings.Contains(c.Message, "2 conntrack flow(s)") {
		t.Errorf("an un-NATed flow (reply from the ClusterIP itself) counted as pinned to a gone backend: %q", c.Message)
	}
	if c := nodeCodes(tr, report.LayerEndpoints, "n1")[report.CodeEpsRefused]; !strings.Contains(c.Message, "web-2") {
		t.Errorf("refusal does not name the Pod: %q", c.Message)
	}
	if tr.Verdict.FirstFailingLayer != report.LayerEndpoints {
		t.Errorf("first failing layer = %s, want endpoints (the app refuses)", tr.Verdict.FirstFailingLayer)
	}
}

func TestJudgeNodesCollectorFailureIsUnknown(t *testing.T) {
	in := nodeInput()
	tr := judgeViews(t, in, plan.NodeView{Node: "n2", Failure: "collector on node n2 could not pull its image: ErrImageNeverPull"})
	if c, ok := nodeCodes(tr, report.LayerDatapath, "n2")[report.CodeNodeCollectorFailed]; !ok || !strings.Contains(c.Message, "ErrImageNeverPull") {
		t.Fatalf("no specific collector failure: %+v", tr.Layer(report.LayerDatapath).Checks)
	}
	for _, l := range report.NodeLayers {
		n := tr.Layer(l).Nodes
		if len(n) != 1 || n[0].Status != report.StatusUnknown {
			t.Errorf("layer %s node results = %+v, want n2 unknown", l, n)
		}
	}
}

func keysOf(m map[string]report.Check) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// realKubeProxyInput is a recorded observation of the real kube-proxy
// v1.37.2 in mode, and the Service and slice that kube-proxy was fed.
func realKubeProxyInput(t *testing.T, mode string) (*input.Input, collectorapi.Observation) {
	t.Helper()
	b, err := os.ReadFile("../collectors/testdata/observations/real-kube-proxy-" + mode + "-netns.json")
	if err != nil {
		t.Fatal(err)
	}
	var obs collectorapi.Observation
	if err := json.Unmarshal(b, &obs); err != nil {
		t.Fatal(err)
	}
	in := nodeInput(func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.50", []string{"10.96.0.50"}
	})
	in.Slices = []discoveryv1.EndpointSlice{*slice("web-abc", "web", "http", 8080, ep{ip: "10.250.0.2", pod: "web-1", node: obs.NodeName, ready: true})}
	in.Pods = []corev1.Pod{*pod("web-1", "web", "10.250.0.2", obs.NodeName)}
	in.Nodes[obs.NodeName] = node(obs.NodeName, true)
	return in, obs
}

// TestJudgeRealKubeProxyObservations judges the observations the collector
// took of the real kube-proxy v1.37.2 (iptables and nftables modes, see
// cmd/svctrace-collector's kube-proxy test) against the Service and slice
// that kube-proxy was fed.
func TestJudgeRealKubeProxyObservations(t *testing.T) {
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) {
			in, obs := realKubeProxyInput(t, mode)
			tr := judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: &obs})
			requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, obs.NodeName)
			requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPOwner, obs.NodeName)
			if s := tr.Layer(report.LayerDatapath).Status; s != report.StatusPass {
				t.Errorf("datapath %s: %+v", s, tr.Layer(report.LayerDatapath).Checks)
			}

			// The same rules judged against a slice whose endpoint moved:
			// the programmed one is stale, the new one missing.
			in.Slices = []discoveryv1.EndpointSlice{*slice("web-abc", "web", "http", 8080, ep{ip: "10.250.0.3", pod: "web-1", node: obs.NodeName, ready: true})}
			tr = judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: &obs})
			requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPStaleEndpoints, obs.NodeName)
			requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPMissingEndpoints, obs.NodeName)
		})
	}
}

func requireNodeCheck(t *testing.T, tr *report.ServiceTrace, layer report.LayerName, code, node string) {
	t.Helper()
	if _, ok := nodeCodes(tr, layer, node)[code]; !ok {
		t.Errorf("layer %s node %s: no %s; got %v", layer, node, code, keysOf(nodeCodes(tr, layer, "")))
	}
}

func TestRefusedEndpointHintsAtDeclaredPorts(t *testing.T) {
	in := nodeInput()
	in.Slices = []discoveryv1.EndpointSlice{*slice("web-abc", "web", "http", 8081,
		ep{ip: "10.244.1.5", pod: "web-1", node: "n1", ready: true})}
	obs := observation(t, collectorapi.ModeIPTables, nil, nil)
	obs.Sections.Probe = &collectorapi.Section[collectorapi.ProbeObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.ProbeObservation{Probes: []collectorapi.Probe{
		{Target: "endpoint", Address: "10.244.1.5:8081", Protocol: "TCP", Outcome: "failed", ErrorClass: "refused"}}}}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	c, ok := nodeCodes(tr, report.LayerEndpoints, "n1")[report.CodeEpsRefused]
	if !ok || !strings.Contains(c.Message, "declare container port(s) http=8080/TCP, not 8081") {
		t.Fatalf("refusal without the declared-port hint: %+v", c)
	}
}

// TestJudgeProbesSampled: when the collector probed only some endpoints,
// the reachability finding says so.
func TestJudgeProbesSampled(t *testing.T) {
	for _, tt := range []struct {
		total, probed int
		want          string
	}{
		{2, 2, "2 endpoint(s) answered a direct connection"},
		{5000, 64, "2 endpoint(s) answered a direct connection (probed 64 of 5000 endpoints: this node's first, then ready ones)"},
	} {
		obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
		obs.Sections.Probe = &collectorapi.Section[collectorapi.ProbeObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.ProbeObservation{
			EndpointsTotal: tt.total, EndpointsProbed: tt.probed, Probes: []collectorapi.Probe{
				{Target: "endpoint", Address: "10.244.1.5:8080", Protocol: "TCP", Outcome: "connected"},
				{Target: "endpoint", Address: "10.244.2.7:8080", Protocol: "TCP", Outcome: "connected"},
			}}}
		tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: obs})
		c, ok := nodeCodes(tr, report.LayerRoute, "n1")[report.CodeRTPodsReached]
		if !ok || c.Message != tt.want {
			t.Errorf("%d/%d: %q, want %q", tt.probed, tt.total, c.Message, tt.want)
		}
	}
}

// TestJudgeProbesListAtMostTen: a large Service's probe failures are named
// up to maxListed in the message; the evidence lists more, then counts the rest.
func TestJudgeProbesListAtMostTen(t *testing.T) {
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	var probes []collectorapi.Probe
	for i := range 64 {
		probes = append(probes, collectorapi.Probe{Target: "endpoint", Address: fmt.Sprintf("10.252.0.%d:8080", i+1), Protocol: "TCP", Outcome: "failed", ErrorClass: "timeout"})
	}
	obs.Sections.Probe = &collectorapi.Section[collectorapi.ProbeObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.ProbeObservation{Probes: probes}}
	in := nodeInput()
	for i := range 64 {
		e := slice("x", "web", "http", 8080, ep{ip: fmt.Sprintf("10.252.0.%d", i+1), ready: true}).Endpoints[0]
		in.Slices[0].Endpoints = append(in.Slices[0].Endpoints, e)
	}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	c, ok := nodeCodes(tr, report.LayerRoute, "n1")[report.CodeRTPodTimeout]
	if !ok {
		t.Fatalf("no %s: %v", report.CodeRTPodTimeout, keysOf(nodeCodes(tr, report.LayerRoute, "n1")))
	}
	if strings.Count(c.Message, ":8080") != maxListed || !strings.Contains(c.Message, "and 54 more") {
		t.Errorf("message %q", c.Message)
	}
	if c.Evidence == nil || len(c.Evidence.Raw) <= maxListed || !strings.HasSuffix(c.Evidence.Raw[len(c.Evidence.Raw)-1], " more") {
		t.Errorf("evidence does not carry the probes (capped, with a count): %+v", c.Evidence)
	}
}

// TestTopologyHintsWithNodeUnread: kube-proxy filters by its own node's
// zone. When the Node object was not read, the zone comes from the node's
// own endpoints in the slices; failing that, the rules are judged against
// each zone kube-proxy could be in, never against an empty zone.
func TestTopologyHintsWithNodeUnread(t *testing.T) {
	hinted := func(in *input.Input, zoneOnEndpoints bool) {
		for i, z := range []string{"a", "b"} {
			e := &in.Slices[0].Endpoints[i]
			e.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: z}}}
			if zoneOnEndpoints {
				e.Zone = ptr(z)
			}
		}
	}
	zoneA := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-1", "10.244.1.5:8080", 1))}}
	wrong := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-9", "10.244.9.9:8080", 1))}}
	tests := []struct {
		name            string
		zoneOnEndpoints bool
		nodeZone        string // "" = node not read
		ipt             *collectorapi.IPTablesObservation
		want, absent    []string
	}{
		{name: "zone from the node's endpoints", zoneOnEndpoints: true, ipt: zoneA,
			want: []string{report.CodeDPRulesMatch}, absent: []string{report.CodeDPMissingEndpoints}},
		{name: "no zone anywhere: the rules match one zone's hints", ipt: zoneA,
			want: []string{report.CodeDPRulesMatch}, absent: []string{report.CodeDPMissingEndpoints}},
		{name: "no zone anywhere: rules that fit no zone still fail", ipt: wrong,
			want: []string{report.CodeDPStaleEndpoints}, absent: []string{report.CodeDPRulesMatch}},
		{name: "the Node object wins when read", zoneOnEndpoints: true, nodeZone: "b", ipt: zoneA,
			want: []string{report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInput()
			hinted(in, tt.zoneOnEndpoints)
			in.Nodes = map[string]*corev1.Node{}
			if tt.nodeZone != "" {
				n := node("n1", true)
				n.Labels = map[string]string{corev1.LabelTopologyZone: tt.nodeZone}
				in.Nodes["n1"] = n
			} else {
				in.Gaps = append(in.Gaps, input.Gap{Verb: "get", Resource: input.ResourceNodes, Forbidden: true, Impact: "node readiness not checked"})
			}
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, tt.ipt, nil)})
			got := nodeCodes(tr, report.LayerDatapath, "n1")
			for _, code := range tt.want {
				if _, ok := got[code]; !ok {
					t.Errorf("missing %s; got %v", code, keysOf(got))
				}
			}
			for _, code := range tt.absent {
				if c, ok := got[code]; ok {
					t.Errorf("%s: %q", code, c.Message)
				}
			}
		})
	}
}

// TestSliceProtocolMismatchIsNoDatapathFault: a Service port whose slice
// port has the same name but another protocol has no endpoints for
// kube-proxy, so its REJECT rule is what kube-proxy should program (the
// endpoints layer reports PRT006), not DP016.
func TestSliceProtocolMismatchIsNoDatapathFault(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) { s.Spec.Ports[0].Protocol = corev1.ProtocolUDP })
	ipt := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{{Backend: collectorapi.IPTablesBackendNFTables,
		Family: "IPv4", KubeProxyChains: true, Ports: []collectorapi.IPTablesPortObservation{{ServicePortName: "default/web:http", Protocol: "udp", Port: 80,
			Filter: []collectorapi.IPTablesRule{{Raw: `-A KUBE-SERVICES -d 10.96.0.20/32 -p udp -m comment --comment "default/web:http has no endpoints" -m udp --dport 80 -j REJECT`,
				Comment: "default/web:http has no endpoints", Jump: "REJECT"}}}}}}}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, ipt, nil)})
	got := nodeCodes(tr, report.LayerDatapath, "n1")
	if c, ok := got[report.CodeDPRejectWithEPs]; ok {
		t.Errorf("%s: %q", report.CodeDPRejectWithEPs, c.Message)
	}
	if _, ok := got[report.CodeDPRejectNoEndpoints]; !ok {
		t.Errorf("no %s; got %v", report.CodeDPRejectNoEndpoints, keysOf(got))
	}
	if _, ok := codes(tr, report.LayerEndpoints)[report.CodePortSliceProtocol]; !ok {
		t.Errorf("no %s in the endpoints layer", report.CodePortSliceProtocol)
	}
}

// TestDuplicateEndpointAcrossSlices: kube-proxy reads a Service's slices
// from a Go map, so when two slices hold the same IP:port with different
// conditions and the same terminating state, which copy it keeps depends on
// that order. Either outcome is healthy.
func TestDuplicateEndpointAcrossSlices(t *testing.T) {
	in := nodeInput()
	moved := slice("web-def", "web", "http", 8080, ep{ip: "10.244.2.7", pod: "web-2", node: "n2", ready: false})
	in.Slices = append(in.Slices, *moved)
	for name, ipt := range map[string]*collectorapi.IPTablesObservation{
		"ready copy kept": healthyIPT(),
		"not-ready copy kept": {Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
			jump("KUBE-SEP-1", "10.244.1.5:8080", 1))}},
	} {
		t.Run(name, func(t *testing.T) {
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, ipt, nil)})
			got := nodeCodes(tr, report.LayerDatapath, "n1")
			if _, ok := got[report.CodeDPRulesMatch]; !ok {
				t.Errorf("no %s; got %v", report.CodeDPRulesMatch, keysOf(got))
			}
			for _, code := range []string{report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints} {
				if c, ok := got[code]; ok {
					t.Errorf("%s: %q", code, c.Message)
				}
			}
		})
	}
	// Rules that fit no order still fail.
	wrong := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-9", "10.244.9.9:8080", 1))}}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, wrong, nil)})
	if _, ok := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPStaleEndpoints]; !ok {
		t.Errorf("no %s for rules that fit no slice order", report.CodeDPStaleEndpoints)
	}
}

// nftAffinity is web:http in nftables mode with ClientIP affinity: one
// affinity set per endpoint with the given timeout.
func nftAffinity(timeout int64, endpoints ...string) *collectorapi.NFTablesObservation {
	svc := &collectorapi.NFTablesChain{Name: "service-X", Exists: true}
	port := collectorapi.NFTablesPortObservation{ServicePortName: "default/web:http", Protocol: "tcp", Port: 80,
		ServiceIPs: []collectorapi.NFTablesElement{{Map: "service-ips", Key: "10.96.0.20 . tcp . 80", Found: true, Verdict: "goto service-X", Target: "service-X"}},
		Service:    svc}
	ng := &collectorapi.NFTablesNumgenMap{Kind: "vmap", Modulus: uint32(len(endpoints))}
	for i, e := range endpoints {
		set, chain := fmt.Sprintf("affinity-%d", i), fmt.Sprintf("endpoint-%d", i)
		svc.Rules = append(svc.Rules, collectorapi.NFTablesRule{Text: "ip saddr @" + set + " goto " + chain, AffinityMatch: set, Verdict: "goto", Target: chain})
		ng.Entries = append(ng.Entries, collectorapi.NFTablesNumgenEntry{Index: uint32(i), Verdict: "goto " + chain, Target: chain, Share: 1 / float64(len(endpoints))})
		port.Endpoints = append(port.Endpoints, &collectorapi.NFTablesChain{Name: chain, Exists: true, Rules: []collectorapi.NFTablesRule{
			{Text: "update @" + set + " { ip saddr }", Update: set}, {Text: "meta l4proto tcp dnat to " + e, DNAT: e}}})
		port.Affinity = append(port.Affinity, collectorapi.NFTablesAffinitySet{Name: set, Exists: true, TimeoutSeconds: timeout})
	}
	svc.Rules = append(svc.Rules, collectorapi.NFTablesRule{Text: "numgen random mod N vmap", Numgen: ng})
	return &collectorapi.NFTablesObservation{Source: collectorapi.NFTablesSourceNetlink, Tables: []collectorapi.NFTablesTableObservation{{Family: "ip", Name: "kube-proxy", Present: true,
		Ports: []collectorapi.NFTablesPortObservation{port}}}}
}

// TestAffinityTimeoutCompared: kube-proxy programs the Service's
// sessionAffinityConfig.clientIP.timeoutSeconds as the iptables
// "recent --rcheck --seconds", the nftables affinity set timeout and the
// IPVS persistence timeout; rules with another timeout are stale.
func TestAffinityTimeoutCompared(t *testing.T) {
	affinity := func(seconds int32) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(seconds)}}
		}
	}
	ipt := func(seconds int) *collectorapi.IPTablesObservation {
		return &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, seconds,
			jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))}}
	}
	ipvs := func(seconds uint32) *collectorapi.Observation {
		o := observation(t, collectorapi.ModeIPVS, nil, nil)
		o.Sections.IPVS = okSection(&collectorapi.IPVSObservation{Available: true, VirtualServers: []collectorapi.IPVSVirtualServer{{
			Frontend: "clusterIP", PortName: "http", Address: "10.96.0.20", Port: 80, Protocol: "TCP", Found: true, Scheduler: "rr",
			Flags: 1, FlagNames: []string{"persistent"}, TimeoutSeconds: seconds,
			RealServers: []collectorapi.IPVSRealServer{{Address: "10.244.1.5", Port: 8080, Weight: 1}, {Address: "10.244.2.7", Port: 8080, Weight: 1}}}}})
		return o
	}
	tests := []struct {
		name string
		svc  func(*corev1.Service)
		obs  *collectorapi.Observation
		want string
		msg  string
	}{
		{"iptables stale timeout", affinity(600), observation(t, collectorapi.ModeIPTables, ipt(10800), nil), report.CodeDPAffinityTimeout, "for 10800s, but the Service's sessionAffinityConfig asks for 600s"},
		{"iptables right timeout", affinity(600), observation(t, collectorapi.ModeIPTables, ipt(600), nil), report.CodeDPAffinityOK, "session affinity ClientIP 600 s programmed on node n1"},
		{"default timeout", func(s *corev1.Service) { s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP },
			observation(t, collectorapi.ModeIPTables, ipt(10800), nil), report.CodeDPAffinityOK, "ClientIP 10800 s"},
		{"nftables stale timeout", affinity(600), observation(t, collectorapi.ModeNFTables, nil, nftAffinity(10800, "10.244.1.5:8080", "10.244.2.7:8080")), report.CodeDPAffinityTimeout, "10800s"},
		{"nftables right timeout", affinity(600), observation(t, collectorapi.ModeNFTables, nil, nftAffinity(600, "10.244.1.5:8080", "10.244.2.7:8080")), report.CodeDPAffinityOK, "600 s"},
		{"ipvs stale timeout", affinity(600), ipvs(10800), report.CodeDPAffinityTimeout, "10800s"},
		{"ipvs right timeout", affinity(600), ipvs(600), report.CodeDPAffinityOK, "600 s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := judgeViews(t, nodeInput(tt.svc), plan.NodeView{Node: "n1", Observation: tt.obs})
			got := nodeCodes(tr, report.LayerDatapath, "n1")
			c, ok := got[tt.want]
			if !ok {
				t.Fatalf("no %s; got %v", tt.want, keysOf(got))
			}
			if !strings.Contains(c.Message, tt.msg) {
				t.Errorf("%s message %q lacks %q", tt.want, c.Message, tt.msg)
			}
			if _, missing := got[report.CodeDPAffinityMissing]; missing {
				t.Errorf("affinity reported missing")
			}
			_, match := got[report.CodeDPRulesMatch]
			if stale := tt.want == report.CodeDPAffinityTimeout; match == stale {
				t.Errorf("rules-match reported %v with %s", match, tt.want)
			}
		})
	}
}

// kubeProxyShares are the shares of new connections the iptables rules of
// n endpoints give, after every rounding on the way: kube-proxy writes
// 1/(n-i) with "%0.10f" (computeProbability), the kernel's xt_statistic
// keeps round(p·2³¹), iptables-save prints that with 11 decimals, and the
// collector turns the chain of probabilities into shares.
func kubeProxyShares(n int) []float64 {
	shares := make([]float64, n)
	remaining := 1.0
	for i := range n {
		p := 1.0
		if i < n-1 {
			written, _ := strconv.ParseFloat(fmt.Sprintf("%0.10f", 1/float64(n-i)), 64)
			p, _ = strconv.ParseFloat(fmt.Sprintf("%.11f", math.Round(written*(1<<31))/(1<<31)), 64)
		}
		shares[i] = remaining * p
		remaining -= shares[i]
	}
	return shares
}

// TestEndpointSharesToleranceIsRelative: the DP010 tolerance is a fraction
// of the fair share, so kube-proxy's own rounding passes at 5,000
// endpoints while a doubled or a missing share is caught at any size.
func TestEndpointSharesToleranceIsRelative(t *testing.T) {
	for _, n := range []int{2, 100, 1000, 5000} {
		in := nodeInput()
		in.Slices[0].Endpoints = nil
		var eps []string
		for i := range n {
			ip := fmt.Sprintf("10.%d.%d.%d", 100+i/65536, (i/256)%256, i%256)
			in.Slices[0].Endpoints = append(in.Slices[0].Endpoints,
				slice("x", "web", "http", 8080, ep{ip: ip, node: "n2", ready: true}).Endpoints[0])
			eps = append(eps, ip+":8080")
		}
		sort.Strings(eps)
		in.Pods = nil
		rules := func(shares []float64, unmatched float64) *collectorapi.Observation {
			var sel []collectorapi.IPTablesEndpointJump
			for i, e := range eps {
				sel = append(sel, jump(fmt.Sprintf("KUBE-SEP-%d", i), e, shares[i]))
			}
			b := iptRules(collectorapi.IPTablesBackendNFTables, 0, sel...)
			b.Ports[0].Service.UnmatchedShare = unmatched
			return observation(t, collectorapi.ModeIPTables, &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{b}}, nil)
		}
		fair := 1 / float64(n)
		doubled := kubeProxyShares(n)
		doubled[0], doubled[1] = 2*fair, 0
		missing := kubeProxyShares(n)
		missing[n-1] = 0
		for name, tt := range map[string]struct {
			obs    *collectorapi.Observation
			uneven bool
		}{
			"kube-proxy's rounding":    {rules(kubeProxyShares(n), 0), false},
			"one doubled, one missing": {rules(doubled, 0), true},
			"one share unmatched":      {rules(missing, fair), true},
		} {
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: tt.obs})
			got := nodeCodes(tr, report.LayerDatapath, "n1")
			if _, uneven := got[report.CodeDPUnequalShares]; uneven != tt.uneven {
				t.Errorf("%d endpoints, %s: DP010 %v, want %v (%q)", n, name, uneven, tt.uneven, got[report.CodeDPUnequalShares].Message)
			}
			if _, match := got[report.CodeDPRulesMatch]; match == tt.uneven {
				t.Errorf("%d endpoints, %s: rules-match %v; got %v", n, name, match, keysOf(got))
			}
		}
	}
}

// TestLabelsThatMakeKubeProxyIgnore: kube-proxy's informers select
// Services without service.kubernetes.io/service-proxy-name and
// EndpointSlices without service.kubernetes.io/headless (label absent:
// any value, even empty, excludes; cmd/kube-proxy/app/server.go).
func TestLabelsThatMakeKubeProxyIgnore(t *testing.T) {
	headless := func(sl *discoveryv1.EndpointSlice) { sl.Labels[corev1.IsHeadlessService] = "" }
	reject := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{{Backend: collectorapi.IPTablesBackendNFTables,
		Family: "IPv4", KubeProxyChains: true, Ports: []collectorapi.IPTablesPortObservation{{ServicePortName: "default/web:http", Protocol: "tcp", Port: 80,
			Filter: []collectorapi.IPTablesRule{{Raw: `-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "default/web:http has no endpoints" -m tcp --dport 80 -j REJECT`,
				Comment: "default/web:http has no endpoints", Jump: "REJECT"}}}}}}}
	onlyFirst := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-1", "10.244.1.5:8080", 1))}}
	tests := []struct {
		name     string
		svc      func(*corev1.Service)
		slices   func(in *input.Input)
		ipt      *collectorapi.IPTablesObservation
		service  map[string]report.Status // service-layer code → status
		datapath []string
		absent   []string
	}{
		{name: "service-proxy-name with an empty value",
			svc: func(s *corev1.Service) { s.Labels = map[string]string{labelServiceProxyName: ""} },
			ipt: &collectorapi.IPTablesObservation{}, service: map[string]report.Status{report.CodeSvcProxyName: report.StatusWarn},
			datapath: []string{report.CodeDPIgnoredByProxy}, absent: []string{report.CodeDPNoRules}},
		{name: "every slice labelled headless: kube-proxy rejects",
			slices:  func(in *input.Input) { headless(&in.Slices[0]) },
			ipt:     reject,
			service: map[string]report.Status{report.CodeSvcSlicesIgnored: report.StatusFail}, datapath: []string{report.CodeDPRejectNoEndpoints},
			absent: []string{report.CodeDPRejectWithEPs, report.CodeDPNoRules}},
		{name: "every slice labelled headless, no rules read",
			slices:  func(in *input.Input) { headless(&in.Slices[0]) },
			ipt:     &collectorapi.IPTablesObservation{},
			service: map[string]report.Status{report.CodeSvcSlicesIgnored: report.StatusFail}, absent: []string{report.CodeDPNoRules, report.CodeDPRulesMatch}},
		{name: "one of two slices labelled headless",
			slices: func(in *input.Input) {
				second := slice("web-def", "web", "http", 8080, ep{ip: "10.244.2.7", pod: "web-2", node: "n2", ready: true})
				headless(second)
				in.Slices[0].Endpoints = in.Slices[0].Endpoints[:1]
				in.Slices = append(in.Slices, *second)
			},
			ipt:     onlyFirst,
			service: map[string]report.Status{report.CodeSvcSlicesIgnored: report.StatusWarn}, datapath: []string{report.CodeDPRulesMatch},
			absent: []string{report.CodeDPMissingEndpoints}},
		{name: "the label on the Service itself is not copied to its slices",
			svc:     func(s *corev1.Service) { s.Labels = map[string]string{corev1.IsHeadlessService: ""} },
			ipt:     healthyIPT(),
			service: map[string]report.Status{}, datapath: []string{report.CodeDPRulesMatch}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var muts []func(*corev1.Service)
			if tt.svc != nil {
				muts = append(muts, tt.svc)
			}
			in := nodeInput(muts...)
			if tt.slices != nil {
				tt.slices(in)
			}
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, tt.ipt, nil)})
			svc := codes(tr, report.LayerService)
			for code, st := range tt.service {
				if c, ok := svc[code]; !ok {
					t.Errorf("no %s; service checks %v", code, keys(svc))
				} else if c.Status != st {
					t.Errorf("%s is %s, want %s: %q", code, c.Status, st, c.Message)
				}
			}
			if _, ok := svc[report.CodeSvcSlicesIgnored]; ok && tt.service[report.CodeSvcSlicesIgnored] == "" {
				t.Errorf("%s fired: %q", report.CodeSvcSlicesIgnored, svc[report.CodeSvcSlicesIgnored].Message)
			}
			got := nodeCodes(tr, report.LayerDatapath, "n1")
			for _, code := range tt.datapath {
				if _, ok := got[code]; !ok {
					t.Errorf("no %s; got %v", code, keysOf(got))
				}
			}
			for _, code := range tt.absent {
				if c, ok := got[code]; ok {
					t.Errorf("%s: %q", code, c.Message)
				}
			}
		})
	}
}

// TestLeftoversAcrossIPVS: kube-proxy leaves the other mode's state when it
// switches between iptables and IPVS (both are iptables-based, and its
// startup cleanup only crosses to or from nftables). IPVS virtual servers
// for the Service on an iptables-mode node, and a KUBE-SVC jump for it on
// an IPVS-mode node, are leftovers (warning), and the live datapath is
// still judged on its own rules.
func TestLeftoversAcrossIPVS(t *testing.T) {
	ipvsSection := func(found bool) *collectorapi.Section[collectorapi.IPVSObservation] {
		return okSection(&collectorapi.IPVSObservation{Available: true, VirtualServers: []collectorapi.IPVSVirtualServer{{
			Frontend: "clusterIP", PortName: "http", Address: "10.96.0.20", Port: 80, Protocol: "TCP", Found: found, Scheduler: "rr",
			RealServers: []collectorapi.IPVSRealServer{{Address: "10.244.1.5", Port: 8080, Weight: 1}, {Address: "10.244.2.7", Port: 8080, Weight: 1}}}}})
	}
	iptMode := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	iptMode.Sections.IPVS = ipvsSection(true)
	iptClean := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	iptClean.Sections.IPVS = ipvsSection(false)
	ipvsMode := observation(t, collectorapi.ModeIPVS, healthyIPT(), nil)
	ipvsMode.Sections.IPVS = ipvsSection(true)
	ipvsClean := observation(t, collectorapi.ModeIPVS, &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{{
		Backend: collectorapi.IPTablesBackendLegacy, Family: "IPv4", KubeProxyChains: true}}}, nil)
	ipvsClean.Sections.IPVS = ipvsSection(true)
	for _, tt := range []struct {
		name     string
		obs      *collectorapi.Observation
		leftover string
	}{
		{"iptables mode, IPVS virtual server left", iptMode, "iptables is active, but ipvs also holds kube-proxy state (IPVS virtual server(s) 10.96.0.20:80/TCP"},
		{"iptables mode, no IPVS state", iptClean, ""},
		{"IPVS mode, KUBE-SVC jump left", ipvsMode, "ipvs is active, but iptables (nf_tables) also holds kube-proxy state"},
		{"IPVS mode, its own KUBE-SERVICES only", ipvsClean, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: tt.obs})
			dp := nodeCodes(tr, report.LayerDatapath, "n1")
			c, ok := dp[report.CodeDPLeftovers]
			if tt.leftover == "" {
				if ok {
					t.Fatalf("unexpected %s: %s", report.CodeDPLeftovers, c.Message)
				}
			} else if !ok || !strings.Contains(c.Message, tt.leftover) || c.Status != report.StatusWarn {
				t.Fatalf("%s = %+v (present %v), want a warning saying %q; got %v", report.CodeDPLeftovers, c.Message, ok, tt.leftover, keysOf(dp))
			}
			if _, ok := dp[report.CodeDPRulesMatch]; !ok {
				t.Errorf("the live datapath's rules are not judged: %v", keysOf(dp))
			}
		})
	}
}

// TestJudgeNodesUnreadBackend: a port missing from a read that failed is not
// a port kube-proxy left out. The failed read is a DP021 warning; no
// DP006/DP007 is judged from it and the matrix row is unknown. A failed
// backend next to a whole one that captures the Service is a leftover's
// problem: the whole one is judged.
func TestJudgeNodesUnreadBackend(t *testing.T) {
	const readErr = "netlink receive: dump interrupted"
	partial := iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 1))
	partial.Error = readErr
	failedEarly := collectorapi.IPTablesBackendObservation{Backend: collectorapi.IPTablesBackendNFTables, Family: "IPv4", Error: readErr}
	failedLegacy := collectorapi.IPTablesBackendObservation{Backend: collectorapi.IPTablesBackendLegacy, Family: "IPv4", Error: readErr}
	nftFailed := &collectorapi.NFTablesObservation{Tables: []collectorapi.NFTablesTableObservation{{Family: "ip", Name: "kube-proxy", Present: true, Error: readErr}}}
	tests := []struct {
		name     string
		mode     collectorapi.DatapathMode
		ipt      *collectorapi.IPTablesObservation
		nft      *collectorapi.NFTablesObservation
		want     []string
		unknown  bool
		notWants []string
	}{
		{name: "active backend read in part", mode: collectorapi.ModeIPTables,
			ipt:  &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{partial}},
			want: []string{report.CodeDPSectionError}, unknown: true},
		{name: "backend failed before its chains were known", mode: collectorapi.ModeIPTables,
			ipt:  &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{failedEarly}},
			want: []string{report.CodeDPSectionError}, unknown: true},
		{name: "nftables table failed", mode: collectorapi.ModeNFTables, nft: nftFailed,
			want: []string{report.CodeDPSectionError}, unknown: true},
		{name: "failed legacy beside a whole nf_tables backend", mode: collectorapi.ModeIPTables,
			ipt:  &collectorapi.IPTablesObservation{Backends: append(healthyIPT().Backends, failedLegacy)},
			want: []string{report.CodeDPSectionError, report.CodeDPRulesMatch}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: observation(t, tc.mode, tc.ipt, tc.nft)})
			dp := nodeCodes(tr, report.LayerDatapath, "n1")
			for _, c := range tc.want {
				if _, ok := dp[c]; !ok {
					t.Errorf("datapath checks = %v, want %s", keysOf(dp), c)
				}
			}
			for _, c := range []string{report.CodeDPNoRules, report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints} {
				if _, ok := dp[c]; ok {
					t.Errorf("%s judged from a failed read: %s", c, dp[c].Message)
				}
			}
			if c := dp[report.CodeDPSectionError]; !strings.Contains(c.Message, readErr) {
				t.Errorf("%s does not carry the read error: %q", c.Code, c.Message)
			}
			if s := tr.Layer(report.LayerDatapath).Status; s == report.StatusFail {
				t.Errorf("datapath layer fails: %s", tr.Layer(report.LayerDatapath).Reason)
			}
			if tr.Matrix == nil || len(tr.Matrix.Ports) != 1 {
				t.Fatalf("matrix = %+v", tr.Matrix)
			}
			for _, row := range tr.Matrix.Ports[0].Nodes {
				if got := row.Status == report.StatusUnknown; got != tc.unknown {
					t.Errorf("matrix row %s: %s (%s), unknown = %t want %t", row.Node, row.Status, row.Reason, got, tc.unknown)
				}
				if tc.unknown && !strings.Contains(row.Reason, readErr) {
					t.Errorf("matrix row reason %q does not say why", row.Reason)
				}
			}
		})
	}
}
