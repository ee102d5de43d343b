package trace

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func socketsSection(pods ...collectorapi.PodSockets) *collectorapi.Section[collectorapi.SocketsObservation] {
	return &collectorapi.Section[collectorapi.SocketsObservation]{Status: collectorapi.StatusOK,
		Data: &collectorapi.SocketsObservation{HostPID: true, ProcessesScanned: 40, Pods: pods}}
}

func podSockets(name, ip string, ls ...collectorapi.Listener) collectorapi.PodSockets {
	return collectorapi.PodSockets{PodName: name, PodUID: "uid-" + name, IPs: []string{ip}, Found: true, PID: 4242,
		Command: "echo", NetNS: "procnet:[4026532714]", Listeners: ls}
}

func tcp(addr string, port uint16) collectorapi.Listener {
	fam := "IPv4"
	if strings.Contains(addr, ":") {
		fam = "IPv6"
	}
	return collectorapi.Listener{Protocol: "TCP", Address: addr, Port: port, Family: fam}
}

func refusedProbe(addr string) *collectorapi.Section[collectorapi.ProbeObservation] {
	return &collectorapi.Section[collectorapi.ProbeObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.ProbeObservation{Probes: []collectorapi.Probe{
		{Target: "endpoint", Address: addr, Protocol: "TCP", Outcome: "failed", ErrorClass: "refused", LatencyMillis: 0.3}}}}
}

// socketViews: n1 probes web-2 (on n2) and reads web-1's sockets; n2 reads
// web-2's sockets as given.
func socketViews(t *testing.T, web2 collectorapi.PodSockets, probeRefused bool) []plan.NodeView {
	n1 := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	n1.Sections.Sockets = socketsSection(podSockets("web-1", "10.244.1.5", tcp("::", 8080)))
	if probeRefused {
		n1.Sections.Probe = refusedProbe("10.244.2.7:8080")
	}
	n2 := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	n2.Sections.Sockets = socketsSection(web2)
	return []plan.NodeView{{Node: "n1", Observation: n1}, {Node: "n2", Observation: n2}}
}

func TestSocketsLoopbackOnlyIsOneFindingWithTheProbe(t *testing.T) {
	in := nodeInput()
	tr := judgeViews(t, in, socketViews(t, podSockets("web-2", "10.244.2.7", tcp("127.0.0.1", 8080), tcp("::1", 8080)), true)...)
	eps2 := nodeCodes(tr, report.LayerEndpoints, "n2")
	c, ok := eps2[report.CodeEpsLoopbackOnly]
	if !ok {
		t.Fatalf("no %s on n2: %v", report.CodeEpsLoopbackOnly, keysOf(eps2))
	}
	for _, want := range []string{"pod web-2", "127.0.0.1:8080/TCP", "[::1]:8080/TCP", "Pod IP 10.244.2.7", "from n1 was refused", "0.0.0.0"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("loopback finding lacks %q: %s", want, c.Message)
		}
	}
	if c.Status != report.StatusFail || c.Evidence == nil || !strings.Contains(strings.Join(c.Evidence.Raw, "\n"), "probe from n1") {
		t.Errorf("want a fail with the socket lines and the probe as evidence: %+v", c)
	}
	if _, ok := nodeCodes(tr, report.LayerEndpoints, "")[report.CodeEpsRefused]; ok {
		t.Errorf("the refusal the sockets explain is reported a second time as %s", report.CodeEpsRefused)
	}
	if _, ok := nodeCodes(tr, report.LayerEndpoints, "n1")[report.CodeEpsListening]; !ok {
		t.Errorf("web-1 listening on [::]:8080 not reported on n1: %v", keysOf(nodeCodes(tr, report.LayerEndpoints, "n1")))
	}
	if tr.Verdict.FirstFailingLayer != report.LayerEndpoints || !strings.Contains(tr.Verdict.LikelyCause, "only on") {
		t.Errorf("verdict %+v, want the loopback finding as the likely cause", tr.Verdict)
	}
}

func TestCollectorMetadataSaysHostPID(t *testing.T) {
	in := nodeInput()
	views := socketViews(t, podSockets("web-2", "10.244.2.7", tcp("::", 8080)), false)
	for _, hostPID := range []bool{true, false} {
		for _, v := range views {
			v.Observation.Sections.Sockets.Data.HostPID = hostPID
		}
		tr := Assemble(in, &plan.NodeReport{Collector: &report.CollectorRun{Image: "i", Namespace: "svctrace-system", Profile: "netadmin"}, Nodes: views}, Options{Now: fixedNow})
		if tr.Metadata.Collector.HostPID != hostPID {
			t.Errorf("collectors saw hostPID=%v, metadata says %v", hostPID, tr.Metadata.Collector.HostPID)
		}
	}
}

