package trace

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// syncMetrics are kube-proxy's sync samples as its /metrics carries them
// (names and labels as in collectors/testdata/observations/ipvs-uml/web.json,
// read from the real kube-proxy v1.37.2): last and queued in Unix seconds,
// the mean sync taking syncSeconds.
func syncMetrics(family string, last, queued, endpointChanges, syncSeconds float64) []collectorapi.MetricSample {
	l := map[string]string{"ip_family": family}
	return []collectorapi.MetricSample{
		{Name: "kubeproxy_sync_proxy_rules_duration_seconds_sum", Labels: l, Value: 10 * syncSeconds},
		{Name: "kubeproxy_sync_proxy_rules_duration_seconds_count", Labels: l, Value: 10},
		{Name: "kubeproxy_sync_proxy_rules_endpoint_changes_pending", Value: endpointChanges},
		{Name: "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", Labels: l, Value: queued},
		{Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds", Labels: l, Value: last},
		{Name: "kubeproxy_sync_proxy_rules_service_changes_pending", Value: 0},
	}
}

func withSyncMetrics(obs *collectorapi.Observation, samples []collectorapi.MetricSample) *collectorapi.Observation {
	obs.Sections.Proxy.Data.Metrics = &collectorapi.ProxyMetrics{Samples: samples}
	return obs
}

// TestSyncPending: the collector read the node at 1000 s; each case is a
// Service change and kube-proxy's metrics at that moment.
func TestSyncPending(t *testing.T) {
	at := func(sec float64) time.Time { return time.Unix(0, int64(sec*1e9)) }
	tests := []struct {
		name      string
		mode      collectorapi.DatapathMode
		family    corev1.IPFamily
		changed   float64
		samples   []collectorapi.MetricSample
		fetch     *collectorapi.HTTPFetch // /metrics failed this way (no samples)
		answered  bool                    // /proxyMode answered in the same read
		want      string                  // a part of the reason; "" for none
		wantEmpty bool
	}{
		{name: "changed after the last completed sync", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 999.2,
			samples: syncMetrics("IPv4", 998, 998, 0, 0.05), want: "changed 800ms before the read, after kube-proxy's last completed sync"},
		// A watch judges an older node read against a newer API read.
		{name: "changed after the read", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 1001.4,
			samples: syncMetrics("IPv4", 998, 998, 0, 0.05), want: "changed 1.4s after the read, after kube-proxy's last completed sync"},
		{name: "change received, sync throttled", mode: collectorapi.ModeNFTables, family: corev1.IPv4Protocol, changed: 998.5,
			samples: syncMetrics("IPv4", 998.7, 999.1, 1, 0.05), want: "1 change(s) no sync has taken yet"},
		{name: "sync queued, not completed", mode: collectorapi.ModeIPVS, family: corev1.IPv4Protocol, changed: 998.5,
			samples: syncMetrics("IPv4", 998.7, 999.1, 0, 0.05), want: "queued a sync 900ms before the read"},
		{name: "sync completed while reading", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 999.5,
			samples: syncMetrics("IPv4", 1000.05, 999.6, 0, 0.05), want: "completed a sync while the collector was reading"},
		{name: "applied long ago, other Services' changes pending", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 990,
			samples: syncMetrics("IPv4", 999, 999.5, 3, 0.05), wantEmpty: true},
		{name: "a slow sync may have started before the change", mode: collectorapi.ModeIPVS, family: corev1.IPv4Protocol, changed: 990,
			samples: syncMetrics("IPv4", 999, 999.5, 3, 24), want: "3 change(s)"},
		{name: "synced, nothing pending", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 998,
			samples: syncMetrics("IPv4", 999.6, 999.1, 0, 0.05), wantEmpty: true},
		// The API's 999 is a change at 999.0 to 999.99: the sync at 999.6 may
		// have missed it, and nothing else says so.
		{name: "synced in the second of the change", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 999,
			samples: syncMetrics("IPv4", 999.6, 999.1, 0, 0.05), want: "in the same second as kube-proxy's last completed sync"},
		{name: "change older than the limit", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 900,
			samples: syncMetrics("IPv4", 800, 950, 2, 0.05), wantEmpty: true},
		{name: "other family's samples only", mode: collectorapi.ModeIPTables, family: corev1.IPv6Protocol, changed: 999.2,
			samples: syncMetrics("IPv4", 998, 998, 0, 0.05), wantEmpty: true},
		{name: "not kube-proxy's datapath", mode: collectorapi.ModeCilium, family: corev1.IPv4Protocol, changed: 999.2,
			samples: syncMetrics("IPv4", 998, 998, 0, 0.05), wantEmpty: true},
		{name: "no metrics", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 999.2, wantEmpty: true},
		// kube-proxy in user-mode Linux, mid-sync, let three tries of
		// /metrics time out (recorded in the IPVS e2e trace).
		{name: "metrics timed out, recent change", mode: collectorapi.ModeIPVS, family: corev1.IPv4Protocol, changed: 999.2,
			fetch:    &collectorapi.HTTPFetch{Error: "context deadline exceeded", ErrorClass: collectorapi.ErrClassTimeout, Attempts: 3, LatencyMillis: 4001},
			answered: true, want: "sync metrics did not answer in time (3 tries, the last after 4.0 s)"},
		// A stopped (SIGSTOPped) kube-proxy in user-mode Linux: nothing
		// answers, every endpoint times out; that is the fault.
		{name: "nothing answers, recent change", mode: collectorapi.ModeIPVS, family: corev1.IPv4Protocol, changed: 999.2,
			fetch:     &collectorapi.HTTPFetch{Error: "context deadline exceeded", ErrorClass: collectorapi.ErrClassTimeout, Attempts: 3, LatencyMillis: 4001},
			wantEmpty: true},
		{name: "metrics timed out, change older than the limit", mode: collectorapi.ModeIPVS, family: corev1.IPv4Protocol, changed: 900,
			fetch: &collectorapi.HTTPFetch{Error: "context deadline exceeded", ErrorClass: collectorapi.ErrClassTimeout, Attempts: 3}, wantEmpty: true},
		// Refused: kube-proxy is not running, so it is not syncing either.
		{name: "metrics refused, recent change", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 999.2,
			fetch: &collectorapi.HTTPFetch{Error: "connection refused", ErrorClass: collectorapi.ErrClassRefused}, wantEmpty: true},
		{name: "restarted, first sync not completed", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 999.2,
			samples: syncMetrics("IPv4", 0, 999.5, 0, 0), want: "not completed a sync since it started (it queued one 500ms before the read)"},
		{name: "restarted, first sync not completed, change older than the limit", mode: collectorapi.ModeIPTables, family: corev1.IPv4Protocol, changed: 900,
			samples: syncMetrics("IPv4", 0, 999.5, 0, 0), wantEmpty: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obs := observation(t, tc.mode, nil, nil)
			if tc.samples != nil {
				withSyncMetrics(obs, tc.samples)
			}
			if tc.fetch != nil {
				obs.Sections.Proxy.Data.Metrics = &collectorapi.ProxyMetrics{Fetch: *tc.fetch}
				obs.Sections.Proxy.Data.ProxyMode = collectorapi.HTTPFetch{Error: "context deadline exceeded", ErrorClass: collectorapi.ErrClassTimeout}
				if tc.answered {
					obs.Sections.Proxy.Data.ProxyMode = collectorapi.HTTPFetch{StatusCode: 200, Body: string(tc.mode)}
				}
			}
			got := syncPending(obs, tc.mode, tc.family, at(tc.changed))
			if tc.wantEmpty {
				if got != "" {
					t.Errorf("syncPending = %q, want none", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("syncPending = %q, want it to say %q", got, tc.want)
			}
		})
	}
}

// TestRulesBehindAPIWarn: the same rules (one endpoint missing, one stale)
// are a warning while kube-proxy has not applied the Service's latest change
// and a failure once it has.
func TestRulesBehindAPIWarn(t *testing.T) {
	behind := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-9", "10.244.9.9:8080", 0.5))}}
	tests := []struct {
		name       string
		trigger    string
		last       float64
		wantStatus report.Status
	}{
		// observation() reads the node at 1000 s.
		{name: "endpoint changed after kube-proxy's last sync", trigger: "1970-01-01T00:16:39.4Z", last: 998.9, wantStatus: report.StatusWarn},
		{name: "kube-proxy synced long after the change", trigger: "1970-01-01T00:16:20Z", last: 998.9, wantStatus: report.StatusFail},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := nodeInput()
			in.Slices[0].Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: tc.trigger}
			obs := withSyncMetrics(observation(t, collectorapi.ModeIPTables, behind, nil), syncMetrics("IPv4", tc.last, tc.last-0.2, 0, 0.05))
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			dp := nodeCodes(tr, report.LayerDatapath, "n1")
			if s := tr.Layer(report.LayerDatapath).Status; s != tc.wantStatus {
				t.Errorf("datapath layer %s (%s), want %s; checks %v", s, tr.Layer(report.LayerDatapath).Reason, tc.wantStatus, keysOf(dp))
			}
			if tr.Matrix == nil || len(tr.Matrix.Ports) != 1 || len(tr.Matrix.Ports[0].Nodes) != 1 {
				t.Fatalf("matrix = %+v", tr.Matrix)
			}
			row := tr.Matrix.Ports[0].Nodes[0]
			if row.Status != tc.wantStatus {
				t.Errorf("matrix row %s (%s), want %s", row.Status, row.Reason, tc.wantStatus)
			}
			if tc.wantStatus == report.StatusFail {
				for _, c := range []string{report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints} {
					if _, ok := dp[c]; !ok {
						t.Errorf("datapath checks = %v, want %s", keysOf(dp), c)
					}
				}
				if _, ok := dp[report.CodeDPSyncPending]; ok {
					t.Errorf("%s for a change kube-proxy applied long ago", report.CodeDPSyncPending)
				}
				return
			}
			for _, c := range []string{report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints, report.CodeDPRulesMatch} {
				if _, ok := dp[c]; ok {
					t.Errorf("%s while kube-proxy has not synced the change: %s", c, dp[c].Message)
				}
			}
			var pending []report.Check
			for _, c := range tr.Layer(report.LayerDatapath).Checks {
				if c.Code == report.CodeDPSyncPending {
					pending = append(pending, c)
				}
			}
			if len(pending) != 2 {
				t.Fatalf("%d %s checks, want 2 (missing, stale): %v", len(pending), report.CodeDPSyncPending, keysOf(dp))
			}
			for _, want := range []string{"10.244.2.7:8080", "10.244.9.9:8080"} {
				if !strings.Contains(pending[0].Message+pending[1].Message, want) {
					t.Errorf("%s does not name %s: %q / %q", report.CodeDPSyncPending, want, pending[0].Message, pending[1].Message)
				}
			}
			if !strings.Contains(row.Reason, "after kube-proxy's last completed sync") {
				t.Errorf("matrix row reason %q does not say why it only warns", row.Reason)
			}
		})
	}
}
