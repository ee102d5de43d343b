package trace

import (
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// recordedRoute is the route observation read from a real kernel: a bridge
// CNI node (cni0 with two Pod veths) with flannel's vxlan device and its FDB
// and neighbour entries for two remote nodes (collectors/route
// TestReadBridgeAndVXLANInNetns -record).
func recordedRoute(t *testing.T) *collectorapi.RouteObservation {
	t.Helper()
	b, err := os.ReadFile("../collectors/testdata/route/real-bridge-vxlan-netns.json")
	if err != nil {
		t.Fatal(err)
	}
	var r collectorapi.RouteObservation
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	// The test namespace had forwarding off; a node has it on.
	r.IPv4Forward = "1"
	return &r
}

// flannelNodes are the nodes of the recorded fixture with the annotations
// flannel's kube subnet manager writes.
func flannelNodes(in *input.Input) {
	addFlannelNodes(in, map[string]flannelVTEP{
		"n1": {"192.168.77.11", "0a:58:0a:f4:00:00", "10.244.0.0/24"},
		"n2": {"192.168.77.12", "0a:58:0a:f4:01:00", "10.244.1.0/24"},
		"n3": {"192.168.77.13", "0a:58:0a:f4:02:00", "10.244.2.0/24"},
	})
}

// flannelVTEP is what flannel's kube subnet manager writes on a Node: its
// public IP, VtepMAC and the podCIDR it leased.
type flannelVTEP struct{ ip, mac, cidr string }

// addFlannelNodes adds Ready nodes annotated as flanneld annotates them.
func addFlannelNodes(in *input.Input, nodes map[string]flannelVTEP) {
	for name, v := range nodes {
		n := node(name, true)
		n.Spec.PodCIDR = v.cidr
		n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: v.ip}}
		n.Annotations = map[string]string{
			"flannel.alpha.coreos.com/backend-type": "vxlan",
			"flannel.alpha.coreos.com/public-ip":    v.ip,
			"flannel.alpha.coreos.com/backend-data": `{"VNI":1,"VtepMAC":"` + v.mac + `"}`,
		}
		in.Nodes[name] = n
	}
}

func TestOverlayJudgedOnRecordedVXLAN(t *testing.T) {
	for _, tt := range []struct {
		name     string
		mut      func(*collectorapi.RouteObservation)
		want     string
		msgParts []string
	}{
		{name: "as flannel programs it", mut: func(*collectorapi.RouteObservation) {}},
		{name: "FDB entry of n3 missing", mut: func(r *collectorapi.RouteObservation) {
			o := &r.Overlays[0]
			for i, f := range o.FDB {
				if f.Dst == "192.168.77.13" {
					o.FDB = append(o.FDB[:i:i], o.FDB[i+1:]...)
					break
				}
			}
		}, want: report.CodeRTOverlayVTEP, msgParts: []string{"flannel.1", "forwarding-database entry", "n3 (0a:58:0a:f4:02:00 → 192.168.77.13)"}},
		{name: "FDB entry points at an old node IP", mut: func(r *collectorapi.RouteObservation) {
			r.Overlays[0].FDB[0].Dst = "192.168.77.99"
		}, want: report.CodeRTOverlayVTEP},
		{name: "neighbour entry of n2 missing", mut: func(r *collectorapi.RouteObservation) {
			o := &r.Overlays[0]
			var kept []collectorapi.NeighbourEntry
			for _, n := range o.Neighbours {
				if n.IP != "10.244.1.0" {
					kept = append(kept, n)
				}
			}
			o.Neighbours = kept
		}, want: report.CodeRTOverlayVTEP, msgParts: []string{"neighbour entry", "n2 (10.244.1.0 → 0a:58:0a:f4:01:00)"}},
		{name: "MTU as large as the underlay", mut: func(r *collectorapi.RouteObservation) { r.Overlays[0].MTU = 1500 },
			want: report.CodeRTOverlayMTU, msgParts: []string{"MTU 1500", "adds 50 bytes", "become 1550"}},
		{name: "device down", mut: func(r *collectorapi.RouteObservation) { r.Overlays[0].AdminUp, r.Overlays[0].OperState = false, "down" },
			want: report.CodeRTOverlayDown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInput()
			flannelNodes(in)
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			r := recordedRoute(t)
			tt.mut(r)
			obs.Sections.Route.Data = r
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			if tt.want == "" {
				assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTOverlayVTEP, report.CodeRTOverlayMTU, report.CodeRTOverlayDown,
					report.CodeRTBridgeNF, report.CodeRTBridgeNFSameNode, report.CodeRTNeighGC, report.CodeRTNeighOverflow)
				wantCode(t, tr, report.LayerRoute, "n1", report.CodeRTHealthy)
				return
			}
			wantCode(t, tr, report.LayerRoute, "n1", tt.want, tt.msgParts...)
			assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTHealthy)
		})
	}
}

