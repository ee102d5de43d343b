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
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// judgeFrom assembles a trace as judgeViews does, with a --from client.
func judgeFrom(t *testing.T, in *Input, from *report.PolicyClient, views ...NodeView) *report.ServiceTrace {
	t.Helper()
	tr := Assemble(in, &NodeReport{Nodes: views}, Options{Now: fixedNow, From: from})
	assertCatalogued(t, tr)
	return tr
}

func wantCode(t *testing.T, tr *report.ServiceTrace, layer report.LayerName, node, code string, msgParts ...string) report.Check {
	t.Helper()
	got := nodeCodes(tr, layer, node)
	c, ok := got[code]
	if !ok {
		t.Fatalf("layer %s on %s: want %s, got %v", layer, node, code, keysOf(got))
	}
	for _, p := range msgParts {
		if !strings.Contains(c.Message, p) {
			t.Errorf("%s message lacks %q: %s", code, p, c.Message)
		}
	}
	return c
}

func evidence(c report.Check, key string) string {
	if c.Evidence == nil {
		return ""
	}
	for _, f := range c.Evidence.Fields {
		if f.Key == key {
			if f.Value != "" {
				return f.Value
			}
			return strings.Join(f.Items, ",")
		}
	}
	return ""
}

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
			tr := judgeViews(t, nodeInput(), NodeView{Node: "n1", Observation: obs})
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
			tr := judgeFrom(t, nodeInput(), tt.from, NodeView{Node: "n1", Observation: obs})
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
func flannelNodes(in *Input) {
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
func addFlannelNodes(in *Input, nodes map[string]flannelVTEP) {
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
			tr := judgeViews(t, in, NodeView{Node: "n1", Observation: obs})
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
			tr := judgeFrom(t, in, tt.from, NodeView{Node: "n1", Observation: obs})
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
			tr := judgeViews(t, nodeInput(), NodeView{Node: "n1", Observation: obs})
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

// readFixture decodes a recorded JSON fixture.
func readFixture[T any](t *testing.T, path string) T {
	t.Helper()
	var out T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
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
			tr := judgeViews(t, nodeInput(), NodeView{Node: "n1", Observation: obs})
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

func TestMasqueradeJudged(t *testing.T) {
	nodePort := func(etp corev1.ServiceExternalTrafficPolicy) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.ExternalTrafficPolicy = etp
		}
	}
	// clusterExt is KUBE-EXT under externalTrafficPolicy Cluster as kube-proxy
	// v1.37 writes it (proxier.go: "masquerade traffic for … external destinations").
	clusterExt := func(masq bool) *collectorapi.IPTablesObservation {
		o := healthyIPT()
		p := &o.Backends[0].Ports[0]
		p.NodePort = 30080
		ext := &collectorapi.IPTablesChain{Name: "KUBE-EXT-X", Exists: true}
		if masq {
			ext.Rules = append(ext.Rules, collectorapi.IPTablesRule{Raw: `-A KUBE-EXT-X -m comment --comment "masquerade traffic for default/web:http external destinations" -j KUBE-MARK-MASQ`, Jump: "KUBE-MARK-MASQ"})
		}
		ext.Rules = append(ext.Rules, collectorapi.IPTablesRule{Raw: "-A KUBE-EXT-X -j KUBE-SVC-X", Jump: "KUBE-SVC-X"})
		p.External = ext
		return o
	}
	noMark := clusterExt(true)
	noMark.Backends[0].MarkMasq, noMark.Backends[0].MasqMark = nil, ""
	for _, tt := range []struct {
		name string
		svc  func(*corev1.Service)
		ipt  *collectorapi.IPTablesObservation
		want string
		not  []string
	}{
		{"ClusterIP only: nothing to say", nil, healthyIPT(), "", []string{report.CodeDPSourceLost, report.CodeDPSourceKept, report.CodeDPMasqExternal, report.CodeDPMasqMissing}},
		{"ETP Cluster masquerades", nodePort(corev1.ServiceExternalTrafficPolicyCluster), clusterExt(true), report.CodeDPSourceLost, []string{report.CodeDPMasqExternal}},
		{"ETP Cluster without the mark rule", nodePort(corev1.ServiceExternalTrafficPolicyCluster), clusterExt(false), report.CodeDPMasqExternal, []string{report.CodeDPSourceLost}},
		{"ETP Local keeps the source", nodePort(corev1.ServiceExternalTrafficPolicyLocal), etpLocalIPT("KUBE-SVL-X", jump("KUBE-SEP-1", "10.244.1.5:8080", 1)), report.CodeDPSourceKept, []string{report.CodeDPMasqMissing}},
		{"KUBE-MARK-MASQ sets no mark", nodePort(corev1.ServiceExternalTrafficPolicyCluster), noMark, report.CodeDPMasqMissing, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var in *Input
			if tt.svc != nil {
				in = nodeInput(tt.svc)
			} else {
				in = nodeInput()
			}
			tr := judgeViews(t, in, NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, tt.ipt, nil)})
			assertNoCode(t, tr, report.LayerDatapath, "n1", tt.not...)
			if tt.want != "" {
				wantCode(t, tr, report.LayerDatapath, "n1", tt.want)
			}
		})
	}
}

