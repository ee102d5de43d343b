package ipvs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/moby/ipvs"
	"github.com/vishvananda/netlink"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// fakeIPVS replays recorded IPVS state: what `ipvsadm -Ln` showed on an
// IPVS-mode kube-proxy node for default/web (ClusterIP 10.96.0.50:80,
// NodePort 30080, session affinity ClientIP), one real server draining.
// This kernel has no IPVS, so the reader is tested through the interface.
type fakeIPVS struct {
	services map[string]*ipvs.Service
	dests    map[string][]*ipvs.Destination
	err      error
}

func key(ip net.IP, port, proto uint16) string {
	return fmt.Sprintf("%s/%d", netip.AddrPortFrom(netip.MustParseAddr(ip.String()), port), proto)
}

func (f *fakeIPVS) GetService(s *ipvs.Service) (*ipvs.Service, error) {
	if f.err != nil {
		return nil, f.err
	}
	if svc, ok := f.services[key(s.Address, s.Port, s.Protocol)]; ok {
		return svc, nil
	}
	return nil, errors.New("Expected only one service obtained=0")
}

func (f *fakeIPVS) GetDestinations(s *ipvs.Service) ([]*ipvs.Destination, error) {
	return f.dests[key(s.Address, s.Port, s.Protocol)], nil
}

func recorded() *fakeIPVS {
	f := &fakeIPVS{services: map[string]*ipvs.Service{}, dests: map[string][]*ipvs.Destination{}}
	add := func(ip string, port uint16) {
		svc := &ipvs.Service{Address: net.ParseIP(ip), Port: port, Protocol: syscall.IPPROTO_TCP, AddressFamily: syscall.AF_INET,
			SchedName: "rr", Flags: FlagPersistent | FlagHashed, Timeout: 10800, Netmask: 0xffffffff}
		k := key(svc.Address, port, syscall.IPPROTO_TCP)
		f.services[k] = svc
		f.dests[k] = []*ipvs.Destination{
			{Address: net.ParseIP("10.244.1.5"), Port: 8080, Weight: 1, ActiveConnections: 2, InactiveConnections: 1},
			{Address: net.ParseIP("10.244.2.7"), Port: 8080, Weight: 0, ActiveConnections: 1, InactiveConnections: 0},
		}
	}
	add("10.96.0.50", 80)
	add("10.0.0.11", 30080)
	return f
}

func webRequest() *collectorapi.Request {
	return &collectorapi.Request{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", Type: "NodePort",
		ClusterIPs: []string{"10.96.0.50"},
		Ports:      []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}}}}
}

func TestReadRecorded(t *testing.T) {
	r := &Reader{Handle: recorded(), NodeIPs: []netip.Addr{netip.MustParseAddr("10.0.0.11"), netip.MustParseAddr("10.0.1.11")},
		KubeIPVS0: &collectorapi.LinkAddresses{Name: "kube-ipvs0", Present: true, Addresses: []string{"10.96.0.50"}}}
	obs, err := r.Read(context.Background(), webRequest())
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Available || len(obs.VirtualServers) != 3 {
		t.Fatalf("%+v", obs)
	}
	cluster, np1, np2 := obs.VirtualServers[0], obs.VirtualServers[1], obs.VirtualServers[2]
	if !cluster.Found || cluster.Frontend != "clusterIP" || cluster.Scheduler != "rr" || cluster.TimeoutSeconds != 10800 {
		t.Errorf("cluster VS %+v", cluster)
	}
	if len(cluster.FlagNames) != 2 || cluster.FlagNames[0] != "persistent" {
		t.Errorf("flags %v", cluster.FlagNames)
	}
	if len(cluster.RealServers) != 2 || cluster.RealServers[1].Weight != 0 || cluster.RealServers[0].ActiveConns != 2 || cluster.RealServers[0].Forwarding != "masq" {
		t.Errorf("real servers %+v", cluster.RealServers)
	}
	if !np1.Found || np1.Frontend != "nodePort" || np1.Address != "10.0.0.11" || np1.Port != 30080 {
		t.Errorf("nodeport VS %+v", np1)
	}
	// Missing on the second node IP: reported as not found, not as an error.
	if np2.Found || np2.Error != "" || np2.Address != "10.0.1.11" {
		t.Errorf("missing VS %+v", np2)
	}
}

func TestReadHandleError(t *testing.T) {
	r := &Reader{Handle: &fakeIPVS{err: errors.New("netlink receive: permission denied")}}
	obs, err := r.Read(context.Background(), webRequest())
	if err != nil {
		t.Fatal(err)
	}
	if obs.VirtualServers[0].Found || obs.VirtualServers[0].Error == "" {
		t.Errorf("%+v", obs.VirtualServers[0])
	}
}