func TestSocketsWrongPortNamesWhatItListensOn(t *testing.T) {
	in := nodeInput()
	tr := judgeViews(t, in, socketViews(t, podSockets("web-2", "10.244.2.7", tcp("0.0.0.0", 8081),
		collectorapi.Listener{Protocol: "UDP", Address: "0.0.0.0", Port: 9001, Family: "IPv4"}), true)...)
	c, ok := nodeCodes(tr, report.LayerEndpoints, "n2")[report.CodeEpsNotListening]
	if !ok {
		t.Fatalf("no %s on n2: %v", report.CodeEpsNotListening, keysOf(nodeCodes(tr, report.LayerEndpoints, "n2")))
	}
	if !strings.Contains(c.Message, "10.244.2.7:8080/TCP") || !strings.Contains(c.Message, "0.0.0.0:8081/TCP") || strings.Contains(c.Message, "9001") {
		t.Errorf("message must name the target and the TCP port it listens on instead (not UDP ones): %s", c.Message)
	}
	var listeners []string
	for _, f := range c.Evidence.Fields {
		if f.Key == "listeners" {
			listeners = f.Items
		}
	}
	if len(listeners) != 1 || listeners[0] != "0.0.0.0:8081/TCP" {
		t.Errorf("listeners evidence %v", listeners)
	}
	if _, ok := nodeCodes(tr, report.LayerEndpoints, "")[report.CodeEpsRefused]; ok {
		t.Errorf("%s repeated next to %s", report.CodeEpsRefused, report.CodeEpsNotListening)
	}
}

func TestSocketsListeningButRefusedKeepsTheRefusal(t *testing.T) {
	in := nodeInput()
	tr := judgeViews(t, in, socketViews(t, podSockets("web-2", "10.244.2.7", tcp("0.0.0.0", 8080)), true)...)
	c, ok := nodeCodes(tr, report.LayerEndpoints, "n1")[report.CodeEpsRefused]
	if !ok || !strings.Contains(c.Message, "yet pod web-2 listens on 0.0.0.0:8080/TCP") {
		t.Fatalf("refusal without the contradicting socket fact: %+v", c)
	}
	if _, ok := nodeCodes(tr, report.LayerEndpoints, "n2")[report.CodeEpsListening]; !ok {
		t.Errorf("no %s on n2", report.CodeEpsListening)
	}
}

func TestSocketsNotReadIsInfoAndKeepsTheProbe(t *testing.T) {
	in := nodeInput()
	web2 := collectorapi.PodSockets{PodName: "web-2", PodUID: "uid-web-2", IPs: []string{"10.244.2.7"},
		Reason: "the collector does not see the node's processes: its Pod does not share the host PID namespace (hostPID)"}
	tr := judgeViews(t, in, socketViews(t, web2, true)...)
	c, ok := nodeCodes(tr, report.LayerEndpoints, "n2")[report.CodeEpsSocketsUnread]
	if !ok || c.Status != report.StatusPass || !strings.Contains(c.Message, "web-2") || !strings.Contains(c.Message, "hostPID") {
		t.Fatalf("unread sockets: %+v", c)
	}
	if _, ok := nodeCodes(tr, report.LayerEndpoints, "n1")[report.CodeEpsRefused]; !ok {
		t.Errorf("without socket facts the probe refusal must stay")
	}
	// A failed section says so once for the node.
	views := socketViews(t, web2, false)
	views[1].Observation.Sections.Sockets = &collectorapi.Section[collectorapi.SocketsObservation]{Status: collectorapi.StatusError, Error: "open /proc: permission denied"}
	tr = judgeViews(t, nodeInput(), views...)
	if c := nodeCodes(tr, report.LayerEndpoints, "n2")[report.CodeEpsSocketsUnread]; !strings.Contains(c.Message, "permission denied") {
		t.Errorf("section error not reported: %+v", c)
	}
}

