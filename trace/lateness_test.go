package trace

import (
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// slowNodeObservation is a healthy node's observation whose ClusterIP
// probe and UDP DNS query timed out on both tries while the endpoints
// answered, as on the starved IPVS node: lateMillis is how late the
// collector ran, class the ClusterIP probe's error class, web2 the second
// endpoint's outcome class ("" for answered).
func slowNodeObservation(t *testing.T, lateMillis float64, class, web2 string) *collectorapi.Observation {
	return slowNodeObservationWith(t, lateMillis, class, web2, false)
}

// slowNodeObservationWith is slowNodeObservation where, with slowEndpoint,
// the first endpoint answered only on its second, longer try.
func slowNodeObservationWith(t *testing.T, lateMillis float64, class, web2 string, slowEndpoint bool) *collectorapi.Observation {
	t.Helper()
	o := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	o.Collector.LateMillis = lateMillis
	cip := probe("clusterIP", "http", "10.96.0.20:80", "failed", class)
	cip.Attempts, cip.FirstError = 2, "dial tcp 10.96.0.20:80: i/o timeout"
	slow := probe("endpoint", "http", "10.244.1.5:8080", "connected", "")
	if slowEndpoint {
		slow.Attempts, slow.FirstError = 2, "dial tcp 10.244.1.5:8080: i/o timeout"
	}
	second := probe("endpoint", "http", "10.244.2.7:8080", "connected", "")
	if web2 != "" {
		second = probe("endpoint", "http", "10.244.2.7:8080", "failed", web2)
		second.Attempts = 2
	}
	o.Sections.Probe = okSection(&collectorapi.ProbeObservation{TimeoutMillis: 1000, Probes: []collectorapi.Probe{cip, slow, second}})
	q := func(tr string) collectorapi.DNSQuery {
		return collectorapi.DNSQuery{Server: "10.96.0.10", Transport: tr, Name: "web.default.svc.cluster.local.", Type: "A", Rcode: "NOERROR", Answers: []string{"A 10.96.0.20"}, LatencyMillis: 3}
	}
	udp := q("udp")
	udp.Rcode, udp.Answers, udp.LatencyMillis = "", nil, 2000
	udp.Error, udp.ErrorClass, udp.Attempts, udp.FirstError = "read udp 10.0.0.11:41234->10.96.0.10:53: i/o timeout", collectorapi.ErrClassTimeout, 2, "i/o timeout"
	o.Sections.DNS = okSection(&collectorapi.DNSObservation{Servers: []string{"10.96.0.10"}, Queries: []collectorapi.DNSQuery{udp, q("tcp")}})
	return o
}

// TestLateCollectorTimeoutsAreUndetermined: the same timeouts are a FAIL
// (DP019, DNS013, RT007) from a collector that ran on time and
// undetermined (DP060, DNS024, RT026, status unknown: exit 4) from one that
// ran late by half a probe's timeout or more, or whose time ran out before
// the retry; a ClusterIP timeout is undetermined too when an endpoint
// behind it answered only on its second, longer try. A refusal is an
// answer: it fails on a late node too.
func TestLateCollectorTimeoutsAreUndetermined(t *testing.T) {
	for _, tt := range []struct {
		name    string
		obs     func(t *testing.T) *collectorapi.Observation
		want    map[report.LayerName]string // layer → code on n1
		absent  map[report.LayerName]string
		status  report.Status // the code's status
		verdict report.Status
		// cell is the matrix status of n1's cell for 10.244.2.7:8080 ("":
		// not checked).
		cell report.Status
		why  string // in the undetermined messages
	}{
		{name: "punctual collector", obs: func(t *testing.T) *collectorapi.Observation { return slowNodeObservation(t, 4, "timeout", "") },
			want:   map[report.LayerName]string{report.LayerDatapath: report.CodeDPClusterIPFails, report.LayerDNS: report.CodeDNSLiveFailed},
			absent: map[report.LayerName]string{report.LayerDatapath: report.CodeDPProbeInconclusive, report.LayerDNS: report.CodeDNSLiveInconclusive},
			status: report.StatusFail, verdict: report.StatusFail},
		{name: "late by less than half the timeout", obs: func(t *testing.T) *collectorapi.Observation { return slowNodeObservation(t, 499, "timeout", "") },
			want:   map[report.LayerName]string{report.LayerDatapath: report.CodeDPClusterIPFails, report.LayerDNS: report.CodeDNSLiveFailed},
			status: report.StatusFail, verdict: report.StatusFail},
		{name: "late collector", obs: func(t *testing.T) *collectorapi.Observation { return slowNodeObservation(t, 850, "timeout", "") },
			want:   map[report.LayerName]string{report.LayerDatapath: report.CodeDPProbeInconclusive, report.LayerDNS: report.CodeDNSLiveInconclusive},
			absent: map[report.LayerName]string{report.LayerDatapath: report.CodeDPClusterIPFails, report.LayerDNS: report.CodeDNSLiveFailed},
			status: report.StatusUnknown, verdict: report.StatusUnknown, why: "the collector itself ran 850 ms late on this node (a probe waits 1000 ms)"},
		{name: "punctual collector, an endpoint answered only on its second try", obs: func(t *testing.T) *collectorapi.Observation {
			return slowNodeObservationWith(t, 4, "timeout", "", true)
		},
			want:   map[report.LayerName]string{report.LayerDatapath: report.CodeDPProbeInconclusive},
			absent: map[report.LayerName]string{report.LayerDatapath: report.CodeDPClusterIPFails},
			status: report.StatusUnknown, why: "the endpoint 10.244.1.5:8080 behind it answered this node only when probed again with twice the timeout"},
		{name: "late collector, endpoint timeout", obs: func(t *testing.T) *collectorapi.Observation { return slowNodeObservation(t, 850, "refused", "timeout") },
			want:   map[report.LayerName]string{report.LayerRoute: report.CodeRTProbeInconclusive},
			absent: map[report.LayerName]string{report.LayerRoute: report.CodeRTPodTimeout},
			status: report.StatusUnknown, why: "ran 850 ms late", cell: report.StatusUnknown},
		{name: "punctual collector, endpoint timeout", obs: func(t *testing.T) *collectorapi.Observation { return slowNodeObservation(t, 4, "refused", "timeout") },
			want:   map[report.LayerName]string{report.LayerRoute: report.CodeRTPodTimeout},
			absent: map[report.LayerName]string{report.LayerRoute: report.CodeRTProbeInconclusive},
			status: report.StatusFail, verdict: report.StatusFail, cell: report.StatusFail},
		{name: "late collector, refused", obs: func(t *testing.T) *collectorapi.Observation { return slowNodeObservation(t, 850, "refused", "") },
			want:   map[report.LayerName]string{report.LayerDatapath: report.CodeDPClusterIPFails},
			absent: map[report.LayerName]string{report.LayerDatapath: report.CodeDPProbeInconclusive},
			status: report.StatusFail, verdict: report.StatusFail},
		{name: "out of time before the retry", obs: func(t *testing.T) *collectorapi.Observation {
			o := slowNodeObservation(t, 0, "timeout", "")
			o.Sections.Probe.Status, o.Sections.Probe.Error = collectorapi.StatusError, "context deadline exceeded"
			o.Sections.Probe.Data.Probes[0].Attempts = 0
			return o
		},
			want:   map[report.LayerName]string{report.LayerDatapath: report.CodeDPProbeInconclusive},
			absent: map[report.LayerName]string{report.LayerDatapath: report.CodeDPClusterIPFails},
			status: report.StatusUnknown, why: "it was not tried again: the collector's time ran out first"},
		{name: "DNS out of time before the retry", obs: func(t *testing.T) *collectorapi.Observation {
			o := slowNodeObservation(t, 0, "refused", "")
			o.Sections.DNS.Status, o.Sections.DNS.Error = collectorapi.StatusError, "context deadline exceeded"
			o.Sections.DNS.Data.Queries[0].Attempts = 0
			return o
		},
			want:   map[report.LayerName]string{report.LayerDNS: report.CodeDNSLiveInconclusive},
			absent: map[report.LayerName]string{report.LayerDNS: report.CodeDNSLiveFailed},
			status: report.StatusUnknown, why: "it was not tried again: the collector's time ran out first (context deadline exceeded)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: tt.obs(t)})
			for layer, code := range tt.want {
				c, ok := nodeCodes(tr, layer, "n1")[code]
				if !ok {
					t.Errorf("layer %s: no %s; got %v", layer, code, keysOf(nodeCodes(tr, layer, "n1")))
					continue
				}
				if c.Status != tt.status {
					t.Errorf("%s status %s, want %s", code, c.Status, tt.status)
				}
				if tt.why != "" && !strings.Contains(c.Message, tt.why) {
					t.Errorf("%s message %q lacks %q", code, c.Message, tt.why)
				}
			}
			for layer, code := range tt.absent {
				assertNoCode(t, tr, layer, "n1", code)
			}
			if tt.verdict != "" && tr.Verdict.Status != tt.verdict {
				t.Errorf("verdict %s (%s), want %s", tr.Verdict.Status, tr.Verdict.Summary, tt.verdict)
			}
			if tt.cell != "" {
				if got := matrixCell(tr, "n1", "10.244.2.7:8080"); got != tt.cell {
					t.Errorf("matrix cell n1 × 10.244.2.7:8080 = %q, want %s: the grid must say what the route layer says", got, tt.cell)
				}
			}
		})
	}
}