// TestMasqueradeJudgedNFTables: kube-proxy's nftables proxier writes, under
// externalTrafficPolicy Cluster, "mark set mark or 0x4000" commented
// "masquerade" first in the external chain (pkg/proxy/nftables/proxier.go;
// collectors/testdata/nftables/kubeproxy-overall.json, external-4AT6LBPK).
func TestMasqueradeJudgedNFTables(t *testing.T) {
	nodePort := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
	}
	mk := func(masq bool) *collectorapi.NFTablesObservation {
		o := nftObservation("10.244.1.5:8080", "10.244.2.7:8080")
		p := &o.Tables[0].Ports[0]
		p.NodePort = 30080
		p.ServiceNodePorts = []collectorapi.NFTablesElement{{Map: "service-nodeports", Key: "tcp . 30080", Found: true, Verdict: "goto external-X", Target: "external-X"}}
		ext := &collectorapi.NFTablesChain{Name: "external-X", Exists: true}
		if masq {
			ext.Rules = append(ext.Rules, collectorapi.NFTablesRule{Text: "meta mark set meta mark | 0x00004000", Comment: "masquerade", Mark: "0x00004000"})
		}
		ext.Rules = append(ext.Rules, collectorapi.NFTablesRule{Text: "goto service-X", Verdict: "goto", Target: "service-X"})
		p.External = ext
		return o
	}
	tr := judgeViews(t, nodeInput(nodePort), NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeNFTables, nil, mk(true))})
	c := wantCode(t, tr, report.LayerDatapath, "n1", report.CodeDPSourceLost, "nftables (ip")
	if evidence(c, "rule") != "meta mark set meta mark | 0x00004000" {
		t.Errorf("evidence %+v", c.Evidence)
	}
	tr = judgeViews(t, nodeInput(nodePort), NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeNFTables, nil, mk(false))})
	wantCode(t, tr, report.LayerDatapath, "n1", report.CodeDPMasqExternal, "external-X")
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
	tr := judgeViews(t, in, NodeView{Node: "n1", Observation: obs})
	c := wantCode(t, tr, report.LayerRoute, "n1", report.CodeRTOverlayVTEP, "vxlan.calico", "n4 (dst 192.168.77.14)")
	if strings.Contains(c.Message, "n2") || strings.Contains(c.Message, "n3") {
		t.Errorf("nodes with entries named: %s", c.Message)
	}
	delete(in.Nodes, "n4")
	tr = judgeViews(t, in, NodeView{Node: "n1", Observation: obs})
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
			tr := judgeViews(t, in, NodeView{Node: "n1", Observation: obs})
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
			var views []NodeView
			for node := range tt.want {
				obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
				obs.Sections.Route.Data = rec.Route[node]
				views = append(views, NodeView{Node: node, Observation: obs})
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

// TestMasqueradePathOnlyOnLiveBackend: with kube-proxy's chains in both
// iptables backends, the masquerade path is judged on the one capturing the
// Service (kube-proxy writes it); the other's missing KUBE-POSTROUTING is a
// leftover's, which nothing goes through.
func TestMasqueradePathOnlyOnLiveBackend(t *testing.T) {
	healthy := &collectorapi.IPTablesPostrouting{Exists: true,
		Jumps: []collectorapi.IPTablesRule{{Raw: `-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`, Jump: "KUBE-POSTROUTING",
			Options: []collectorapi.IPTablesOption{{Name: "-m", Args: []string{"comment"}}, {Name: "--comment", Args: []string{"kubernetes postrouting rules"}}, {Name: "-j", Args: []string{"KUBE-POSTROUTING"}}}}},
		Rules: []collectorapi.IPTablesRule{{Raw: "-A KUBE-POSTROUTING -j MASQUERADE --random-fully", Jump: "MASQUERADE",
			Options: []collectorapi.IPTablesOption{{Name: "-j", Args: []string{"MASQUERADE"}}, {Name: "--random-fully"}}}}}
	live := iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))
	live.Ports[0].Endpoints[0].Hairpin = "10.244.1.5/32"
	live.Postrouting = healthy
	leftover := iptRules(collectorapi.IPTablesBackendLegacy, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 1))
	leftover.Ports[0].Endpoints[0].Hairpin = "10.244.1.5/32"
	leftover.Ports[0].Entry = nil
	leftover.Postrouting = &collectorapi.IPTablesPostrouting{}
	obs := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{live, leftover}}
	tr := judgeViews(t, nodeInput(), NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, obs, nil)})
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPMasqNoRule, report.CodeDPMasqNoJump)

	// The same leftover as the only backend holding the Service is judged.
	obs = &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{leftover}}
	tr = judgeViews(t, nodeInput(), NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, obs, nil)})
	wantCode(t, tr, report.LayerDatapath, "n1", report.CodeDPMasqNoRule, "KUBE-POSTROUTING does not exist")
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