func TestClassifySockets(t *testing.T) {
	v4 := netip.MustParseAddr("10.244.2.7")
	v6 := netip.MustParseAddr("fd00::7")
	udp := collectorapi.Listener{Protocol: "UDP", Address: "0.0.0.0", Port: 8080}
	for _, tt := range []struct {
		name string
		ip   netip.Addr
		ls   []collectorapi.Listener
		want socketKind
	}{
		{"IPv4 wildcard", v4, []collectorapi.Listener{tcp("0.0.0.0", 8080)}, socketListening},
		{"dual-stack wildcard serves IPv4", v4, []collectorapi.Listener{tcp("::", 8080)}, socketListening},
		{"the Pod IP", v4, []collectorapi.Listener{tcp("10.244.2.7", 8080)}, socketListening},
		{"IPv4-mapped Pod IP", v4, []collectorapi.Listener{tcp("::ffff:10.244.2.7", 8080)}, socketListening},
		{"loopback only", v4, []collectorapi.Listener{tcp("127.0.0.1", 8080), tcp("::1", 8080)}, socketLoopbackOnly},
		{"127.0.0.53 is loopback too", v4, []collectorapi.Listener{tcp("127.0.0.53", 8080)}, socketLoopbackOnly},
		{"another address", v4, []collectorapi.Listener{tcp("10.9.9.9", 8080)}, socketNotListening},
		{"other port", v4, []collectorapi.Listener{tcp("0.0.0.0", 8081)}, socketNotListening},
		{"UDP on the TCP port", v4, []collectorapi.Listener{udp}, socketNotListening},
		{"nothing at all", v4, nil, socketNotListening},
		// The app of a dual-stack Pod that binds 0.0.0.0 only (recorded on
		// the dual-stack testbed: scenario dualstack-ipv4-only-listener).
		{"IPv4 wildcard does not serve IPv6", v6, []collectorapi.Listener{tcp("0.0.0.0", 8080)}, socketOtherFamilyOnly},
		{"the IPv6 Pod IP does not serve IPv4", v4, []collectorapi.Listener{tcp("fd00::7", 8080)}, socketOtherFamilyOnly},
		{"IPv4 wildcard and IPv6 loopback", v6, []collectorapi.Listener{tcp("0.0.0.0", 8080), tcp("::1", 8080)}, socketNotListening},
		{"IPv6 wildcard serves IPv6", v6, []collectorapi.Listener{tcp("::", 8080)}, socketListening},
	} {
		f := classifySockets(&collectorapi.PodSockets{Listeners: tt.ls}, tt.ip, slicePort{port: 8080, protocol: "TCP"})
		if f.kind != tt.want {
			t.Errorf("%s: kind %d, want %d", tt.name, f.kind, tt.want)
		}
	}
}

func TestCollectRequestCarriesPodUIDs(t *testing.T) {
	in := nodeInput()
	in.Pods[0].UID = types.UID("11111111-aaaa")
	in.Pods = in.Pods[:1]
	in.ExtraPods = map[string]*corev1.Pod{"web-2": pod("web-2", "web", "10.244.2.7", "n2", func(p *corev1.Pod) { p.UID = "22222222-bbbb" })}
	uids := func(node string) map[string]string {
		got := map[string]string{}
		for _, ep := range plan.CollectRequest(in, node, "cluster.local").Endpoints {
			got[ep.PodName] = ep.PodUID
		}
		return got
	}
	// Each node's request carries the UIDs of its own endpoint Pods only.
	if got := uids("n1"); got["web-1"] != "11111111-aaaa" || got["web-2"] != "" {
		t.Errorf("n1 endpoint Pod UIDs %v", got)
	}
	if got := uids("n2"); got["web-1"] != "" || got["web-2"] != "22222222-bbbb" {
		t.Errorf("n2 endpoint Pod UIDs %v", got)
	}
}

// TestAcceptQueueOverflow: web-2's namespace has overflowed its accept queues
// and 128 connections wait on the target port: a warning naming the Pod.
func TestAcceptQueueOverflow(t *testing.T) {
	full := tcp("::", 8080)
	full.AcceptQueue = 128
	web2 := podSockets("web-2", "10.244.2.7", full)
	ov, drops := uint64(312), uint64(312)
	web2.ListenOverflows, web2.ListenDrops = &ov, &drops
	tr := judgeViews(t, nodeInput(), socketViews(t, web2, false)...)
	c, ok := nodeCodes(tr, report.LayerEndpoints, "n2")[report.CodeEpsAcceptOverflow]
	if !ok || !strings.Contains(c.Message, "pod web-2") || !strings.Contains(c.Message, "dropped 312") || !strings.Contains(c.Message, "128 connection(s) wait") {
		t.Fatalf("%s = %+v", report.CodeEpsAcceptOverflow, c)
	}
	if _, ok := nodeCodes(tr, report.LayerEndpoints, "n1")[report.CodeEpsAcceptOverflow]; ok {
		t.Errorf("web-1 reported though its counters were not read")
	}
}
