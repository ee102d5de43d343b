package trace

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func TestConntrackInvalidJudged(t *testing.T) {
	for _, tt := range []struct {
		name      string
		invalid   uint64
		liberal   string
		mode      collectorapi.DatapathMode
		want      bool
		behaviour string
	}{
		{name: "no INVALID packets", invalid: 0, liberal: "0", mode: collectorapi.ModeIPTables},
		// One late packet in a 200 ms sample is any node's background.
		{name: "one packet", invalid: 1, liberal: "0", mode: collectorapi.ModeIPTables},
		{name: "below the packet floor", invalid: 9, liberal: "0", mode: collectorapi.ModeIPTables},
		{name: "iptables mode drops them", invalid: 17, liberal: "0", mode: collectorapi.ModeIPTables, want: true, behaviour: "drops INVALID packets in KUBE-FORWARD"},
		{name: "be_liberal set", invalid: 17, liberal: "1", mode: collectorapi.ModeIPTables, want: true, behaviour: "installs no INVALID drop"},
		{name: "nftables mode", invalid: 13, liberal: "0", mode: collectorapi.ModeNFTables, want: true, behaviour: "programs no INVALID drop"},
		{name: "Cilium", invalid: 13, liberal: "0", mode: collectorapi.ModeCilium, want: true, behaviour: "eBPF datapath, not kube-proxy"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ipt *collectorapi.IPTablesObservation
			var nft *collectorapi.NFTablesObservation
			if tt.mode == collectorapi.ModeIPTables {
				ipt = healthyIPT()
			}
			obs := observation(t, tt.mode, ipt, nft)
			if tt.mode == collectorapi.ModeCilium {
				obs = ebpfObservation(t, ciliumFixture(t, "default/hash"), nil)
			}
			ct := obs.Sections.Conntrack.Data
			ct.StatsDelta.Invalid, ct.Stats, ct.TCPBeLiberal = tt.invalid, &collectorapi.ConntrackCounters{Invalid: 100 + tt.invalid}, tt.liberal
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: obs})
			if !tt.want {
				assertNoCode(t, tr, report.LayerConntrack, "n1", report.CodeCTInvalid)
				wantCode(t, tr, report.LayerConntrack, "n1", report.CodeCTHealthy)
				return
			}
			c := wantCode(t, tr, report.LayerConntrack, "n1", report.CodeCTInvalid, tt.behaviour, "nf_conntrack_tcp_be_liberal="+tt.liberal)
			if evidence(c, "invalidDelta") == "" || evidence(c, "tcpBeLiberal") != tt.liberal {
				t.Errorf("evidence %+v", c.Evidence)
			}
			assertNoCode(t, tr, report.LayerConntrack, "n1", report.CodeCTHealthy)
		})
	}
}

func TestDNSInsertRaceJudged(t *testing.T) {
	dnsFlows := &collectorapi.DNSFlows{Destinations: []string{"10.96.0.10:53/UDP"}, Total: 40, Unreplied: 3}
	client := func(node string, opts ...corev1.PodDNSConfigOption) *report.PolicyClient {
		p := pod("client", "client", "10.244.1.9", node)
		if len(opts) > 0 {
			p.Spec.DNSConfig = &corev1.PodDNSConfig{Options: opts}
		}
		return report.PolicyClientFromPod(p)
	}
	for _, tt := range []struct {
		name     string
		failed   uint64
		flows    *collectorapi.DNSFlows
		from     *report.PolicyClient
		want     string
		msgParts []string
	}{
		{name: "no insert failures", failed: 0, flows: dnsFlows},
		{name: "failures without DNS flows stay CT002", failed: 5, flows: nil, want: report.CodeCTInsertFailed},
		{name: "failures with DNS flows, no client", failed: 5, flows: dnsFlows, want: report.CodeCTDNSRace, msgParts: []string{"rose by 5", "40 UDP flow(s)", "3 never answered", "by default (glibc)"}},
		{name: "client without mitigation", failed: 5, flows: dnsFlows, from: client("n1", corev1.PodDNSConfigOption{Name: "ndots", Value: ptr("2")}),
			want: report.CodeCTDNSRace, msgParts: []string{"default/client", "ndots 2", "dnsPolicy ClusterFirst"}},
		{name: "client with single-request-reopen", failed: 5, flows: dnsFlows, from: client("n1", corev1.PodDNSConfigOption{Name: "single-request-reopen"}),
			want: report.CodeCTDNSRaceMitigated, msgParts: []string{"single-request-reopen"}},
		{name: "client with use-vc", failed: 5, flows: dnsFlows, from: client("n1", corev1.PodDNSConfigOption{Name: "use-vc"}),
			want: report.CodeCTDNSRaceMitigated, msgParts: []string{"use-vc"}},
		{name: "mitigated client on another node", failed: 5, flows: dnsFlows, from: client("n2", corev1.PodDNSConfigOption{Name: "use-vc"}),
			want: report.CodeCTDNSRace, msgParts: []string{"by default (glibc)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			ct := obs.Sections.Conntrack.Data
			ct.StatsDelta.InsertFailed, ct.DNSFlows = tt.failed, tt.flows
			tr := judgeFrom(t, nodeInput(), tt.from, plan.NodeView{Node: "n1", Observation: obs})
			if tt.want == "" {
				assertNoCode(t, tr, report.LayerConntrack, "n1", report.CodeCTDNSRace, report.CodeCTDNSRaceMitigated)
				return
			}
			c := wantCode(t, tr, report.LayerConntrack, "n1", tt.want, tt.msgParts...)
			if tt.want == report.CodeCTDNSRace && evidence(c, "dnsFlows") != "40" {
				t.Errorf("evidence %+v", c.Evidence)
			}
			if tt.want == report.CodeCTDNSRaceMitigated {
				assertNoCode(t, tr, report.LayerConntrack, "n1", report.CodeCTDNSRace)
			}
			// One counter, one finding: where the node's DNS flows explain
			// insert_failed, the node-wide CT002 warning is not repeated
			// beside CT010, nor beside CT011 for a client its resolver
			// options protect. Its clash_resolve evidence moves with it.
			if tt.want == report.CodeCTDNSRace || tt.want == report.CodeCTDNSRaceMitigated {
				assertNoCode(t, tr, report.LayerConntrack, "n1", report.CodeCTInsertFailed)
				if evidence(c, "insertFailedDelta") != "5" || evidence(c, "clashResolve") == "" {
					t.Errorf("%s evidence %+v", tt.want, c.Evidence)
				}
			}
			if st := tr.Layer(report.LayerConntrack).Status; tt.want == report.CodeCTDNSRaceMitigated && st != report.StatusPass {
				t.Errorf("a protected client's conntrack layer is %s, want pass: %v", st, keysOf(nodeCodes(tr, report.LayerConntrack, "n1")))
			}
		})
	}
}