func TestBridgeNetfilterJudgedOnRecordedBridge(t *testing.T) {
	sameNode := report.PolicyClientFromPod(pod("client", "client", "10.244.0.9", "n1"))
	for _, tt := range []struct {
		name    string
		setting string
		loaded  *bool
		from    *report.PolicyClient
		mode    collectorapi.DatapathMode
		want    string
		parts   []string
	}{
		{name: "bridge-nf-call-iptables=1 as recorded", setting: "", mode: collectorapi.ModeIPTables},
		{name: "off, client elsewhere", setting: "0", mode: collectorapi.ModeIPTables, want: report.CodeRTBridgeNF, parts: []string{"cni0 (2 veth ports)", "bridge-nf-call-iptables=0", "10.244.1.5"}},
		{name: "off, client on the node", setting: "0", from: sameNode, mode: collectorapi.ModeIPTables, want: report.CodeRTBridgeNFSameNode, parts: []string{"default/client"}},
		{name: "br_netfilter not loaded", setting: "absent", loaded: ptr(false), mode: collectorapi.ModeNFTables, want: report.CodeRTBridgeNF, parts: []string{"br_netfilter module is not loaded"}},
		{name: "Cilium does not need it", setting: "0", mode: collectorapi.ModeCilium},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInput()
			flannelNodes(in)
			var ipt *collectorapi.IPTablesObservation
			if tt.mode == collectorapi.ModeIPTables {
				ipt = healthyIPT()
			}
			obs := observation(t, tt.mode, ipt, nil)
			if tt.mode == collectorapi.ModeCilium {
				obs.Sections.EBPF = okSection(&collectorapi.EBPFObservation{Cilium: &collectorapi.CiliumObservation{Detected: true}})
			}
			r := recordedRoute(t)
			if tt.setting != "" {
				r.BridgeNFCallIPTables = tt.setting
			}
			if tt.loaded != nil {
				r.BrNetfilterLoaded = tt.loaded
			}
			obs.Sections.Route.Data = r
			tr := judgeFrom(t, in, tt.from, plan.NodeView{Node: "n1", Observation: obs})
			if tt.want == "" {
				assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTBridgeNF, report.CodeRTBridgeNFSameNode)
				return
			}
			c := wantCode(t, tr, report.LayerRoute, "n1", tt.want, tt.parts...)
			if evidence(c, "bridge") != "cni0" {
				t.Errorf("evidence %+v", c.Evidence)
			}
		})
	}
}

func TestNeighbourTableAgainstGCThresholds(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries int
		want    string
	}{
		{"below gc_thresh2", 400, ""},
		{"at gc_thresh2", 512, ""},
		{"above gc_thresh2", 513, report.CodeRTNeighGC},
		{"at gc_thresh3", 1024, report.CodeRTNeighOverflow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			// The kernel's defaults: 128, 512, 1024.
			obs.Sections.Route.Data.Neighbours = []collectorapi.NeighbourTable{
				{Family: "IPv4", Entries: tt.entries, GCThresh1: 128, GCThresh2: 512, GCThresh3: 1024},
				{Family: "IPv6", Entries: 3, GCThresh1: 128, GCThresh2: 512, GCThresh3: 1024}}
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: obs})
			if tt.want == "" {
				assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTNeighGC, report.CodeRTNeighOverflow)
				return
			}
			c := wantCode(t, tr, report.LayerRoute, "n1", tt.want, "IPv4", "holds "+strconv.Itoa(tt.entries))
			if evidence(c, "gcThresh3") != "1024" {
				t.Errorf("evidence %+v", c.Evidence)
			}
		})
	}
}

