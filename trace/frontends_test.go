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

// The external entries of every datapath go through one comparer
// (compareFrontends): the same lag excuse, the same counting of problems.

// TestFrontendsEBPFMissingExplainedBySliceChange: an externalIP entry the
// Cilium agent has not written, while the Service's EndpointSlice changed
// during the read, is the agent catching up (DP059), as a missing IPVS
// virtual server is; without the change it is DP044.
func TestFrontendsEBPFMissingExplainedBySliceChange(t *testing.T) {
	c := ciliumFixture(t, "default/web")
	for i := range c.Frontends {
		if c.Frontends[i].Frontend == "externalIP" {
			c.Frontends[i].Found, c.Frontends[i].Backends = false, nil
		}
	}
	tr := judgeViews(t, ciliumWeb(), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, c, nil)})
	if m := nodeMessages(tr, "n1", report.CodeDPEBPFExternal); !strings.Contains(m, "externalIP 192.0.2.9:80 for default/web:http (80/TCP) is not in the services map") {
		t.Fatalf("missing externalIP entry: %q", m)
	}
	requireNoPortMatch(t, tr, "n1", "default/web:http (80/TCP)")

	in := ciliumWeb(func(in *input.Input) {
		in.SlicesChangedDuringRead = []input.SliceChange{{Slice: "web-v4", Type: "MODIFIED", Family: "IPv4", Addresses: []string{"10.244.2.7"}}}
	})
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, c, nil)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPEBPFExternal)
	if m := nodeMessages(tr, "n1", report.CodeDPSyncPending); !strings.Contains(m, "no entry externalIP 192.0.2.9:80 in its services map yet") {
		t.Fatalf("a missing entry during a slice change is DP059: %q", m)
	}
}

// TestFrontendsEBPFFaultIsAProblem: an external entry that carries the
// wrong externalTrafficPolicy is a problem of the port, so the port's
// rules do not "match" beside it (IPVS's rule for its virtual servers).
func TestFrontendsEBPFFaultIsAProblem(t *testing.T) {
	in := ciliumWeb(func(in *input.Input) {
		in.Service.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		in.Service.Spec.HealthCheckNodePort = 0
	})
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/web"), nil)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPEBPFExternal, "n1")
	requireNoPortMatch(t, tr, "n1", "default/web:http (80/TCP)")
	// One finding per entry: the policy it carries explains the backends
	// it selects.
	if n := strings.Count(nodeMessages(tr, "n1", report.CodeDPEBPFExternal), "nodePort 0.0.0.0:30080/TCP external scope"); n != 1 {
		t.Errorf("%d findings on the NodePort entry, want 1:\n%s", n, nodeMessages(tr, "n1", report.CodeDPEBPFExternal))
	}
}

// TestFrontendsCalicoNodePortPartial: Felix serves the NodePort on its
// wildcard but not on the node address 10.0.0.11: a fault of that entry
// (not DP020, which says the NodePort is served nowhere), and no DP015.
func TestFrontendsCalicoNodePortPartial(t *testing.T) {
	be := func(o uint32, ip string) collectorapi.CalicoBackend {
		return collectorapi.CalicoBackend{Ordinal: o, Found: true, Address: ip, Port: 8080}
	}
	cal := calicoWeb(be(0, "10.244.1.5"), be(1, "10.244.2.7"))
	cal.Frontends[1] = collectorapi.CalicoFrontend{Frontend: "nodePort", Address: "10.0.0.11", Port: 30080, Protocol: "TCP", SourceCIDR: "0.0.0.0/0"}
	tr := judgeViews(t, nodeInput(nodePortWeb), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil, cal)})
	if m := nodeMessages(tr, "n1", report.CodeDPEBPFExternal); !strings.Contains(m, "Calico nodePort 10.0.0.11:30080/TCP for default/web:http (80/TCP) is not in the NAT frontend map") ||
		strings.Contains(m, "255.255.255.255") {
		t.Fatalf("the one missing entry: %q", m)
	}
	requireNoNodeCheck(t, tr, "n1", report.CodeDPRulesMatch, report.CodeDPNodePortMissing)
	if tr.Layer(report.LayerDatapath).Status != report.StatusFail {
		t.Errorf("datapath %s, want fail", tr.Layer(report.LayerDatapath).Status)
	}

	// Missing on every address: the NodePort is not served at all, which
	// DP020 says once, as for IPVS.
	cal.Frontends[2] = collectorapi.CalicoFrontend{Frontend: "nodePort", Address: "255.255.255.255", Port: 30080, Protocol: "TCP", SourceCIDR: "0.0.0.0/0"}
	tr = judgeViews(t, nodeInput(nodePortWeb), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil, cal)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPNodePortMissing, "n1")
	requireNoNodeCheck(t, tr, "n1", report.CodeDPEBPFExternal, report.CodeDPRulesMatch)
}

