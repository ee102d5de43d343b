package trace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// etpLocalIPT is web as a NodePort Service with externalTrafficPolicy Local
// in iptables mode on n1, laid out as the real kube-proxy v1.37.2 wrote it on
// the testbed (collectors/testdata/iptables/testbed-node1.save, nf-fixtures/lb):
// KUBE-EXT short-circuits Pod and LOCAL sources to KUBE-SVC, then jumps to
// KUBE-SVL, which holds this node's endpoint. last is that final jump's target.
func etpLocalIPT(last string, local ...collectorapi.IPTablesEndpointJump) *collectorapi.IPTablesObservation {
	b := iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))
	p := &b.Ports[0]
	p.NodePort = 30080
	p.NodePorts = []collectorapi.IPTablesRule{{Raw: `-A KUBE-NODEPORTS -p tcp -m comment --comment "default/web:http" -m tcp --dport 30080 -j KUBE-EXT-X`, Jump: "KUBE-EXT-X"}}
	p.Local = &collectorapi.IPTablesChain{Name: "KUBE-SVL-X", Exists: true, Selection: local}
	ext := &collectorapi.IPTablesChain{Name: "KUBE-EXT-X", Exists: true, Rules: []collectorapi.IPTablesRule{
		{Raw: `-A KUBE-EXT-X -s 10.244.0.0/16 -m comment --comment "pod traffic for default/web:http external destinations" -j KUBE-SVC-X`, Source: "10.244.0.0/16", Jump: "KUBE-SVC-X"},
		{Raw: `-A KUBE-EXT-X -m comment --comment "masquerade LOCAL traffic for default/web:http external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ`, SrcType: "LOCAL", Jump: "KUBE-MARK-MASQ"},
		{Raw: `-A KUBE-EXT-X -m comment --comment "route LOCAL traffic for default/web:http external destinations" -m addrtype --src-type LOCAL -j KUBE-SVC-X`, SrcType: "LOCAL", Jump: "KUBE-SVC-X"},
	}}
	if last != "" {
		ext.Rules = append(ext.Rules, collectorapi.IPTablesRule{Raw: "-A KUBE-EXT-X -j " + last, Jump: last})
	}
	p.External = ext
	return &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{b}}
}

// nodePortLocal makes the test Service a NodePort (30080) with
// externalTrafficPolicy Local.
func nodePortLocal(s *corev1.Service) {
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.Ports[0].NodePort = 30080
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
}

// TestExternalPathCompared: the ClusterIP chain can be right while the path
// NodePort traffic takes is not. Each case was judged healthy before the
// external chain was compared.
func TestExternalPathCompared(t *testing.T) {
	local := jump("KUBE-SEP-1", "10.244.1.5:8080", 1)
	stale := jump("KUBE-SEP-9", "10.244.9.9:8080", 1)
	for _, tt := range []struct {
		name string
		ipt  *collectorapi.IPTablesObservation
		want string // "" = healthy
	}{
		{"healthy", etpLocalIPT("KUBE-SVL-X", local), ""},
		{"local chain holds a gone endpoint", etpLocalIPT("KUBE-SVL-X", stale), report.CodeDPExternalWrong},
		{"external traffic sent to the cluster chain", etpLocalIPT("KUBE-SVC-X", local), report.CodeDPExternalWrong},
		{"no jump to any endpoint chain", etpLocalIPT("", local), report.CodeDPExternalWrong},
		{"external chain missing", func() *collectorapi.IPTablesObservation {
			o := etpLocalIPT("KUBE-SVL-X", local)
			o.Backends[0].Ports[0].External.Exists = false
			o.Backends[0].Ports[0].External.Rules = nil
			return o
		}(), report.CodeDPExternalMissing},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := judgeViews(t, nodeInput(nodePortLocal), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, tt.ipt, nil)})
			got := nodeCodes(tr, report.LayerDatapath, "n1")
			if tt.want == "" {
				assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPExternalWrong, report.CodeDPExternalMissing)
				if _, ok := got[report.CodeDPRulesMatch]; !ok {
					t.Errorf("healthy external path: %v", keysOf(got))
				}
				return
			}
			if _, ok := got[tt.want]; !ok {
				t.Fatalf("want %s, got %v", tt.want, keysOf(got))
			}
			if _, ok := got[report.CodeDPRulesMatch]; ok {
				t.Errorf("%s and %s together", tt.want, report.CodeDPRulesMatch)
			}
		})
	}
}

