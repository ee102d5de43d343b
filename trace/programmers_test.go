package trace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// These tests judge each programmer by its own selection rules
// (expect.Rules): what kube-proxy's IPVS proxier, the Cilium agent and
// Felix write where they differ from kube-proxy's iptables and nftables
// proxiers, and the sync-lag excuse every finding shares.

// ipvsVS is one virtual server as kube-proxy's IPVS proxier writes it.
func ipvsVS(kind, addr string, port uint16, found bool, rs ...collectorapi.IPVSRealServer) collectorapi.IPVSVirtualServer {
	return collectorapi.IPVSVirtualServer{Frontend: kind, PortName: "http", Address: addr, Port: port, Protocol: "TCP",
		Found: found, Scheduler: "rr", RealServers: rs}
}

func realServer(ip string) collectorapi.IPVSRealServer {
	return collectorapi.IPVSRealServer{Address: ip, Port: 8080, Weight: 1}
}

func ipvsNode(t *testing.T, k *collectorapi.LinkAddresses, vss ...collectorapi.IPVSVirtualServer) *collectorapi.Observation {
	o := observation(t, collectorapi.ModeIPVS, nil, nil)
	o.Sections.IPVS = okSection(&collectorapi.IPVSObservation{Available: true, VirtualServers: vss, KubeIPVS0: k})
	return o
}

// TestIPVSInternalLocalFallsBackToCluster: internalTrafficPolicy Local on
// a NodePort Service, judged on n3, which runs none of its endpoints.
// kube-proxy's IPVS syncEndpoint gives the ClusterIP virtual server the
// cluster endpoints (kubernetes#97081) where iptables and nftables drop.
func TestIPVSInternalLocalFallsBackToCluster(t *testing.T) {
	local := corev1.ServiceInternalTrafficPolicyLocal
	in := nodeInput(nodePortWeb, func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = &local })
	in.Nodes["n3"] = node("n3", true)
	both := []collectorapi.IPVSRealServer{realServer("10.244.1.5"), realServer("10.244.2.7")}
	obs := ipvsNode(t, nil, ipvsVS("clusterIP", "10.96.0.20", 80, true, both...), ipvsVS("nodePort", "10.0.0.13", 30080, true, both...))
	tr := judgeViews(t, in, plan.NodeView{Node: "n3", Observation: obs})
	requireNoNodeCheck(t, tr, "n3", report.CodeDPStaleEndpoints, report.CodeDPDroppedByDesign, report.CodeDPMissingEndpoints)
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSITPLocalFallback, "n3")
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n3")
	if s := tr.Layer(report.LayerDatapath).Status; s == report.StatusFail {
		t.Errorf("datapath %s: %v", s, keysOf(nodeCodes(tr, report.LayerDatapath, "n3")))
	}

	// Without a NodePort the Cluster list is empty (UsesClusterEndpoints):
	// no real server, the ClusterIP dropped by design.
	in = nodeInput(func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = &local })
	in.Nodes["n3"] = node("n3", true)
	tr = judgeViews(t, in, plan.NodeView{Node: "n3", Observation: ipvsNode(t, nil, ipvsVS("clusterIP", "10.96.0.20", 80, true))})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPDroppedByDesign, "n3")
	requireNoNodeCheck(t, tr, "n3", report.CodeDPIPVSITPLocalFallback)
}

// TestIPVSNodeAddressNotBound: an externalIP that is the node's own address
// is not bound to kube-ipvs0 (syncProxyRules: shouldBind :=
// !nodeAddressSet.Has(address)); a ClusterIP missing from it still fails.
func TestIPVSNodeAddressNotBound(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"10.0.0.11"} })
	both := []collectorapi.IPVSRealServer{realServer("10.244.1.5"), realServer("10.244.2.7")}
	vss := []collectorapi.IPVSVirtualServer{ipvsVS("clusterIP", "10.96.0.20", 80, true, both...), ipvsVS("externalIP", "10.0.0.11", 80, true, both...)}
	for _, tt := range []struct {
		name string
		k    collectorapi.LinkAddresses
		fail bool
	}{
		{"node address held on eth0", collectorapi.LinkAddresses{Name: "kube-ipvs0", Present: true, Checked: []string{"10.96.0.20", "10.0.0.11"},
			Addresses: []string{"10.96.0.20"}, LocalElsewhere: []string{"10.0.0.11"}}, false},
		{"ClusterIP not bound", collectorapi.LinkAddresses{Name: "kube-ipvs0", Present: true, Checked: []string{"10.96.0.20", "10.0.0.11"},
			LocalElsewhere: []string{"10.0.0.11"}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := tt.k
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ipvsNode(t, &k, vss...)})
			c, got := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPIPVSNotOnDummy]
			if got != tt.fail {
				t.Fatalf("%s reported %v, want %v: %s", report.CodeDPIPVSNotOnDummy, got, tt.fail, c.Message)
			}
		})
	}
}