// TestFrontendsCalicoBrokenExternalSlot: a NodePort entry whose ordinal
// has no backend entry is a broken slot of that entry and a problem.
func TestFrontendsCalicoBrokenExternalSlot(t *testing.T) {
	be := func(o uint32, ip string) collectorapi.CalicoBackend {
		return collectorapi.CalicoBackend{Ordinal: o, Found: true, Address: ip, Port: 8080}
	}
	cal := calicoWeb(be(0, "10.244.1.5"), be(1, "10.244.2.7"))
	nb := append([]collectorapi.CalicoBackend(nil), cal.Frontends[1].Backends...)
	nb[1] = collectorapi.CalicoBackend{Ordinal: 1}
	cal.Frontends[1].Backends = nb
	tr := judgeViews(t, nodeInput(nodePortWeb), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil, cal)})
	if m := nodeMessages(tr, "n1", report.CodeDPEBPFBrokenSlot); !strings.Contains(m, "nodePort 10.0.0.11:30080/TCP") || !strings.Contains(m, "ordinal 1 of id 1 has no backend entry") {
		t.Fatalf("broken NodePort slot: %q", m)
	}
	requireNoNodeCheck(t, tr, "n1", report.CodeDPRulesMatch)
}

// TestFrontendsIPVSRecorded: the recorded NodePort Service (a virtual
// server on each of the node's two addresses) through the same comparer:
// one address without its virtual server is DP064, a warning that leaves
// DP015 standing (nodePortAddresses may leave it out on purpose); a real
// server one virtual server lacks is DP038, or DP059 while that endpoint's
// slice changed during the read.
func TestFrontendsIPVSRecorded(t *testing.T) {
	in, obs := ipvsRecorded(t, "np")
	vss := obs.Sections.IPVS.Data.VirtualServers
	for i := range vss {
		if vss[i].Frontend == "nodePort" && vss[i].Address == "10.251.0.1" {
			vss[i].Found, vss[i].RealServers = false, nil
		}
	}
	tr := judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: obs})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSNodePortPartial, obs.NodeName)
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, obs.NodeName)
	requireNoNodeCheck(t, tr, obs.NodeName, report.CodeDPNodePortMissing, report.CodeDPIPVSExternalMissing)

	in, obs = ipvsRecorded(t, "np")
	vss = obs.Sections.IPVS.Data.VirtualServers
	for i := range vss {
		if vss[i].Frontend == "nodePort" && vss[i].Address == "10.251.0.1" {
			vss[i].RealServers = vss[i].RealServers[:1:1]
		}
	}
	lost := vss[0].RealServers[1].Address
	tr = judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: obs})
	if m := nodeMessages(tr, obs.NodeName, report.CodeDPIPVSExternalRealServers); !strings.Contains(m, "nodePort 10.251.0.1:30080") || !strings.Contains(m, lost) {
		t.Fatalf("real server missing behind one NodePort address: %q", m)
	}
	requireNoNodeCheck(t, tr, obs.NodeName, report.CodeDPRulesMatch)

	in.SlicesChangedDuringRead = []input.SliceChange{{Slice: "np", Type: "MODIFIED", Family: "IPv4", Addresses: []string{lost}}}
	tr = judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: obs})
	requireNoNodeCheck(t, tr, obs.NodeName, report.CodeDPIPVSExternalRealServers)
	if m := nodeMessages(tr, obs.NodeName, report.CodeDPSyncPending); !strings.Contains(m, "nodePort 10.251.0.1:30080 holds none and lacks "+lost) {
		t.Fatalf("a real server whose slice changed during the read is DP059: %q", m)
	}
}

// requireNoPortMatch fails when node's DP015 says port's rules match.
func requireNoPortMatch(t *testing.T, tr *report.ServiceTrace, node, port string) {
	t.Helper()
	if m := nodeMessages(tr, node, report.CodeDPRulesMatch); strings.Contains(m, port+" with") {
		t.Errorf("DP015 beside a fault of the port: %s", m)
	}
}