// recordedPathMTU are the probes collectors/probe's namespace tests saw on
// the real kernel (-record): both sizes answered, the large one lost on a
// 1500 → 1400 veth with frag-needed dropped, and a router answering with
// "fragmentation needed".
func recordedPathMTU(t *testing.T) map[string]collectorapi.PathMTUProbe {
	return readFixture[map[string]collectorapi.PathMTUProbe](t, "../collectors/testdata/probe/real-pathmtu-netns.json")
}

func TestPathMTUBlackholeJudged(t *testing.T) {
	rec := recordedPathMTU(t)
	for _, tt := range []struct {
		name    string
		probe   collectorapi.PathMTUProbe
		want    bool
		lowered bool // RT025: the way there reported a lower MTU
	}{
		{"both answered", rec["healthy"], false, false},
		{"fragmentation needed came back", rec["fragNeeded"], false, true},
		{"nothing answers (filtered, not an MTU fault)", collectorapi.PathMTUProbe{Address: "10.244.2.7", RouteMTU: 1500, SmallSize: 576, LargeSize: 1500, Error: "small probe: no echo reply to 576 bytes within 1s"}, false, false},
		{"large lost silently", rec["blackhole"], true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			obs.Sections.Probe = okSection(&collectorapi.ProbeObservation{PathMTU: []collectorapi.PathMTUProbe{tt.probe}})
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: obs})
			if tt.lowered {
				c := wantCode(t, tr, report.LayerRoute, "n1", report.CodeRTPathMTULowered, tt.probe.Address, "MTU 1500 via", "MTU 1400", "fragmentation needed")
				if c.Status != report.StatusWarn || evidence(c, "pathMTU") != "1400" {
					t.Errorf("%s %s, evidence %+v", c.Code, c.Status, c.Evidence)
				}
				assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTHealthy)
			} else {
				assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPathMTULowered)
			}
			if !tt.want {
				assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPMTUBlackhole)
				return
			}
			c := wantCode(t, tr, report.LayerRoute, "n1", report.CodeRTPMTUBlackhole, "576-byte", "1500-byte", "MTU 1500 via eth0", tt.probe.Address)
			if !strings.Contains(c.NextStep, "-s 1472") {
				t.Errorf("next step %q", c.NextStep)
			}
			if c.Evidence == nil || len(c.Evidence.Raw) != 1 || !strings.Contains(c.Evidence.Raw[0], "no echo reply") {
				t.Errorf("evidence %+v", c.Evidence)
			}
		})
	}
}

// TestOverlayPerNodeFDBWithoutFlannel: the recorded device read as another
// CNI's vxlan device (no flannel annotations, not named flannel.<VNI>): its
// FDB points at node InternalIPs, so each other node needs an entry.
func TestOverlayPerNodeFDBWithoutFlannel(t *testing.T) {
	in := nodeInput()
	flannelNodes(in)
	for _, n := range in.Nodes {
		n.Annotations = nil
	}
	in.Nodes["n4"] = node("n4", true)
	in.Nodes["n4"].Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.168.77.14"}}
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	r := recordedRoute(t)
	r.Overlays[0].Name = "vxlan.calico"
	obs.Sections.Route.Data = r
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	c := wantCode(t, tr, report.LayerRoute, "n1", report.CodeRTOverlayVTEP, "vxlan.calico", "n4 (dst 192.168.77.14)")
	if strings.Contains(c.Message, "n2") || strings.Contains(c.Message, "n3") {
		t.Errorf("nodes with entries named: %s", c.Message)
	}
	delete(in.Nodes, "n4")
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTOverlayVTEP)
}

// recordedEncap is node a's flannel.1 read on the real kernel in each case of
// collectors/route TestEncapProbeOnRealVXLAN (-record): a two-node flannel
// overlay in test namespaces, node a 192.168.78.11, node b 192.168.78.12.
func recordedEncap(t *testing.T) map[string]collectorapi.OverlayDevice {
	return readFixture[map[string]collectorapi.OverlayDevice](t, "../collectors/testdata/route/real-vxlan-encap-netns.json")
}

