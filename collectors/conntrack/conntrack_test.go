package conntrack

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	ct "github.com/ti-mo/conntrack"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// procStatRecorded is /proc/net/stat/nf_conntrack from a 2-CPU 6.x kernel
// after some traffic (clashres and chainlength columns present).
const procStatRecorded = `entries  clashres found new invalid ignore delete chainlength insert insert_failed drop early_drop icmp_error  expect_new expect_create expect_delete search_restart
0000002a  00000003 00000010 00000000 00000005 00000000 00000000 00000000 00000000 00000002 00000000 00000000 00000001  00000000 00000000 00000000 0000000a
0000002a  00000001 00000020 00000000 00000001 00000000 00000000 00000004 00000000 00000000 00000007 00000000 00000000  00000000 00000000 00000000 00000000
`

func TestParseProcStat(t *testing.T) {
	got, err := ParseProcStat(procStatRecorded)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"entries": 42, "clashres": 4, "found": 48, "invalid": 6, "chainlength": 4,
		"insert_failed": 2, "drop": 7, "icmp_error": 1, "search_restart": 10}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %d, want %d", k, got[k], v)
		}
	}
	later := map[string]uint64{"entries": 40, "clashres": 6, "found": 40}
	d := DeltaProcStat(got, later)
	if d["entries"] != 40 || d["clashres"] != 2 || d["found"] != 0 {
		t.Errorf("delta %v", d)
	}
	if _, err := ParseProcStat("entries found\n1\n"); err == nil {
		t.Error("short row accepted")
	}
	if _, err := ParseProcStat("entries\n"); err == nil {
		t.Error("header only accepted")
	}
}

func flow(proto uint8, src, dst, replySrc string, tcpState uint8) ct.Flow {
	s, d, r := netip.MustParseAddrPort(src), netip.MustParseAddrPort(dst), netip.MustParseAddrPort(replySrc)
	f := ct.Flow{Status: ct.StatusDstNAT | ct.StatusConfirmed | ct.StatusSeenReply, Timeout: 100}
	f.TupleOrig.IP.SourceAddress, f.TupleOrig.IP.DestinationAddress = s.Addr(), d.Addr()
	f.TupleOrig.Proto.Protocol, f.TupleOrig.Proto.SourcePort, f.TupleOrig.Proto.DestinationPort = proto, s.Port(), d.Port()
	f.TupleReply.IP.SourceAddress, f.TupleReply.IP.DestinationAddress = r.Addr(), s.Addr()
	f.TupleReply.Proto.Protocol, f.TupleReply.Proto.SourcePort, f.TupleReply.Proto.DestinationPort = proto, r.Port(), s.Port()
	if proto == 6 {
		f.ProtoInfo.TCP = &ct.ProtoInfoTCP{State: tcpState}
	}
	return f
}

func webRequest() *collectorapi.Request {
	return &collectorapi.Request{
		Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{"10.96.0.50"},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}, {Name: "dns", Protocol: "UDP", Port: 53}}},
		Endpoints: []collectorapi.Endpoint{
			{IP: "10.244.1.5", Ports: map[string]int32{"http": 8080, "dns": 5353}},
			{IP: "10.244.2.7", Ports: map[string]int32{"http": 8080, "dns": 5353}},
		},
	}
}