// TestIPVSExternalVirtualServers: every external virtual server is compared:
// a missing externalIP one fails, a NodePort missing on one node address of
// two warns (it was found on the other), and their real servers are judged.
func TestIPVSExternalVirtualServers(t *testing.T) {
	in := nodeInput(nodePortWeb, func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.10"} })
	both := []collectorapi.IPVSRealServer{realServer("10.244.1.5"), realServer("10.244.2.7")}
	obs := ipvsNode(t, nil, ipvsVS("clusterIP", "10.96.0.20", 80, true, both...), ipvsVS("externalIP", "192.0.2.10", 80, false),
		ipvsVS("nodePort", "10.0.0.11", 30080, true, both...), ipvsVS("nodePort", "10.1.0.11", 30080, false))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSExternalMissing, "n1")
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSNodePortPartial, "n1")
	requireNoNodeCheck(t, tr, "n1", report.CodeDPNodePortMissing, report.CodeDPRulesMatch)
	if s := tr.Layer(report.LayerDatapath).Status; s != report.StatusFail {
		t.Errorf("datapath %s with an externalIP nobody load-balances", s)
	}
}

// zoneHinted gives web's two endpoints zone hints a and b, and n1 zone a.
func zoneHinted(in *input.Input) {
	for i, z := range []string{"a", "b"} {
		in.Slices[0].Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: z}}}
	}
	in.Nodes["n1"].Labels = map[string]string{corev1.LabelTopologyZone: "a"}
}

// TestCiliumTopologyHints: the Cilium agent ignores topology hints unless it
// runs with enable-service-topology (zone hints only), which svctrace cannot
// read: both selections pass, one that fits neither fails.
func TestCiliumTopologyHints(t *testing.T) {
	for _, tt := range []struct {
		name     string
		backends []string
		fail     bool
	}{
		{"default: every endpoint", []string{"10.244.1.5", "10.244.2.7"}, false},
		{"enable-service-topology: the zone's", []string{"10.244.1.5"}, false},
		{"another zone's only", []string{"10.244.2.7"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInput()
			zoneHinted(in)
			obs := ciliumObservation(t, "", ciliumFE("clusterIP", "10.96.0.20", 80, "TCP", 0, tt.backends...))
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			codes := nodeCodes(tr, report.LayerDatapath, "n1")
			_, stale := codes[report.CodeDPStaleEndpoints]
			_, missing := codes[report.CodeDPMissingEndpoints]
			if (stale || missing) != tt.fail {
				t.Errorf("stale %v missing %v, want a fault: %v (%v)", stale, missing, tt.fail, keysOf(codes))
			}
		})
	}
}

// TestCalicoReadyOnly: Felix writes Ready endpoints only
// (felix/bpf/proxy/syncer.go updateService), so a Service whose endpoints
// all terminate has no backends there: not a sync fault. kube-proxy's
// fallback to serving terminating endpoints is not Felix's.
func TestCalicoReadyOnly(t *testing.T) {
	in := nodeInput(nodePortWeb)
	for i := range in.Slices[0].Endpoints {
		c := &in.Slices[0].Endpoints[i].Conditions
		c.Ready, c.Serving, c.Terminating = ptr(false), ptr(true), ptr(true)
	}
	cal := calicoWeb()
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil, cal)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPMissingEndpoints, report.CodeDPEBPFExternal, report.CodeDPNoRules)

	// kube-proxy, on the other hand, falls back to them.
	ipt := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0)}}
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, ipt, nil)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPMissingEndpoints, "n1")
}

