package trace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func nodePortWeb(s *corev1.Service) {
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.Ports[0].NodePort = 30080
}

// ipvsObservation is kube-proxy's IPVS proxier for web on n1: the
// ClusterIP virtual server and one per node IP for the NodePort, with the
// same real servers.
func ipvsObservation(t *testing.T, rs ...collectorapi.IPVSRealServer) *collectorapi.Observation {
	o := observation(t, collectorapi.ModeIPVS, nil, nil)
	vs := func(kind, addr string, port uint16) collectorapi.IPVSVirtualServer {
		return collectorapi.IPVSVirtualServer{Frontend: kind, PortName: "http", Address: addr, Port: port, Protocol: "TCP",
			Found: true, Scheduler: "rr", RealServers: rs}
	}
	o.Sections.IPVS = okSection(&collectorapi.IPVSObservation{Available: true, VirtualServers: []collectorapi.IPVSVirtualServer{
		vs("clusterIP", "10.96.0.20", 80), vs("nodePort", "10.0.0.11", 30080), vs("nodePort", "127.0.0.1", 30080)}})
	return o
}

func TestIPVSNodePortHealthy(t *testing.T) {
	in := nodeInput(nodePortWeb)
	obs := ipvsObservation(t, collectorapi.IPVSRealServer{Address: "10.244.1.5", Port: 8080, Weight: 1},
		collectorapi.IPVSRealServer{Address: "10.244.2.7", Port: 8080, Weight: 1})
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	got := nodeCodes(tr, report.LayerDatapath, "n1")
	for _, bad := range []string{report.CodeDPNodePortMissing, report.CodeDPNoRules, report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints, report.CodeDPUnequalShares} {
		if c, ok := got[bad]; ok {
			t.Errorf("healthy IPVS NodePort Service: %s %s", bad, c.Message)
		}
	}
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSDeprecated, "n1")
	if s := tr.Layer(report.LayerDatapath).Status; s == report.StatusFail {
		t.Fatalf("datapath %s", s)
	}
}

func TestIPVSDrainingRealServerIsNotAnEndpoint(t *testing.T) {
	in := nodeInput(nodePortWeb)
	// kube-proxy sets a terminating endpoint's weight to 0 and keeps it
	// until its connections end; the new one has weight 1.
	obs := ipvsObservation(t, collectorapi.IPVSRealServer{Address: "10.244.1.5", Port: 8080, Weight: 1},
		collectorapi.IPVSRealServer{Address: "10.244.2.7", Port: 8080, Weight: 1},
		collectorapi.IPVSRealServer{Address: "10.244.2.99", Port: 8080, Weight: 0, ActiveConns: 3})
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	if c, ok := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPStaleEndpoints]; ok {
		t.Fatalf("a weight-0 real server reported stale: %s", c.Message)
	}
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")
}

func TestIPVSNodePortMissing(t *testing.T) {
	in := nodeInput(nodePortWeb)
	obs := ipvsObservation(t, collectorapi.IPVSRealServer{Address: "10.244.1.5", Port: 8080, Weight: 1},
		collectorapi.IPVSRealServer{Address: "10.244.2.7", Port: 8080, Weight: 1})
	vss := obs.Sections.IPVS.Data.VirtualServers
	for i := range vss {
		if vss[i].Frontend == "nodePort" {
			vss[i].Found, vss[i].RealServers = false, nil
		}
	}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPNodePortMissing, "n1")
}

// ciliumObservation is a kube-proxy-free node: no kube-proxy answers and
// Cilium's LB maps hold the frontends.
func ciliumObservation(t *testing.T, errText string, fes ...collectorapi.CiliumFrontend) *collectorapi.Observation {
	o := observation(t, "", nil, nil)
	o.Sections.EBPF = okSection(&collectorapi.EBPFObservation{BPFFSRoot: "/sys/fs/bpf",
		Cilium: &collectorapi.CiliumObservation{Detected: true, LayoutNote: "test", Frontends: fes, Error: errText},
		Calico: &collectorapi.CalicoObservation{}})
	return o
}