func TestGroupFlows(t *testing.T) {
	flows := []ct.Flow{
		flow(6, "10.0.0.11:40000", "10.96.0.50:80", "10.244.1.5:8080", 3),
		flow(6, "10.0.0.11:40001", "10.96.0.50:80", "10.244.1.5:8080", 7),
		flow(6, "10.0.0.11:40002", "10.96.0.50:80", "10.244.9.9:8080", 3), // stale backend
		flow(17, "10.0.0.11:5000", "10.96.0.50:53", "10.244.2.7:5353", 0),
		flow(6, "192.0.2.1:5555", "10.0.0.11:30080", "10.244.2.7:8080", 3),    // NodePort on the node's address
		flow(6, "10.0.0.11:40010", "10.244.3.3:30080", "10.244.3.3:30080", 3), // a Pod's own port 30080: not a NodePort
		flow(6, "10.0.0.11:40003", "10.96.0.99:80", "10.244.1.5:8080", 3),     // another Service
		flow(17, "10.0.0.11:5001", "10.96.0.50:80", "10.244.1.5:8080", 0),     // wrong protocol
	}
	for i := 0; i < 5; i++ { // more stale flows than the cap
		flows = append(flows, flow(6, fmt.Sprintf("10.0.0.12:%d", 41000+i), "10.96.0.50:80", "10.244.9.9:8080", 3))
	}
	got := GroupFlows(flows, webRequest(), []netip.Addr{netip.MustParseAddr("10.0.0.11")}, 3)
	if got.DumpedEntries != len(flows) {
		t.Errorf("dumped %d", got.DumpedEntries)
	}
	if want := []string{"10.244.1.5:5353", "10.244.1.5:8080", "10.244.2.7:5353", "10.244.2.7:8080"}; fmt.Sprint(got.ExpectedBackends) != fmt.Sprint(want) {
		t.Errorf("expected backends %v", got.ExpectedBackends)
	}
	if len(got.Frontends) != 3 {
		t.Fatalf("frontends %+v", got.Frontends)
	}
	byName := map[string]collectorapi.FrontendFlows{}
	for _, fe := range got.Frontends {
		byName[fe.Frontend] = fe
	}
	http := byName["10.96.0.50:80/TCP"]
	if http.Total != 8 || len(http.Backends) != 2 {
		t.Fatalf("http frontend %+v", http)
	}
	if b := http.Backends[0]; b.Backend != "10.244.1.5:8080" || b.Count != 2 || !b.Expected || b.States["ESTABLISHED"] != 1 || b.States["TIME_WAIT"] != 1 {
		t.Errorf("live backend %+v", b)
	}
	if b := http.Backends[1]; b.Backend != "10.244.9.9:8080" || b.Count != 6 || b.Expected {
		t.Errorf("stale backend %+v", b)
	}
	if dns := byName["10.96.0.50:53/UDP"]; dns.Total != 1 || dns.Backends[0].States["SEEN_REPLY"] != 1 {
		t.Errorf("dns frontend %+v", dns)
	}
	if np := byName["10.0.0.11:30080/TCP"]; np.Total != 1 || !np.Backends[0].Expected {
		t.Errorf("nodeport frontend %+v", np)
	}
	if _, ok := byName["10.244.3.3:30080/TCP"]; ok {
		t.Errorf("a flow to port 30080 of a non-node address counted as the NodePort's: %+v", got.Frontends)
	}
	if got.UnexpectedTotal != 6 || len(got.Unexpected) != 3 || !got.Truncated {
		t.Errorf("unexpected: total %d listed %d truncated %v", got.UnexpectedTotal, len(got.Unexpected), got.Truncated)
	}
	if u := got.Unexpected[0]; u.Original != "10.0.0.11:40002 -> 10.96.0.50:80" || u.Reply != "10.244.9.9:8080 -> 10.0.0.11:40002" || u.TCPState != "ESTABLISHED" {
		t.Errorf("unexpected flow %+v", u)
	}
}