// TestLagExcusesEveryFinding: while kube-proxy has not applied the
// Service's latest change, a REJECT left from the no-endpoint state and a
// DNAT to the old target port are DP059, as missing endpoints are; once it
// has synced since, they are faults.
func TestLagExcusesEveryFinding(t *testing.T) {
	reject := iptRules(collectorapi.IPTablesBackendNFTables, 0)
	reject.Ports[0].Entry = nil
	reject.Ports[0].Filter = []collectorapi.IPTablesRule{{Raw: `-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "default/web:http has no endpoints" -j REJECT`,
		Comment: "default/web:http has no endpoints", Jump: "REJECT"}}
	oldPort := iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:9090", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))
	for _, tt := range []struct {
		name string
		b    collectorapi.IPTablesBackendObservation
		code string
	}{
		{"REJECT from the no-endpoint state", reject, report.CodeDPRejectWithEPs},
		{"DNAT to the old targetPort", oldPort, report.CodeDPWrongDNATPort},
	} {
		for _, pending := range []bool{true, false} {
			in := nodeInput()
			trigger := "1970-01-01T00:16:20Z" // synced long after
			if pending {
				trigger = "1970-01-01T00:16:39.4Z" // after the last sync (998.9 s)
			}
			in.Slices[0].Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: trigger}
			ipt := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{tt.b}}
			obs := withSyncMetrics(observation(t, collectorapi.ModeIPTables, ipt, nil), syncMetrics("IPv4", 998.9, 998.7, 0, 0.05))
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			codes := nodeCodes(tr, report.LayerDatapath, "n1")
			_, fault := codes[tt.code]
			_, lag := codes[report.CodeDPSyncPending]
			if fault == pending || lag != pending {
				t.Errorf("%s, sync pending %v: %s %v, %s %v; checks %v", tt.name, pending, tt.code, fault, report.CodeDPSyncPending, lag, keysOf(codes))
			}
		}
	}
}

// TestRejectBehindDNATIsALeftover: iptables mode hooks filter KUBE-SERVICES
// from FORWARD and OUTPUT only, after nat's DNAT, so a "has no endpoints"
// REJECT beside an entry that DNATs to endpoints rejects nothing (kube-router
// puts such REJECTs back when it restores the filter table it saved before
// kube-proxy's sync): a warning naming the restorer, not DP016. Without the
// DNAT to endpoints the REJECT is what traffic meets.
func TestRejectBehindDNATIsALeftover(t *testing.T) {
	rejectRule := collectorapi.IPTablesRule{Raw: `-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "default/web:http has no endpoints" -j REJECT`,
		Comment: "default/web:http has no endpoints", Jump: "REJECT"}
	for _, tt := range []struct {
		name     string
		enforcer string
		eps      bool
		want     []string
		absent   []string
		mention  string
	}{
		{"kube-router restored it", "kube-router", true, []string{report.CodeDPRejectShadowed, report.CodeDPRulesMatch}, []string{report.CodeDPRejectWithEPs}, "kube-router restores the whole filter table"},
		{"no known restorer", "", true, []string{report.CodeDPRejectShadowed, report.CodeDPRulesMatch}, []string{report.CodeDPRejectWithEPs}, "Another program rewrote"},
		{"entry without endpoints", "kube-router", false, []string{report.CodeDPRejectWithEPs}, []string{report.CodeDPRejectShadowed}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))
			if !tt.eps {
				b = iptRules(collectorapi.IPTablesBackendNFTables, 0)
			}
			b.PolicyEnforcer = tt.enforcer
			b.Ports[0].Filter = []collectorapi.IPTablesRule{rejectRule}
			ipt := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{b}}
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, ipt, nil)})
			for _, c := range tt.want {
				requireNodeCheck(t, tr, report.LayerDatapath, c, "n1")
			}
			if chk, ok := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPRejectShadowed]; ok && !strings.Contains(chk.Message, tt.mention) {
				t.Errorf("message %q does not say %q", chk.Message, tt.mention)
			}
			requireNoNodeCheck(t, tr, "n1", tt.absent...)
		})
	}
}