func TestEncapJudgedOnRecordedProbes(t *testing.T) {
	devices := recordedEncap(t)
	for _, tt := range []struct {
		recorded string
		want     string
		status   report.Status
		parts    []string
	}{
		{recorded: "healthy", want: report.CodeRTEncapAnswered, status: report.StatusPass, parts: []string{"flannel.1 (vxlan VNI 1)", "UDP 8472", "from n2 (192.168.78.12:8472) in 0."}},
		{recorded: "no VXLAN socket on the peer", want: report.CodeRTEncapRefused, status: report.StatusFail, parts: []string{"n2 (192.168.78.12:8472) answered", "port unreachable for UDP 8472"}},
		{recorded: "peer drops UDP 8472", want: report.CodeRTEncapSilent, status: report.StatusWarn, parts: []string{"no answer from n2 (192.168.78.12:8472)", "3 datagram(s) each in 900 ms"}},
		{recorded: "peer lost its FDB entry for this node", want: report.CodeRTEncapSilent, status: report.StatusWarn, parts: []string{"the way back"}},
	} {
		t.Run(tt.recorded, func(t *testing.T) {
			o, ok := devices[tt.recorded]
			if !ok {
				t.Fatalf("no recorded device %q", tt.recorded)
			}
			in := nodeInput()
			addFlannelNodes(in, map[string]flannelVTEP{
				"n1": {"192.168.78.11", "0a:58:0a:f5:01:00", "10.245.1.0/24"},
				"n2": {"192.168.78.12", "0a:58:0a:f5:02:00", "10.245.2.0/24"},
			})
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			r := recordedRoute(t)
			// The recorded routes lead through another recording's
			// flannel.1 (gateway 10.244.1.0): keep only the local one.
			r.Overlays = []collectorapi.OverlayDevice{o}
			r.Routes = slices.DeleteFunc(r.Routes, func(rt collectorapi.RouteLookup) bool { return rt.Device == "flannel.1" })
			obs.Sections.Route.Data = r
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			c := wantCode(t, tr, report.LayerRoute, "n1", tt.want, tt.parts...)
			if c.Status != tt.status {
				t.Errorf("%s is %s, want %s", tt.want, c.Status, tt.status)
			}
			if c.Evidence == nil || len(c.Evidence.Raw) != 1 || !strings.Contains(c.Evidence.Raw[0], "udp 10.245.1.0 > 10.245.2.0:33434 in vxlan VNI 1 to 192.168.78.12:8472") {
				t.Errorf("raw evidence %+v", c.Evidence)
			}
			// The FDB and neighbour entries of this node are as flannel
			// programs them in every case: the probe is the only finding.
			assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTOverlayVTEP, report.CodeRTOverlayMTU, report.CodeRTOverlayDown)
			others := []string{report.CodeRTEncapAnswered, report.CodeRTEncapRefused, report.CodeRTEncapSilent}
			others = slices.DeleteFunc(others, func(c string) bool { return c == tt.want })
			assertNoCode(t, tr, report.LayerRoute, "n1", others...)
			if tt.want == report.CodeRTEncapAnswered {
				wantCode(t, tr, report.LayerRoute, "n1", report.CodeRTHealthy)
			} else {
				assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTHealthy)
			}
			if tt.want == report.CodeRTEncapRefused && !strings.Contains(c.NextStep, "node/n2") {
				t.Errorf("next step %q does not name the peer's node", c.NextStep)
			}
		})
	}
}

// testbedFlannel is one recording of collectors/testdata/route/testbed-flannel.sh:
// the route sections the real collector read on the testbed's flannel
// overlay and the Nodes flanneld annotated.
type testbedFlannel struct {
	Nodes map[string]*corev1.Node                   `json:"nodes"`
	Route map[string]*collectorapi.RouteObservation `json:"route"`
}

func recordedTestbedFlannel(t *testing.T, name string) testbedFlannel {
	t.Helper()
	r := readFixture[testbedFlannel](t, "../collectors/testdata/route/testbed-flannel-"+name+".json")
	if len(r.Nodes) != 2 || len(r.Route) != 2 {
		t.Fatalf("recording %s: %d nodes, %d route sections", name, len(r.Nodes), len(r.Route))
	}
	return r
}