// TestGroupFlowsNodePortAddresses: a NodePort counts on the addresses it is
// given (the node's and the Service's externalIPs/LB IPs), in either family,
// with the NodePort's protocol, and nowhere else.
func TestGroupFlowsNodePortAddresses(t *testing.T) {
	req := webRequest()
	req.Service.Ports = append(req.Service.Ports, collectorapi.ServicePort{Name: "dns", Protocol: "UDP", Port: 53, NodePort: 30053})
	addrs := []netip.Addr{netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("fd00::11"), netip.MustParseAddr("203.0.113.9")}
	flows := []ct.Flow{
		flow(6, "192.0.2.1:5555", "10.0.0.11:30080", "10.244.2.7:8080", 3),    // node address
		flow(6, "127.0.0.1:5556", "127.0.0.1:30080", "10.244.1.5:8080", 3),    // localhost NodePort
		flow(6, "[fd00::99]:5557", "[fd00::11]:30080", "[fd00::5]:8080", 3),   // IPv6 node address
		flow(6, "192.0.2.1:5558", "203.0.113.9:30080", "10.244.1.5:8080", 3),  // externalIP / LB IP
		flow(17, "192.0.2.1:5559", "10.0.0.11:30053", "10.244.1.5:5353", 0),   // UDP NodePort
		flow(6, "10.0.0.11:40010", "10.244.3.3:30080", "10.244.3.3:30080", 3), // a Pod's own port
		flow(6, "10.0.0.11:40011", "10.96.0.77:30080", "10.244.9.9:80", 3),    // another Service's ClusterIP:30080
		flow(6, "192.0.2.1:5560", "10.0.0.12:30080", "10.244.1.5:8080", 3),    // another node's address
		flow(17, "192.0.2.1:5561", "10.0.0.11:30080", "10.244.1.5:8080", 0),   // right address, wrong protocol
		flow(6, "192.0.2.1:5562", "10.0.0.11:30053", "10.244.1.5:5353", 3),    // right address, wrong protocol
	}
	got := GroupFlows(flows, req, addrs, 10)
	var names []string
	for _, fe := range got.Frontends {
		names = append(names, fe.Frontend)
		if fe.Total != 1 {
			t.Errorf("%s: %d flows, want 1", fe.Frontend, fe.Total)
		}
	}
	want := []string{"10.0.0.11:30053/UDP", "10.0.0.11:30080/TCP", "127.0.0.1:30080/TCP", "203.0.113.9:30080/TCP", "[fd00::11]:30080/TCP"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("frontends %v, want %v", names, want)
	}
	// The IPv6 flow's backend is not in the (IPv4) endpoint set.
	if got.UnexpectedTotal != 1 || got.Unexpected[0].Backend != "[fd00::5]:8080" {
		t.Errorf("unexpected %d %+v", got.UnexpectedTotal, got.Unexpected)
	}
	// No addresses (unreadable): no NodePort flow counts.
	if none := GroupFlows(flows, req, nil, 10); len(none.Frontends) != 0 {
		t.Errorf("NodePort flows counted without addresses: %+v", none.Frontends)
	}
}

// TestServiceDestinations: the kernel filter asks for each frontend exactly,
// and for each NodePort by port and protocol only in the families that have
// a NodePort address.
func TestServiceDestinations(t *testing.T) {
	req := webRequest()
	req.Service.ExternalIPs = []string{"203.0.113.9"}
	str := func(ds []origDst) string {
		var out []string
		for _, d := range ds {
			out = append(out, fmt.Sprintf("%v/%d/%d/%d", d.addr, d.family, d.port, d.proto))
		}
		return strings.Join(out, " ")
	}
	v4 := []netip.Addr{netip.MustParseAddr("10.0.0.11")}
	if got, want := str(serviceDestinations(req, v4)),
		"10.96.0.50/2/80/6 10.96.0.50/2/53/17 203.0.113.9/2/80/6 203.0.113.9/2/53/17 invalid IP/2/30080/6"; got != want {
		t.Errorf("IPv4 node:\n got %s\nwant %s", got, want)
	}
	both := append(v4, netip.MustParseAddr("fd00::11"))
	if got := str(serviceDestinations(req, both)); !strings.HasSuffix(got, "invalid IP/2/30080/6 invalid IP/10/30080/6") {
		t.Errorf("dual-stack node: %s", got)
	}
	if got := str(serviceDestinations(req, nil)); strings.Contains(got, "30080") {
		t.Errorf("NodePort dumped without NodePort addresses: %s", got)
	}
}

// TestReadInNetns makes real NATed flows in a test namespace: one to a
// backend that is not in the endpoint set, then three to the live one.
func TestReadInNetns(t *testing.T) {
	s := netns.NewScenario(t)
	cluster := fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort)
	s.SetBackend(t, s.StalePort)
	s.Connect(t, cluster)
	s.SetBackend(t, s.BackendPort)
	for i := 0; i < 3; i++ {
		s.Connect(t, cluster)
	}
	req := &collectorapi.Request{
		Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{s.ClusterIP},
			// The NodePort has no flows; it makes the reader send an address-less filter too.
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort), NodePort: 30080}}},
		Endpoints:             []collectorapi.Endpoint{{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.BackendPort)}, Ready: true}},
		ConntrackSampleMillis: 100,
	}
	// Another Service's NATed flow and a direct (un-NATed) flow: neither is this Service's.
	s.Connect(t, fmt.Sprintf("%s:%d", s.ClusterIP, s.OtherServicePort))
	s.Connect(t, fmt.Sprintf("%s:%d", s.PodIP, s.BackendPort))
	for _, method := range []string{MethodAuto, MethodTupleFilter, MethodStatusFilter} {
		t.Run("method="+method, func(t *testing.T) { checkReadInNetns(t, s, req, method) })
	}
}

