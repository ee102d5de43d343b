package probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/sockets"
)

// newNetns creates a network namespace of the test's own (svcl- prefix)
// with loopback up, removed at cleanup.
func newNetns(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to create a network namespace (setns, ip netns add)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip")
	}
	name := fmt.Sprintf("svcl-%d", os.Getpid())
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", name, err, out)
		}
	})
	if out, err := exec.Command("ip", "-n", name, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("lo up: %v: %s", err, out)
	}
	return "/var/run/netns/" + name
}

func TestInNetnsProbesInsideAndLeavesTheCallerOutside(t *testing.T) {
	path := newNetns(t)
	rootNS, _ := os.Readlink("/proc/thread-self/ns/net")

	// A listener created inside the namespace; its socket stays there.
	var ln net.Listener
	if err := InNetns(path, func() (err error) {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	open := netip.MustParseAddrPort(ln.Addr().String())
	closed := netip.AddrPortFrom(open.Addr(), open.Port()+1)

	var insideNS string
	var probes []collectorapi.Probe
	var peer string
	var hit bool
	err := InNetns(path, func() error {
		insideNS, _ = os.Readlink("/proc/thread-self/ns/net")
		var err error
		peer, hit, err = connectOnce(context.Background(), open, open, time.Second)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	probes, err = probeInNetns(context.Background(), path, []Target{
		{Kind: "endpoint", Addr: open, Protocol: "TCP"},
		{Kind: "endpoint", Addr: closed, Protocol: "TCP"},
	}, time.Second, 2)
	if err != nil {
		t.Fatal(err)
	}
	if insideNS == rootNS || insideNS == "" {
		t.Fatalf("f ran in %q, the caller's namespace is %q", insideNS, rootNS)
	}
	if after, _ := os.Readlink("/proc/thread-self/ns/net"); after != rootNS {
		t.Fatalf("the caller is now in %q, want %q", after, rootNS)
	}
	if probes[0].Outcome != OutcomeConnected || probes[1].ErrorClass != collectorapi.ErrClassRefused {
		t.Fatalf("probes %+v, want connected then refused", probes)
	}
	if !hit || peer != "127.0.0.1" {
		t.Fatalf("connection to itself not found in the namespace's TCP table (peer %q)", peer)
	}
	// The same address from the root namespace is someone else's, or no one's.
	if c, err := net.DialTimeout("tcp", open.String(), 200*time.Millisecond); err == nil {
		c.Close()
		t.Logf("the root namespace has its own listener on %s", open)
	}
}

func TestInNetnsRefusesAMissingNamespace(t *testing.T) {
	err := InNetns("/proc/0/ns/net", func() error { t.Fatal("f ran"); return nil })
	if err == nil || !strings.Contains(err.Error(), "cannot open") {
		t.Fatalf("err = %v", err)
	}
}

func TestReadClientNotAskedSaysHowToEnable(t *testing.T) {
	req := &collectorapi.Request{Client: &collectorapi.ClientPod{Namespace: "shop", Name: "web-0", UID: "u"}}
	out := ReadClient(context.Background(), req, "/proc", time.Second)
	if !strings.Contains(out.Skipped, "--client-netns") || out.Probes != nil {
		t.Fatalf("got %+v", out)
	}
}

func TestReadClientNoProcessOfThePod(t *testing.T) {
	root := t.TempDir()
	for pid, cg := range map[string]string{"1": "0::/init.scope\n", "42": "0::/kubepods.slice/kubepods-podaaaa_bbbb.slice/cri-containerd-1.scope\n"} {
		if err := os.MkdirAll(root+"/"+pid, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(root+"/"+pid+"/cgroup", []byte(cg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	req := &collectorapi.Request{Client: &collectorapi.ClientPod{Namespace: "shop", Name: "web-0", UID: "cccc-dddd", EnterNetns: true}}
	out := ReadClient(context.Background(), req, root, time.Second)
	if !strings.Contains(out.Skipped, "no process of Pod shop/web-0") || !strings.Contains(out.Skipped, "2 processes") {
		t.Fatalf("got %q", out.Skipped)
	}
	pid, _, _, err := sockets.FindPodProcess(context.Background(), root, "aaaa-bbbb")
	if err != nil || pid != 42 {
		t.Fatalf("systemd-driver cgroup path: pid %d err %v, want 42", pid, err)
	}
}

func TestHairpinTargetIsThePodsOwnEndpoint(t *testing.T) {
	req := &collectorapi.Request{
		Service: collectorapi.ServiceSpec{ClusterIPs: []string{"10.96.0.50"}, Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
		Endpoints: []collectorapi.Endpoint{
			{IP: "10.244.1.4", Ports: map[string]int32{"http": 8080}},
			{IP: "10.244.1.5", Ports: map[string]int32{"http": 8080}},
		},
		Client: &collectorapi.ClientPod{IPs: []string{"10.244.1.5"}},
	}
	fe, self, ok := hairpinTarget(req)
	if !ok || fe.String() != "10.96.0.50:80" || self.String() != "10.244.1.5:8080" {
		t.Fatalf("got %v %v %v", fe, self, ok)
	}
	req.Client.IPs = []string{"10.244.2.9"}
	if _, _, ok := hairpinTarget(req); ok {
		t.Fatal("a Pod that is no endpoint has no hairpin target")
	}
}

func TestPodLinkPeerIsTheVethPeer(t *testing.T) {
	path := newNetns(t)
	name := path[len("/var/run/netns/"):]
	for _, args := range [][]string{
		{"-n", name, "link", "add", "svcl-pod", "type", "veth", "peer", "name", "svcl-host"},
		{"-n", name, "addr", "add", "10.99.0.1/24", "dev", "svcl-pod"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}
	var peer, hostIndex int
	if err := InNetns(path, func() error {
		peer = podLinkPeer("10.99.0.1:8080")
		ifc, err := net.InterfaceByName("svcl-host")
		if err == nil {
			hostIndex = ifc.Index
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if peer == 0 || peer != hostIndex {
		t.Fatalf("peer of the interface holding 10.99.0.1 = %d, want svcl-host's index %d", peer, hostIndex)
	}
}

// The layout is the kernel's: /sys/class/net/<if>/brport/hairpin_mode
// exists only for an interface enslaved to a bridge.
func TestBridgeHairpinMode(t *testing.T) {
	root := t.TempDir()
	for ifname, mode := range map[string]string{"vethbr0": "0\n", "vethbr1": "1\n"} {
		dir := root + "/class/net/" + ifname + "/brport"
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dir+"/hairpin_mode", []byte(mode), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(root+"/class/net/vethptp", 0o755); err != nil {
		t.Fatal(err)
	}
	for ifname, want := range map[string]string{"vethbr0": "0", "vethbr1": "1", "vethptp": "", "missing": ""} {
		if got := BridgeHairpinMode(root, ifname); got != want {
			t.Errorf("%s: %q, want %q", ifname, got, want)
		}
	}
}