// TestExternalPathComparedNFTables: the same in nftables mode, laid out as the
// real kube-proxy wrote nf-fixtures/extip on the testbed
// (collectors/testdata/nftables/testbed-node2.list).
func TestExternalPathComparedNFTables(t *testing.T) {
	mk := func(localEP string) *collectorapi.NFTablesObservation {
		o := nftObservation("10.244.1.5:8080", "10.244.2.7:8080")
		p := &o.Tables[0].Ports[0]
		p.NodePort = 30080
		p.ServiceNodePorts = []collectorapi.NFTablesElement{{Map: "service-nodeports", Key: "tcp . 30080", Found: true, Verdict: "goto external-X", Target: "external-X"}}
		p.Local = &collectorapi.NFTablesChain{Name: "local-X", Exists: true, Rules: []collectorapi.NFTablesRule{{Text: "meta l4proto tcp dnat to " + localEP, DNAT: localEP}}}
		p.External = &collectorapi.NFTablesChain{Name: "external-X", Exists: true, Rules: []collectorapi.NFTablesRule{
			{Text: "ip saddr 10.244.0.0/16 goto service-X", Comment: "short-circuit pod traffic", SourceMatch: "10.244.0.0/16", Verdict: "goto", Target: "service-X"},
			{Text: "fib saddr type local meta mark set meta mark | 0x00004000", Comment: "masquerade local traffic", Mark: "0x00004000"},
			{Text: "fib saddr type local goto service-X", Comment: "short-circuit local traffic", Verdict: "goto", Target: "service-X"},
			{Text: "goto local-X", Verdict: "goto", Target: "local-X"},
		}}
		return o
	}
	tr := judgeViews(t, nodeInput(nodePortLocal), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeNFTables, nil, mk("10.244.1.5:8080"))})
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPExternalWrong, report.CodeDPExternalMissing)
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")

	tr = judgeViews(t, nodeInput(nodePortLocal), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeNFTables, nil, mk("10.244.2.7:8080"))})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPExternalWrong, "n1")
}

// TestExternalChainExcuses: the external chain is one of the port's
// Frontends, so the excuses compareFrontends applies to every entry apply
// to it: a pending kube-proxy sync explains it whole, and a slice change
// during the read explains only the endpoints whose address changed (an
// unrelated stale endpoint stays a fault, as it does in the ClusterIP's
// chain).
func TestExternalChainExcuses(t *testing.T) {
	stale := jump("KUBE-SEP-9", "10.244.9.9:8080", 1)
	t.Run("pending sync", func(t *testing.T) {
		in := nodeInput(nodePortLocal)
		in.Slices[0].Annotations = map[string]string{corev1.EndpointsLastChangeTriggerTime: "1970-01-01T00:16:39.4Z"}
		obs := withSyncMetrics(observation(t, collectorapi.ModeIPTables, etpLocalIPT("KUBE-SVL-X", stale), nil), syncMetrics("IPv4", 998.9, 998.7, 0, 0.05))
		tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
		// The chain differs from the API, excused or not: no DP015, as
		// for the ClusterIP's endpoints (comparePort).
		assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPExternalWrong, report.CodeDPRulesMatch)
		c, ok := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPSyncPending]
		if !ok || !strings.Contains(c.Message, "external chain KUBE-EXT-X") {
			t.Fatalf("want %s about the external chain, got %v (%q)", report.CodeDPSyncPending, keysOf(nodeCodes(tr, report.LayerDatapath, "n1")), c.Message)
		}
	})
	for _, tt := range []struct {
		name    string
		changed []string
		want    string
	}{
		// The local endpoint replaced the stale one in the slice during the
		// read: the chain may be on either side of that change.
		{"the endpoints in question changed", []string{"10.244.9.9", "10.244.1.5"}, report.CodeDPSyncPending},
		// Another endpoint changed: nothing explains the chain holding
		// 10.244.9.9 and lacking 10.244.1.5. The old judge excused the
		// whole external chain on any change.
		{"another endpoint changed", []string{"10.244.3.3"}, report.CodeDPExternalWrong},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInput(nodePortLocal)
			in.SlicesChangedDuringRead = []input.SliceChange{{Slice: "web-abc", Type: "MODIFIED", Family: corev1.IPv4Protocol, Addresses: tt.changed}}
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, etpLocalIPT("KUBE-SVL-X", stale), nil)})
			got := nodeCodes(tr, report.LayerDatapath, "n1")
			if _, ok := got[tt.want]; !ok {
				t.Fatalf("want %s, got %v", tt.want, keysOf(got))
			}
			if tt.want == report.CodeDPSyncPending {
				assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPExternalWrong)
			}
		})
	}
}