// readInNode reads the scenario node's conntrack state with one method.
func readInNode(t *testing.T, s *netns.Scenario, req *collectorapi.Request, method string) *collectorapi.ConntrackObservation {
	t.Helper()
	var obs *collectorapi.ConntrackObservation
	var err error
	netns.Do(t, s.Node, func() {
		obs, err = (&Reader{NetNS: int(s.Node.Handle(t)), Method: method}).Read(context.Background(), req)
	})
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

func checkReadInNetns(t *testing.T, s *netns.Scenario, req *collectorapi.Request, method string) {
	cluster := fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort)
	obs := readInNode(t, s, req, method)
	if obs.Flows != nil {
		t.Logf("dump filter %q, %d entries dumped", obs.Flows.DumpFilter, obs.Flows.DumpedEntries)
		switch method {
		case MethodAuto, MethodTupleFilter:
			// The kernel returned exactly this Service's 4 flows.
			if !strings.HasPrefix(obs.Flows.DumpFilter, "original destination") || obs.Flows.DumpedEntries != 4 {
				t.Errorf("tuple filter not used or not filtering: %q, %d entries", obs.Flows.DumpFilter, obs.Flows.DumpedEntries)
			}
		case MethodStatusFilter:
			// Every NATed entry comes back, including the other Service's.
			if obs.Flows.DumpedEntries != 5 {
				t.Errorf("status filter dumped %d entries, want 5", obs.Flows.DumpedEntries)
			}
		}
	}
	if obs.StatsError != "" || obs.Stats == nil || obs.StatsDelta == nil || len(obs.StatsPerCPU) == 0 {
		t.Fatalf("stats: %+v err %q", obs.Stats, obs.StatsError)
	}
	if obs.Stats.Found+obs.Stats.Invalid+obs.Stats.SearchRestart == 0 && obs.Count == 0 {
		t.Errorf("no conntrack activity seen at all: %+v count %d", obs.Stats, obs.Count)
	}
	if obs.Max <= 0 || obs.SysctlError != "" {
		t.Errorf("max %d sysctl error %q", obs.Max, obs.SysctlError)
	}
	if obs.Count < 6 {
		t.Errorf("count %d, want at least the 4 flows made", obs.Count)
	}
	if obs.ProcStatError == "" {
		if _, ok := obs.ProcStat["clashres"]; !ok {
			t.Errorf("procStat without clashres: %v", obs.ProcStat)
		}
	}
	if obs.FlowsError != "" || obs.Flows == nil || len(obs.Flows.Frontends) != 1 {
		t.Fatalf("flows %+v err %q", obs.Flows, obs.FlowsError)
	}
	fe := obs.Flows.Frontends[0]
	if fe.Frontend != cluster+"/TCP" || fe.Total != 4 {
		t.Fatalf("frontend %+v", fe)
	}
	live, stale := fmt.Sprintf("%s:%d", s.PodIP, s.BackendPort), fmt.Sprintf("%s:%d", s.PodIP, s.StalePort)
	counts := map[string]int{}
	for _, b := range fe.Backends {
		counts[b.Backend] = b.Count
		if b.Expected != (b.Backend == live) {
			t.Errorf("backend %s expected=%v", b.Backend, b.Expected)
		}
	}
	if counts[live] != 3 || counts[stale] != 1 {
		t.Errorf("per-backend counts %v", counts)
	}
	if obs.Flows.UnexpectedTotal != 1 || len(obs.Flows.Unexpected) != 1 || obs.Flows.Unexpected[0].Backend != stale {
		t.Errorf("unexpected flows %+v", obs.Flows.Unexpected)
	}
}