func TestAvailable(t *testing.T) {
	proc := t.TempDir()
	if Available(proc) {
		t.Fatal("empty proc reports IPVS")
	}
	if err := os.MkdirAll(filepath.Join(proc, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "net", "ip_vs"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !Available(proc) {
		t.Fatal("ip_vs present but not reported")
	}
}

// TestReadThisKernel runs the real entry point. On a kernel without IPVS
// (like the development machine) it must say so as "unavailable".
func TestReadThisKernel(t *testing.T) {
	if Available("/proc/thread-self") {
		t.Skip("this kernel has IPVS loaded; the recorded-data tests cover the reader")
	}
	s := collectors.RunSection(context.Background(), func(ctx context.Context) (*collectorapi.IPVSObservation, error) {
		return Read(ctx, webRequest())
	})
	if s.Status != collectorapi.StatusUnavailable || s.Data == nil || s.Data.Available || s.Data.Status == "" {
		t.Fatalf("%+v", s)
	}
}

// fakeIPSets holds set name → entries, in ipset's syntax.
type fakeIPSets map[string]map[string]bool

func (f fakeIPSets) IpsetTest(set string, e *netlink.IPSetEntry) (bool, error) {
	members, ok := f[set]
	if !ok {
		return false, syscall.ENOENT
	}
	var text string
	switch {
	case e.IP2 != nil:
		text = fmt.Sprintf("%s,%s:%d,%s", e.IP, protoName(*e.Protocol), *e.Port, e.IP2)
	case e.IP != nil && e.Port != nil:
		text = fmt.Sprintf("%s,%s:%d", e.IP, protoName(*e.Protocol), *e.Port)
	case e.IP != nil:
		text = e.IP.String()
	default:
		text = fmt.Sprint(*e.Port)
	}
	return members[text], nil
}

func protoName(p uint8) string {
	return map[uint8]string{syscall.IPPROTO_TCP: "tcp", syscall.IPPROTO_UDP: "udp", 132: "sctp"}[p]
}

func TestReadIPSets(t *testing.T) {
	req := webRequest()
	req.NodeName = "n1"
	req.Service.ExternalTrafficPolicy = "Local"
	req.Endpoints = []collectorapi.Endpoint{{IP: "10.244.1.5", Ports: map[string]int32{"http": 8080}, NodeName: "n1"},
		{IP: "10.244.2.7", Ports: map[string]int32{"http": 8080}, NodeName: "n2"}}
	sets := fakeIPSets{
		"KUBE-CLUSTER-IP":          {"10.96.0.50,tcp:80": true},
		"KUBE-NODE-PORT-TCP":       {"30080": true},
		"KUBE-NODE-PORT-LOCAL-TCP": {},
		"KUBE-LOOP-BACK":           {"10.244.1.5,tcp:8080,10.244.1.5": true},
		"KUBE-IPVS-IPS":            {"10.96.0.50": true},
	}
	r := &Reader{Handle: recorded(), IPSets: sets, Sysctls: map[string]string{"net.ipv4.vs.conntrack": "1"}, KernelRelease: "6.1.176"}
	obs, err := r.Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]collectorapi.IPSetMembership{}
	for _, m := range obs.IPSets {
		got[m.Set+" "+m.Entry] = m
	}
	for key, want := range map[string]bool{
		"KUBE-CLUSTER-IP 10.96.0.50,tcp:80":             true,
		"KUBE-NODE-PORT-TCP 30080":                      true,
		"KUBE-NODE-PORT-LOCAL-TCP 30080":                false,
		"KUBE-LOOP-BACK 10.244.1.5,tcp:8080,10.244.1.5": true,
		"KUBE-IPVS-IPS 10.96.0.50":                      true,
	} {
		m, ok := got[key]
		if !ok || m.Found != want || m.SetMissing || m.Error != "" {
			t.Errorf("%s: %+v (present %v), want found=%v", key, m, ok, want)
		}
	}
	if _, ok := got["KUBE-LOOP-BACK 10.244.2.7,tcp:8080,10.244.2.7"]; ok {
		t.Error("a remote endpoint was looked up in KUBE-LOOP-BACK")
	}
	if obs.Sysctls["net.ipv4.vs.conntrack"] != "1" || obs.KernelRelease != "6.1.176" {
		t.Errorf("sysctls %v kernel %q", obs.Sysctls, obs.KernelRelease)
	}
	// A set that does not exist is said so, not an error.
	delete(sets, "KUBE-CLUSTER-IP")
	obs, _ = r.Read(context.Background(), req)
	for _, m := range obs.IPSets {
		if m.Set == "KUBE-CLUSTER-IP" && (!m.SetMissing || m.Found || m.Error != "") {
			t.Errorf("missing set: %+v", m)
		}
	}
}

func TestIPSetNameIPv6(t *testing.T) {
	if got := ipsetName("KUBE-NODE-PORT-LOCAL-SCTP-HASH", true); got != "KUBE-6-NODE-PORT-LOCAL-SCTP-HAS" {
		t.Errorf("%q", got)
	}
	if got := ipsetName("KUBE-CLUSTER-IP", false); got != "KUBE-CLUSTER-IP" {
		t.Errorf("%q", got)
	}
}
