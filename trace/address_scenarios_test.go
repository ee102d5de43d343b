package trace_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/kubectl-svctrace/bundle"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestAddressEntryMissingInRecordedBundles takes the recorded dual-stack
// bundles (kube-proxy v1.37.2, svtb-node1 in iptables mode, svtb-node2 in
// nftables mode; TestScenarios passes them as recorded) and removes one
// address's entry from what a node read: the KUBE-SERVICES rule kube-proxy
// wrote for it, or its service-ips element (the lookup then finds none, as
// the reader records it). The old judge passed every such port (DP015):
// the external chain the other entries use was still there. With
// kube-proxy's sync metrics saying its last sync predates the Service's
// last change, the same difference is DP059 (a warning, and still no
// DP015: the rules do not match the API yet); the recorded metrics of
// svtb-node1 leave that open (its last sync was in the same second as the
// Service's change), so the fault cases give it metrics of a later sync, not a fault. On svtb-node1 of
// the externalIP bundle the entry rules were proved by reference counts,
// which count and do not name addresses: the entry is undetermined there,
// never missing.
func TestAddressEntryMissingInRecordedBundles(t *testing.T) {
	for _, tt := range []struct {
		name, scenario, node, addr string
		family                     string
		want                       string // code on node; "" for none of DP072/DP059
		frontend                   string
	}{
		{"LB IP on iptables", "dualstack-lb-etp-local", "svtb-node1", "192.0.2.20", "IPv4", report.CodeDPExternalAddressMissing, "loadBalancerIP 192.0.2.20:80/TCP"},
		{"IPv6 LB IP on iptables", "dualstack-lb-etp-local", "svtb-node1", "2001:db8::20", "IPv6", report.CodeDPExternalAddressMissing, "loadBalancerIP [2001:db8::20]:80/TCP"},
		{"LB IP on nftables", "dualstack-lb-etp-local", "svtb-node2", "192.0.2.20", "IPv4", report.CodeDPExternalAddressMissing, "loadBalancerIP 192.0.2.20:80/TCP"},
		{"externalIP on nftables", "dualstack-external-ipv4-only", "svtb-node2", "192.0.2.10", "IPv4", report.CodeDPExternalAddressMissing, "externalIP 192.0.2.10:80/TCP"},
		{"externalIP on iptables, entries by reference counts", "dualstack-external-ipv4-only", "svtb-node1", "192.0.2.10", "IPv4", "", ""},
	} {
		for _, pending := range []bool{false, true} {
			name := tt.name
			if pending {
				name += ", sync pending"
			}
			t.Run(name, func(t *testing.T) {
				b, err := bundle.Read("testdata/scenarios/" + tt.scenario)
				if err != nil {
					t.Fatal(err)
				}
				obs := nodeObservation(t, b, tt.node)
				removeAddressEntry(obs, tt.addr)
				if pending {
					syncPendingFor(b, obs, tt.family)
				} else {
					syncSettledFor(obs, tt.family)
				}
				got := map[string]report.Check{}
				for _, c := range b.Analyze("test").Layer(report.LayerDatapath).Checks {
					if c.Node == tt.node && c.Family == tt.family && (c.Code == report.CodeDPExternalAddressMissing || c.Code == report.CodeDPSyncPending || c.Code == report.CodeDPRulesMatch) {
						got[c.Code] = c
					}
				}
				want := tt.want
				if pending && want != "" {
					want = report.CodeDPSyncPending
				}
				if want == "" {
					if _, ok := got[report.CodeDPExternalAddressMissing]; ok {
						t.Fatalf("an entry proved by reference counts was judged missing: %v", got)
					}
					return
				}
				c, ok := got[want]
				if !ok || !strings.Contains(c.Message, tt.frontend) {
					t.Fatalf("want %s about %s, got %v", want, tt.frontend, got)
				}
				if want == report.CodeDPExternalAddressMissing && c.Status != report.StatusFail {
					t.Errorf("%s is %s, want fail", c.Code, c.Status)
				}
				if pending {
					if _, ok := got[report.CodeDPExternalAddressMissing]; ok {
						t.Errorf("a pending sync still fails the entry: %v", got)
					}
				}
				// Excused or not, the entry differs from the API: the
				// rules do not match it (yet), so no DP015 beside it.
				if _, ok := got[report.CodeDPRulesMatch]; ok {
					t.Errorf("DP015 beside %s: %v", want, got)
				}
			})
		}
	}
}