// TestNodePortFlowsInNetns makes real flows to port 30080 in a test
// namespace: through the Service's NodePort on the node's address and on its
// externalIP, and, with the same port number, to another Service's ClusterIP
// (DNATed elsewhere) and to a Pod's own listener (not NATed). Only the first
// two are the Service's; the observation names the addresses it used.
func TestNodePortFlowsInNetns(t *testing.T) {
	s := netns.NewScenario(t)
	const nodePort, externalIP, otherClusterIP = 30080, "10.96.0.88", "10.96.0.77"
	// A NodePort rule the way kube-proxy matches it (destination local),
	// an externalIP:NodePort rule, and another Service whose ClusterIP port
	// is the same number, DNATed to the stale listener.
	ruleset := fmt.Sprintf(`table ip svctrace-np-test {
	chain out {
		type nat hook output priority -110; policy accept;
		fib daddr type local tcp dport %[1]d dnat to %[2]s:%[3]d
		ip daddr %[4]s tcp dport %[1]d dnat to %[2]s:%[3]d
		ip daddr %[5]s tcp dport %[1]d dnat to %[2]s:%[6]d
	}
}
`, nodePort, s.PodIP, s.BackendPort, externalIP, otherClusterIP, s.StalePort)
	cmd := exec.Command("ip", "netns", "exec", s.Node.Name, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	// The Pod's own port 30080.
	s.Pod.Start(t, nil, "socat", "-u", fmt.Sprintf("TCP-LISTEN:%d,bind=%s,fork,reuseaddr", nodePort, s.PodIP), "OPEN:/dev/null")
	netns.WaitListen(t, s.Pod, fmt.Sprintf("%s:%d", s.PodIP, nodePort))

	s.Connect(t, fmt.Sprintf("%s:%d", s.NodeIP, nodePort))
	s.Connect(t, fmt.Sprintf("%s:%d", s.NodeIP, nodePort))
	s.Connect(t, fmt.Sprintf("%s:%d", externalIP, nodePort))
	s.Connect(t, fmt.Sprintf("%s:%d", otherClusterIP, nodePort))
	s.Connect(t, fmt.Sprintf("%s:%d", s.PodIP, nodePort))

	req := &collectorapi.Request{
		Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", Type: "NodePort", ClusterIPs: []string{s.ClusterIP},
			ExternalIPs: []string{externalIP},
			Ports:       []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort), NodePort: nodePort}}},
		Endpoints:             []collectorapi.Endpoint{{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.BackendPort)}, Ready: true}},
		ConntrackSampleMillis: 50,
	}
	live := fmt.Sprintf("%s:%d", s.PodIP, s.BackendPort)
	for _, method := range []string{MethodAuto, MethodTupleFilter, MethodStatusFilter} {
		t.Run("method="+method, func(t *testing.T) {
			obs := readInNode(t, s, req, method)
			f := obs.Flows
			if obs.FlowsError != "" || f == nil {
				t.Fatalf("flows %+v err %q", f, obs.FlowsError)
			}
			t.Logf("dump filter %q, %d entries dumped, NodePort addresses %v", f.DumpFilter, f.DumpedEntries, f.NodePortAddresses)
			// What the kernel returned before the address filter: the five
			// flows to port 30080 (tuple filter: port and protocol), or
			// every NATed entry (the four of them).
			wantDumped := map[string]int{MethodAuto: 5, MethodTupleFilter: 5, MethodStatusFilter: 4}[method]
			if f.DumpedEntries != wantDumped {
				t.Errorf("dumped %d entries, want %d", f.DumpedEntries, wantDumped)
			}
			if f.NodePortAddressesError != "" || !slices.Contains(f.NodePortAddresses, s.NodeIP) || !slices.Contains(f.NodePortAddresses, "127.0.0.1") ||
				!slices.Contains(f.NodePortAddresses, externalIP) || slices.Contains(f.NodePortAddresses, s.PodIP) || slices.Contains(f.NodePortAddresses, otherClusterIP) {
				t.Errorf("NodePort addresses %v (%s)", f.NodePortAddresses, f.NodePortAddressesError)
			}
			got := map[string]string{}
			for _, fe := range f.Frontends {
				var bs []string
				for _, b := range fe.Backends {
					bs = append(bs, fmt.Sprintf("%s=%d", b.Backend, b.Count))
				}
				got[fe.Frontend] = fmt.Sprintf("%d %s", fe.Total, strings.Join(bs, ","))
			}
			want := map[string]string{
				fmt.Sprintf("%s:%d/TCP", s.NodeIP, nodePort):   "2 " + live + "=2",
				fmt.Sprintf("%s:%d/TCP", externalIP, nodePort): "1 " + live + "=1",
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("frontends\n got %v\nwant %v", got, want)
			}
			if f.UnexpectedTotal != 0 {
				t.Errorf("flows to port %d of other addresses counted as stale: %+v", nodePort, f.Unexpected)
			}
		})
	}
}

