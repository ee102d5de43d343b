package route

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// TestSysctlsFromRecordedProc reads a recorded /proc/sys tree: br_netfilter
// not loaded, so bridge-nf-call-iptables is "absent".
func TestSysctlsFromRecordedProc(t *testing.T) {
	root := t.TempDir()
	for path, v := range map[string]string{
		"sys/net/ipv4/ip_forward":             "1\n",
		"sys/net/ipv6/conf/all/forwarding":    "0\n",
		"sys/net/ipv4/conf/all/rp_filter":     "2\n",
		"sys/net/ipv4/conf/default/rp_filter": "1\n",
	} {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := &Reader{ProcRoot: root}
	if got := r.sysctl("net/ipv4/ip_forward"); got != "1" {
		t.Errorf("ip_forward %q", got)
	}
	if got := r.sysctl("net/ipv4/conf/all/rp_filter"); got != "2" {
		t.Errorf("rp_filter %q", got)
	}
	if got := r.sysctl("net/bridge/bridge-nf-call-iptables"); got != "absent" {
		t.Errorf("bridge-nf-call-iptables %q", got)
	}
	if got := RouteTargets(&collectorapi.Request{Endpoints: []collectorapi.Endpoint{{IP: "10.244.1.5"}}}); len(got) != 1 || got[0] != "10.244.1.5" {
		t.Errorf("endpoint IPs as route targets: %v", got)
	}
	if RouteTypeName(unix.RTN_BLACKHOLE) != "blackhole" || RouteTypeName(99) != "type-99" {
		t.Error("route type names")
	}
}

// TestReadInNetns builds a veth pair into a second namespace and a blackhole
// route, all inside namespaces the test creates, and reads them through a
// netlink handle bound to the test namespace.
func TestReadInNetns(t *testing.T) {
	node := netns.New(t, "rt")
	pod := netns.New(t, "rtpod")
	netns.VethPair(t, node, "veth-pod", "10.250.0.1/24", pod, "eth0", "10.250.0.2/24")
	node.MustRun(t, "ip", "route", "add", "blackhole", "10.251.0.0/16")
	node.MustRun(t, "ip", "route", "add", "10.252.0.7/32", "via", "10.250.0.2")
	node.MustRun(t, "ip", "-6", "addr", "add", "fd00:250::1/64", "dev", "veth-pod", "nodad")
	pod.MustRun(t, "ip", "-6", "addr", "add", "fd00:250::2/64", "dev", "eth0", "nodad")

	h, err := netlink.NewHandleAt(node.Handle(t))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	// Sysctls are per netns too: read them from a thread inside the namespace.
	var obs *collectorapi.RouteObservation
	netns.Do(t, node, func() {
		obs, err = (&Reader{Handle: h}).Read(context.Background(), &collectorapi.Request{
			PodIPs: []string{"10.250.0.2", "10.251.3.4", "10.252.0.7", "10.250.0.2", "fd00:250::2", "fd00:999::1"},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Routes) != 5 {
		t.Fatalf("want 5 lookups (duplicates dropped), got %+v", obs.Routes)
	}
	if v6 := obs.Routes[3]; v6.Device != "veth-pod" || v6.Type != "unicast" || v6.RPFilterDevice != "" {
		t.Errorf("IPv6 route %+v", v6)
	}
	// No IPv6 default route in the namespace: the kernel says unreachable.
	if none := obs.Routes[4]; none.Error == "" || none.Device != "" {
		t.Errorf("IPv6 without route %+v", none)
	}
	direct, black, viaGW := obs.Routes[0], obs.Routes[1], obs.Routes[2]
	if direct.Device != "veth-pod" || direct.Type != "unicast" || direct.Gateway != "" || direct.Source != "10.250.0.1" {
		t.Errorf("direct route %+v", direct)
	}
	if direct.Link == nil || direct.Link.Kind != "veth" || !direct.Link.AdminUp {
		t.Errorf("direct link %+v", direct.Link)
	}
	if direct.RPFilterDevice == "" || direct.RPFilterDevice == "absent" {
		t.Errorf("rp_filter of device %q", direct.RPFilterDevice)
	}
	if black.Type != "blackhole" && black.Error == "" {
		t.Errorf("blackhole route %+v", black)
	}
	if viaGW.Gateway != "10.250.0.2" || viaGW.Device != "veth-pod" {
		t.Errorf("gateway route %+v", viaGW)
	}
	// A fresh netns has forwarding off; the test did not touch it.
	if obs.IPv4Forward != "0" {
		t.Errorf("ip_forward in a fresh netns %q", obs.IPv4Forward)
	}
}

// BenchmarkReadManyPodIPs: a 5,000-endpoint Service's Pod IPs, all routed
// through one device, as on a node with one CNI bridge or tunnel.
func BenchmarkReadManyPodIPs(b *testing.B) {
	node := netns.New(b, "rtb")
	pod := netns.New(b, "rtbpod")
	netns.VethPair(b, node, "veth-pod", "10.250.0.1/24", pod, "eth0", "10.250.0.2/24")
	node.MustRun(b, "ip", "route", "add", "10.240.0.0/12", "via", "10.250.0.2")
	req := &collectorapi.Request{}
	for i := range 5000 {
		req.PodIPs = append(req.PodIPs, fmt.Sprintf("10.24%d.%d.%d", 1+i/65536, (i/256)%256, i%256))
	}
	h, err := netlink.NewHandleAt(node.Handle(b))
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	b.ReportAllocs()
	netns.Do(b, node, func() {
		for b.Loop() {
			obs, err := (&Reader{Handle: h}).Read(context.Background(), req)
			if err != nil || len(obs.Routes) != 5000 || obs.Routes[4999].Device != "veth-pod" {
				b.Fatalf("%v %d", err, len(obs.Routes))
			}
		}
	})
}