func TestInvalidRateThreshold(t *testing.T) {
	for _, tc := range []struct {
		delta    uint64
		interval int
		want     bool
	}{
		{1, 200, false}, {9, 200, false}, {10, 200, true}, {10, 1000, false}, {20, 1000, true}, {10, 0, true}, {0, 0, false},
	} {
		if got := invalidRateMatters(tc.delta, tc.interval); got != tc.want {
			t.Errorf("%d in %d ms: %v, want %v", tc.delta, tc.interval, got, tc.want)
		}
	}
}

func TestConntrackSkewExplained(t *testing.T) {
	for _, tt := range []struct {
		counts []int
		skew   bool
	}{
		{[]int{12, 0}, true},
		{[]int{9, 1}, true},
		{[]int{6, 4}, false},
		{[]int{5, 2, 2, 1}, false},
		{[]int{7, 1, 1, 1}, true},
	} {
		in := nodeInput()
		obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
		fe := collectorapi.FrontendFlows{Frontend: "10.96.0.20:80/TCP"}
		for i, c := range tt.counts {
			fe.Total += c
			fe.Backends = append(fe.Backends, collectorapi.BackendFlows{Backend: fmt.Sprintf("10.244.1.%d:8080", i+1), Count: c, Expected: true})
		}
		var expected []string
		for i := range tt.counts {
			expected = append(expected, fmt.Sprintf("10.244.1.%d:8080", i+1), fmt.Sprintf("10.244.1.%d:9000", i+1))
		}
		// A backend without flows is absent from the frontend's list.
		if tt.counts[len(tt.counts)-1] == 0 {
			fe.Backends = fe.Backends[:len(fe.Backends)-1]
		}
		obs.Sections.Conntrack.Data.Flows = &collectorapi.ServiceFlows{Frontends: []collectorapi.FrontendFlows{fe}, ExpectedBackends: expected}
		tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
		_, got := nodeCodes(tr, report.LayerConntrack, "n1")[report.CodeCTSkew]
		if got != tt.skew {
			t.Errorf("counts %v: skew reported %v, want %v", tt.counts, got, tt.skew)
		}
	}
}

// Flows to replaced Pods count as pinned (CT005) only while they can still
// carry traffic: TIME_WAIT and CLOSE entries, which every rollout and
// svctrace's own earlier probes leave, hang nothing.
func TestStaleFlowsCountOnlyLiveOnes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		states map[string]int
		count  int
		want   string // "" for no CT005
	}{
		{"closed probes only", map[string]int{"TIME_WAIT": 3, "CLOSE": 1}, 4, ""},
		{"established ones among them", map[string]int{"TIME_WAIT": 3, "ESTABLISHED": 2}, 5, "2 conntrack flow(s)"},
		{"UDP", map[string]int{"UDP": 2}, 2, "2 conntrack flow(s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			obs.Sections.Conntrack.Data.Flows = &collectorapi.ServiceFlows{UnexpectedTotal: tc.count, Frontends: []collectorapi.FrontendFlows{{Frontend: "10.96.0.20:80/TCP", Total: tc.count,
				Backends: []collectorapi.BackendFlows{{Backend: "10.244.9.9:8080", Count: tc.count, States: tc.states}}}}}
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: obs})
			c, ok := nodeCodes(tr, report.LayerConntrack, "n1")[report.CodeCTStaleFlows]
			if ok != (tc.want != "") || ok && !strings.Contains(c.Message, tc.want) {
				t.Fatalf("CT005 %v %q, want %q", ok, c.Message, tc.want)
			}
		})
	}
}