// TestLocalAddrsSkipIPVSDummy: kube-ipvs0 holds every ClusterIP in IPVS
// mode; its addresses are not NodePort destinations.
func TestLocalAddrsSkipIPVSDummy(t *testing.T) {
	s := netns.NewScenario(t)
	s.Node.MustRun(t, "ip", "link", "add", "kube-ipvs0", "type", "bridge") // no dummy driver on every kernel; only the name matters
	s.Node.MustRun(t, "ip", "addr", "add", "10.96.0.77/32", "dev", "kube-ipvs0")
	h := s.Node.Handle(t)
	addrs, err := localAddrs(int(h))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(addrs, netip.MustParseAddr(s.NodeIP)) {
		t.Errorf("node address %s missing from %v", s.NodeIP, addrs)
	}
	if slices.Contains(addrs, netip.MustParseAddr("10.96.0.77")) {
		t.Errorf("kube-ipvs0's ClusterIP counted as a node address: %v", addrs)
	}
}

// TestSampleSpansTheOtherSections: with the interval left to the collector,
// the statistics sample ends when SampleUntil closes, not before
// MinSampleMillis, and records the interval it measured; an interval the
// request sets is kept whatever SampleUntil does.
func TestSampleSpansTheOtherSections(t *testing.T) {
	s := netns.NewScenario(t)
	req := &collectorapi.Request{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{s.ClusterIP},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort)}}}}
	read := func(req *collectorapi.Request, closeAfter time.Duration) (*collectorapi.ConntrackObservation, time.Duration) {
		until := make(chan struct{})
		time.AfterFunc(closeAfter, func() { close(until) })
		var obs *collectorapi.ConntrackObservation
		var err error
		start := time.Now()
		netns.Do(t, s.Node, func() {
			obs, err = (&Reader{NetNS: int(s.Node.Handle(t)), SampleUntil: until}).Read(context.Background(), req)
		})
		if err != nil {
			t.Fatal(err)
		}
		if obs.StatsDelta == nil {
			t.Fatalf("no statistics delta: %q", obs.StatsError)
		}
		return obs, time.Since(start)
	}
	// The other sections are done at once: the minimum holds.
	obs, took := read(req, 0)
	if obs.SampleIntervalMillis < MinSampleMillis || took < MinSampleMillis*time.Millisecond {
		t.Errorf("sample of %d ms (read in %s) ended before the %d ms minimum", obs.SampleIntervalMillis, took, MinSampleMillis)
	}
	if obs.SampleIntervalMillis >= collectorapi.DefaultConntrackSampleMillis {
		t.Errorf("sample of %d ms did not end with the other sections", obs.SampleIntervalMillis)
	}
	// They take 700 ms: the sample spans them, and says so. It starts with
	// the reader's first statistics read, after the netlink dial and that
	// read, which took 118 ms once on a freshly booted, busy machine: up to
	// 300 ms of them still leave a sample 100 ms longer than the minimum.
	if obs, took := read(req, 700*time.Millisecond); obs.SampleIntervalMillis < MinSampleMillis+100 || obs.SampleIntervalMillis >= collectorapi.DefaultConntrackSampleMillis {
		t.Errorf("sample of %d ms (read in %s), want about the 700 ms the other sections took", obs.SampleIntervalMillis, took)
	}
	// An interval the request asks for is kept.
	fixed := *req
	fixed.ConntrackSampleMillis = 700
	if obs, _ = read(&fixed, 0); obs.SampleIntervalMillis < 700 {
		t.Errorf("sample of %d ms, the request asked for 700", obs.SampleIntervalMillis)
	}
}