// nodeObservation is node's recorded observation in b.
func nodeObservation(t *testing.T, b *bundle.Bundle, node string) *collectorapi.Observation {
	t.Helper()
	for _, v := range b.Report.Nodes {
		if v.Node == node && v.Observation != nil {
			return v.Observation
		}
	}
	t.Fatalf("no observation of %s", node)
	return nil
}

// removeAddressEntry takes addr's entries out of what obs read, as the
// readers record a missing one: no KUBE-SERVICES rule for it, and a
// service-ips lookup that found no element.
func removeAddressEntry(obs *collectorapi.Observation, addr string) {
	if s := obs.Sections.IPTables; s != nil && s.Data != nil {
		for bi := range s.Data.Backends {
			for pi := range s.Data.Backends[bi].Ports {
				p := &s.Data.Backends[bi].Ports[pi]
				var kept []collectorapi.IPTablesEntryRule
				for _, e := range p.Entry {
					if !strings.HasPrefix(e.Destination, addr+"/") {
						kept = append(kept, e)
					}
				}
				p.Entry = kept
			}
		}
	}
	if s := obs.Sections.NFTables; s != nil && s.Data != nil {
		for ti := range s.Data.Tables {
			for pi := range s.Data.Tables[ti].Ports {
				p := &s.Data.Tables[ti].Ports[pi]
				for ei := range p.ServiceIPs {
					if e := &p.ServiceIPs[ei]; strings.HasPrefix(e.Key, addr+" . ") {
						*e = collectorapi.NFTablesElement{Map: e.Map, Key: e.Key}
					}
				}
			}
		}
	}
}

// syncSettledFor makes kube-proxy's metrics for family say it completed a
// sync one second before obs was read, with nothing queued since: the
// recorded Service changed more than ten seconds before the read, so that
// sync took it.
func syncSettledFor(obs *collectorapi.Observation, family string) {
	setSyncMetrics(obs, family, -time.Second, -1500*time.Millisecond)
}

// syncPendingFor makes the Service's last change one second before obs
// was read and kube-proxy's metrics for family say its last completed sync
// was two seconds before the read, with one queued since.
func syncPendingFor(b *bundle.Bundle, obs *collectorapi.Observation, family string) {
	read := obs.CollectedAt
	for i := range b.Input.Slices {
		s := &b.Input.Slices[i]
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[corev1.EndpointsLastChangeTriggerTime] = read.Add(-time.Second).Format(time.RFC3339Nano)
	}
	setSyncMetrics(obs, family, -2*time.Second, -500*time.Millisecond)
}

// setSyncMetrics gives obs kube-proxy's sync metrics for family: its last
// completed and last queued sync, at these offsets from the read.
func setSyncMetrics(obs *collectorapi.Observation, family string, last, queued time.Duration) {
	read := obs.CollectedAt
	sec := func(d time.Duration) float64 { return float64(read.Add(d).UnixNano()) / 1e9 }
	l := map[string]string{"ip_family": family}
	obs.Sections.Proxy.Data.Metrics = &collectorapi.ProxyMetrics{Samples: []collectorapi.MetricSample{
		{Name: "kubeproxy_sync_proxy_rules_duration_seconds_sum", Labels: l, Value: 0.5},
		{Name: "kubeproxy_sync_proxy_rules_duration_seconds_count", Labels: l, Value: 10},
		{Name: "kubeproxy_sync_proxy_rules_endpoint_changes_pending", Value: 0},
		{Name: "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds", Labels: l, Value: sec(queued)},
		{Name: "kubeproxy_sync_proxy_rules_last_timestamp_seconds", Labels: l, Value: sec(last)},
		{Name: "kubeproxy_sync_proxy_rules_service_changes_pending", Value: 0},
	}}
}