// matrixCell is the status of node's cell for endpoint in the first port's
// grid, "" when there is none.
func matrixCell(tr *report.ServiceTrace, node, endpoint string) report.Status {
	if tr.Matrix == nil || len(tr.Matrix.Ports) == 0 {
		return ""
	}
	for _, row := range tr.Matrix.Ports[0].Nodes {
		if row.Node != node {
			continue
		}
		for _, c := range row.Cells {
			if c.Endpoint == endpoint {
				return c.Status
			}
		}
	}
	return ""
}

// TestLateCollectorClientTimeoutsAreUndetermined: the --from Pod's own
// probes go through the same collector: on one that ran late their
// timeouts are DP060/RT026 (unknown), on a punctual one DP055/RT022 (fail).
func TestLateCollectorClientTimeoutsAreUndetermined(t *testing.T) {
	for _, tt := range []struct {
		name       string
		lateMillis float64
		want       map[report.LayerName]string
		absent     map[report.LayerName]string
		status     report.Status
	}{
		{"punctual", 3,
			map[report.LayerName]string{report.LayerDatapath: report.CodeDPClientClusterIPFails, report.LayerRoute: report.CodeRTClientTimeout},
			map[report.LayerName]string{report.LayerDatapath: report.CodeDPProbeInconclusive, report.LayerRoute: report.CodeRTProbeInconclusive},
			report.StatusFail},
		{"late", 700,
			map[report.LayerName]string{report.LayerDatapath: report.CodeDPProbeInconclusive, report.LayerRoute: report.CodeRTProbeInconclusive},
			map[report.LayerName]string{report.LayerDatapath: report.CodeDPClientClusterIPFails, report.LayerRoute: report.CodeRTClientTimeout},
			report.StatusUnknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInput()
			in.Slices[0].Endpoints = append(in.Slices[0].Endpoints, in.Slices[0].Endpoints[1])
			in.Slices[0].Endpoints[2].Addresses = []string{"10.244.2.8"}
			client := pod("frontend", "frontend", "10.244.1.9", "n1")
			v := clientView(t, nil, clientProbes("frontend",
				probe("clusterIP", "http", "10.96.0.20:80", "failed", "timeout"),
				probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
				probe("endpoint", "http", "10.244.2.7:8080", "connected", ""),
				probe("endpoint", "http", "10.244.2.8:8080", "failed", "timeout")))
			v.Observation.Collector.LateMillis = tt.lateMillis
			tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
			for layer, code := range tt.want {
				c, ok := nodeCodes(tr, layer, "n1")[code]
				if !ok {
					t.Errorf("layer %s: no %s; got %v", layer, code, keysOf(nodeCodes(tr, layer, "n1")))
					continue
				}
				if c.Status != tt.status {
					t.Errorf("%s status %s, want %s", code, c.Status, tt.status)
				}
				if tt.status == report.StatusUnknown && !strings.Contains(c.Message, "from pod default/frontend") {
					t.Errorf("%s does not say the probe was the client's: %q", code, c.Message)
				}
			}
			for layer, code := range tt.absent {
				assertNoCode(t, tr, layer, "n1", code)
			}
		})
	}
}