func ciliumFE(kind, addr string, port uint16, proto string, scope uint8, backends ...string) collectorapi.CiliumFrontend {
	fe := collectorapi.CiliumFrontend{Frontend: kind, Address: addr, Port: port, Protocol: proto, Scope: scope, Found: len(backends) > 0}
	for i, b := range backends {
		fe.Backends = append(fe.Backends, collectorapi.CiliumBackend{Slot: uint16(i + 1), BackendID: uint32(i + 1), Found: true,
			Address: b, Port: 8080, Protocol: proto, State: "active"})
	}
	fe.BackendCount = uint16(len(backends))
	return fe
}

func TestCiliumNodePortHealthy(t *testing.T) {
	in := nodeInput(nodePortWeb)
	obs := ciliumObservation(t, "",
		ciliumFE("clusterIP", "10.96.0.20", 80, "TCP", 0, "10.244.1.5", "10.244.2.7"),
		ciliumFE("nodePort", "0.0.0.0", 30080, "TCP", 0, "10.244.1.5", "10.244.2.7"))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	got := nodeCodes(tr, report.LayerDatapath, "n1")
	for _, bad := range []string{report.CodeDPNodePortMissing, report.CodeDPNoRules, report.CodeDPStaleEndpoints, report.CodeDPUnequalShares} {
		if c, ok := got[bad]; ok {
			t.Errorf("healthy Cilium NodePort Service: %s %s", bad, c.Message)
		}
	}
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPEBPFOwner, "n1")
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")
}

// TestCiliumFrontendsPerProtocolAndFamily: 53/UDP and 53/TCP, and the
// IPv6 ClusterIP of a dual-stack Service, are separate frontends; their
// backends must not be merged into one port's.
func TestCiliumFrontendsPerProtocolAndFamily(t *testing.T) {
	in := nodeInput()
	obs := ciliumObservation(t, "",
		ciliumFE("clusterIP", "10.96.0.20", 80, "UDP", 0, "10.244.1.5", "10.244.2.7"),
		ciliumFE("clusterIP", "10.96.0.20", 80, "TCP", 0, "10.244.1.5", "10.244.2.7"),
		ciliumFE("clusterIP", "fd00::20", 80, "TCP", 0, "fd00:1::5", "fd00:2::7"),
		ciliumFE("clusterIP", "10.96.0.20", 80, "TCP", 1, "10.244.1.5"))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	got := nodeCodes(tr, report.LayerDatapath, "n1")
	for _, bad := range []string{report.CodeDPStaleEndpoints, report.CodeDPUnequalShares, report.CodeDPMissingEndpoints} {
		if c, ok := got[bad]; ok {
			t.Errorf("%s: %s", bad, c.Message)
		}
	}
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")
}

// TestCiliumUnreadableMapsAreUnknown: maps of a layout the reader does not
// know are not a kube-proxy failure.
func TestCiliumUnreadableMapsAreUnknown(t *testing.T) {
	in := nodeInput()
	obs := ciliumObservation(t, "could not read this Cilium version's maps: cilium_lb4_services_v2 has key 16/value 12 bytes, this reader knows 12/12")
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	got := nodeCodes(tr, report.LayerDatapath, "n1")
	for _, bad := range []string{report.CodeDPNoRules, report.CodeDPProxyUnreachable, report.CodeDPNodePortMissing, report.CodeDPStaleEndpoints} {
		if c, ok := got[bad]; ok {
			t.Fatalf("undecoded maps reported as %s: %s", bad, c.Message)
		}
	}
	c, ok := got[report.CodeDPEBPFLayoutUnknown]
	if !ok || c.Status != report.StatusUnknown || !strings.Contains(c.Message, "could not read this Cilium version's maps") {
		t.Fatalf("no unknown %s: %+v", report.CodeDPEBPFLayoutUnknown, c)
	}
	if s := tr.Layer(report.LayerDatapath).Status; s == report.StatusFail {
		t.Fatalf("datapath %s for maps the collector could not decode", s)
	}
}