// TestExternalChainWithClusterIPDropped: internalTrafficPolicy Local with
// no endpoint on n2 drops ClusterIP traffic there by design (DP027), but
// NodePort traffic under externalTrafficPolicy Cluster still goes through
// KUBE-EXT to every endpoint; a stale endpoint in that path is a fault.
// The old judge compared the external chain only on the ClusterIP's
// healthy path and said nothing here.
func TestExternalChainWithClusterIPDropped(t *testing.T) {
	itpLocal := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
		local := corev1.ServiceInternalTrafficPolicyLocal
		s.Spec.InternalTrafficPolicy = &local
	}
	in := nodeInput(itpLocal)
	// n3 runs none of web's endpoints.
	in.Nodes["n3"] = node("n3", true)
	mk := func(sel ...collectorapi.IPTablesEndpointJump) *collectorapi.IPTablesObservation {
		b := iptRules(collectorapi.IPTablesBackendNFTables, 0, sel...)
		p := &b.Ports[0]
		p.NodePort = 30080
		p.Entry = nil // the ClusterIP is dropped in the filter table
		p.Filter = []collectorapi.IPTablesRule{{Raw: `-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "default/web:http has no local endpoints" -m tcp --dport 80 -j DROP`,
			Comment: "default/web:http has no local endpoints", Jump: "DROP"}}
		p.NodePorts = []collectorapi.IPTablesRule{{Raw: `-A KUBE-NODEPORTS -p tcp -m comment --comment "default/web:http" -m tcp --dport 30080 -j KUBE-EXT-X`, Jump: "KUBE-EXT-X"}}
		p.External = &collectorapi.IPTablesChain{Name: "KUBE-EXT-X", Exists: true, Rules: []collectorapi.IPTablesRule{
			{Raw: `-A KUBE-EXT-X -m comment --comment "masquerade traffic for default/web:http external destinations" -j KUBE-MARK-MASQ`, Jump: "KUBE-MARK-MASQ"},
			{Raw: "-A KUBE-EXT-X -j KUBE-SVC-X", Jump: "KUBE-SVC-X"},
		}}
		return &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{b}}
	}
	healthy := mk(jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))
	tr := judgeViews(t, in, plan.NodeView{Node: "n3", Observation: observation(t, collectorapi.ModeIPTables, healthy, nil)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPDroppedByDesign, "n3")
	assertNoCode(t, tr, report.LayerDatapath, "n3", report.CodeDPExternalWrong, report.CodeDPExternalMissing)

	stale := mk(jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-9", "10.244.9.9:8080", 0.5))
	tr = judgeViews(t, in, plan.NodeView{Node: "n3", Observation: observation(t, collectorapi.ModeIPTables, stale, nil)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPExternalWrong, "n3")
}

// TestExternalChainMissingNFTables: nftables' external- chain missing is
// DP028, as KUBE-EXT's is.
func TestExternalChainMissingNFTables(t *testing.T) {
	nodePort := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
	}
	o := nftObservation("10.244.1.5:8080", "10.244.2.7:8080")
	p := &o.Tables[0].Ports[0]
	p.NodePort = 30080
	p.ServiceNodePorts = []collectorapi.NFTablesElement{{Map: "service-nodeports", Key: "tcp . 30080", Found: true, Verdict: "goto external-X", Target: "external-X"}}
	p.External = &collectorapi.NFTablesChain{Name: "external-X"}
	tr := judgeViews(t, nodeInput(nodePort), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeNFTables, nil, o)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPExternalMissing, "n1")
}