func TestOverlayJudgedOnTestbedFlannel(t *testing.T) {
	overlayCodes := []string{report.CodeRTOverlayVTEP, report.CodeRTOverlayMTU, report.CodeRTOverlayDown, report.CodeRTPMTUBlackhole,
		report.CodeRTEncapAnswered, report.CodeRTEncapRefused, report.CodeRTEncapSilent}
	for _, tt := range []struct {
		name     string
		recorded string
		// apiNodes are the Nodes the API side read: all (--all-nodes, or
		// endpoints on both nodes) or the inspected one only (--node).
		apiNodes []string
		want     map[string]string // node → the one overlay code it gets
		parts    map[string][]string
	}{
		{name: "healthy", recorded: "healthy", apiNodes: []string{"svtb-node1", "svtb-node2"},
			want:  map[string]string{"svtb-node1": report.CodeRTEncapAnswered, "svtb-node2": report.CodeRTEncapAnswered},
			parts: map[string][]string{"svtb-node1": {"from svtb-node2 (10.0.0.12:8472)"}, "svtb-node2": {"from svtb-node1 (10.0.0.11:8472)"}}},
		{name: "healthy, --node", recorded: "healthy", apiNodes: []string{"svtb-node1"},
			want: map[string]string{"svtb-node1": report.CodeRTEncapAnswered}},
		{name: "FDB entry missing on node1", recorded: "fdb-missing", apiNodes: []string{"svtb-node1", "svtb-node2"},
			want:  map[string]string{"svtb-node1": report.CodeRTOverlayVTEP, "svtb-node2": report.CodeRTEncapSilent},
			parts: map[string][]string{"svtb-node1": {"forwarding-database entry", "svtb-node2 ("}, "svtb-node2": {"no answer from svtb-node1 (10.0.0.11:8472)"}}},
		// Without node2's object the entry is still found missing, from
		// the route to the endpoint on node2 and the gateway's neighbour entry.
		{name: "FDB entry missing on node1, --node", recorded: "fdb-missing", apiNodes: []string{"svtb-node1"},
			want:  map[string]string{"svtb-node1": report.CodeRTOverlayVTEP},
			parts: map[string][]string{"svtb-node1": {"forwarding-database entry", "the MAC of 10.244.2.0"}}},
		{name: "UDP 8472 dropped at node2", recorded: "encap-blocked", apiNodes: []string{"svtb-node1", "svtb-node2"},
			want:  map[string]string{"svtb-node1": report.CodeRTEncapSilent, "svtb-node2": report.CodeRTEncapSilent},
			parts: map[string][]string{"svtb-node1": {"no answer from svtb-node2 (10.0.0.12:8472)", "3 datagram(s) each in 1000 ms"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := recordedTestbedFlannel(t, tt.recorded)
			in := nodeInput()
			in.Nodes = map[string]*corev1.Node{}
			for _, n := range tt.apiNodes {
				in.Nodes[n] = rec.Nodes[n]
			}
			var views []plan.NodeView
			for node := range tt.want {
				obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
				obs.Sections.Route.Data = rec.Route[node]
				views = append(views, plan.NodeView{Node: node, Observation: obs})
			}
			tr := judgeViews(t, in, views...)
			for node, code := range tt.want {
				wantCode(t, tr, report.LayerRoute, node, code, tt.parts[node]...)
				others := slices.DeleteFunc(slices.Clone(overlayCodes), func(c string) bool { return c == code })
				assertNoCode(t, tr, report.LayerRoute, node, others...)
			}
		})
	}
}

// TestRPFilterIsMaxOfAllAndDevice: the kernel validates a source with
// rp_filter = max(conf.all.rp_filter, conf.<dev>.rp_filter)
// (IN_DEV_RPFILTER, net/ipv4/fib_frontend.c); only 1 is strict.
func TestRPFilterIsMaxOfAllAndDevice(t *testing.T) {
	for _, tt := range []struct {
		all, dev string
		strict   bool
	}{
		{"1", "0", true},
		{"0", "1", true},
		{"1", "1", true},
		{"2", "1", false},
		{"1", "2", false},
		{"0", "0", false},
		{"0", "2", false},
		{"absent", "1", false}, // all unknown: the effective value may be 2
		{"1", "", false},       // device unknown: the effective value may be 2
	} {
		obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
		obs.Sections.Route.Data.RPFilterAll = tt.all
		obs.Sections.Route.Data.Routes[1].RPFilterDevice = tt.dev
		tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: obs})
		c, got := nodeCodes(tr, report.LayerRoute, "n1")[report.CodeRTRPFilter]
		if got != tt.strict {
			t.Errorf("all=%s eth0=%s: strict reported %v (%q), want %v", tt.all, tt.dev, got, c.Message, tt.strict)
		}
	}
}
