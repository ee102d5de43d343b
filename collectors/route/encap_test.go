package route

import (
	"context"
	"encoding/json"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// recordedEncapFixture holds node a's flannel.1 as read in each case of
// TestEncapProbeOnRealVXLAN; trace judges the probes in its own tests.
const recordedEncapFixture = "../testdata/route/real-vxlan-encap-netns.json"

// vtep is one node of a two-node flannel overlay built in test namespaces.
type vtep struct {
	ns        *netns.NS
	publicIP  string
	subnetIP  string
	mac       string
	podSubnet string
}

// flannelPair builds two nodes joined by a veth (the underlay) with
// flannel.1 on each as flannel's vxlan backend programs it: VNI 1, port
// 8472, the first subnet address /32 on the device, and for the other node
// the route, permanent neighbour entry and FDB entry.
func flannelPair(t *testing.T) (a, b vtep) {
	t.Helper()
	netns.RequireTools(t, "bridge")
	a = vtep{ns: netns.NewNamed(t, "svenc-a"), publicIP: "192.168.78.11", subnetIP: "10.245.1.0", mac: "0a:58:0a:f5:01:00", podSubnet: "10.245.1.0/24"}
	b = vtep{ns: netns.NewNamed(t, "svenc-b"), publicIP: "192.168.78.12", subnetIP: "10.245.2.0", mac: "0a:58:0a:f5:02:00", podSubnet: "10.245.2.0/24"}
	netns.VethPair(t, a.ns, "eth0", a.publicIP+"/24", b.ns, "eth0", b.publicIP+"/24")
	for _, n := range []vtep{a, b} {
		n.ns.MustRun(t, "ip", "link", "add", "flannel.1", "type", "vxlan", "id", "1", "local", n.publicIP, "dev", "eth0", "dstport", "8472", "nolearning")
		n.ns.MustRun(t, "ip", "link", "set", "flannel.1", "mtu", "1450", "address", n.mac)
		n.ns.MustRun(t, "ip", "addr", "add", n.subnetIP+"/32", "dev", "flannel.1")
		n.ns.MustRun(t, "ip", "link", "set", "flannel.1", "up")
	}
	for _, p := range [][2]vtep{{a, b}, {b, a}} {
		self, remote := p[0], p[1]
		self.ns.MustRun(t, "bridge", "fdb", "replace", remote.mac, "dev", "flannel.1", "dst", remote.publicIP, "self", "permanent")
		self.ns.MustRun(t, "ip", "neigh", "replace", remote.subnetIP, "lladdr", remote.mac, "dev", "flannel.1", "nud", "permanent")
		self.ns.MustRun(t, "ip", "route", "add", remote.podSubnet, "via", remote.subnetIP, "dev", "flannel.1", "onlink")
	}
	return a, b
}

// readOverlay runs the route reader inside n's namespace.
func readOverlay(t *testing.T, n vtep) collectorapi.OverlayDevice {
	t.Helper()
	h, err := netlink.NewHandleAt(n.ns.Handle(t))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var obs *collectorapi.RouteObservation
	netns.Do(t, n.ns, func() {
		obs, err = (&Reader{Handle: h, EncapTimeout: 900 * time.Millisecond}).Read(context.Background(), &collectorapi.Request{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Overlays) != 1 {
		t.Fatalf("overlays %+v", obs.Overlays)
	}
	return obs.Overlays[0]
}

// TestEncapProbeOnRealVXLAN sends the crafted echo from node a's namespace
// through real VXLAN devices: answered when both ends are as flannel
// programs them (b's "port unreachable" for the inner datagram), the outer
// "port unreachable" when b has no VXLAN socket, silence when b drops UDP
// 8472 and when b lost its own entries for a (the way back). Node a's
// conntrack counts no INVALID packet for any of it.
func TestEncapProbeOnRealVXLAN(t *testing.T) {
	netns.RequireTools(t, "nft")
	recorded := map[string]collectorapi.OverlayDevice{}
	if *record {
		defer func() {
			if t.Failed() {
				return
			}
			b, err := json.MarshalIndent(recorded, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.FromSlash(recordedEncapFixture), append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}()
	}
	for _, tt := range []struct {
		name      string
		fault     func(t *testing.T, a, b vtep)
		answered  bool
		portUnrch bool
	}{
		{name: "healthy", fault: func(*testing.T, vtep, vtep) {}, answered: true},
		{name: "no VXLAN socket on the peer", fault: func(t *testing.T, _, b vtep) {
			b.ns.MustRun(t, "ip", "link", "del", "flannel.1")
		}, portUnrch: true},
		{name: "peer drops UDP 8472", fault: func(t *testing.T, _, b vtep) {
			b.ns.MustRun(t, "nft", "add table inet svenc; add chain inet svenc in { type filter hook input priority -10; }; add rule inet svenc in udp dport 8472 drop")
		}},
		{name: "peer lost its FDB entry for this node", fault: func(t *testing.T, a, b vtep) {
			b.ns.MustRun(t, "bridge", "fdb", "del", a.mac, "dev", "flannel.1", "dst", a.publicIP, "self")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a, b := flannelPair(t)
			tt.fault(t, a, b)
			// conntrack on in a's namespace (an nft rule that uses it): the
			// answers must not raise its "invalid" counter, the one the
			// conntrack layer judges on the node the collector runs on.
			// An ICMP error about a datagram conntrack never saw is counted
			// as icmp_error and passes untracked.
			a.ns.MustRun(t, "nft", "add table inet svenc-ct; add chain inet svenc-ct in { type filter hook input priority 0; }; add rule inet svenc-ct in ct state established counter")
			before := conntrackStat(t, a.ns, "invalid")
			o := readOverlay(t, a)
			if d := conntrackStat(t, a.ns, "invalid") - before; d != 0 {
				t.Errorf("conntrack counted %d packet(s) invalid in a's namespace during the probe", d)
			}
			recorded[tt.name] = o
			if o.EncapSkipped != "" || o.EncapPeers != 1 || len(o.Encap) != 1 {
				t.Fatalf("encap: skipped %q, peers %d, probes %+v (device %+v)", o.EncapSkipped, o.EncapPeers, o.Encap, o)
			}
			p := o.Encap[0]
			if p.Peer != b.publicIP || p.Port != 8472 || p.PeerMAC != b.mac || p.PeerOverlayIP != b.subnetIP || p.Source != a.subnetIP || p.Sent == 0 || p.Error != "" {
				t.Errorf("probe %+v", p)
			}
			if p.Answered != tt.answered || p.PortUnreachable != tt.portUnrch {
				t.Errorf("answered %v (want %v), port unreachable %v (want %v): %+v", p.Answered, tt.answered, p.PortUnreachable, tt.portUnrch, p)
			}
			if p.Answered && (p.RTTMicros <= 0 || p.Sent != 1) {
				t.Errorf("answered probe: rtt %dµs after %d sends", p.RTTMicros, p.Sent)
			}
		})
	}
}

func TestVXLANProbeFrame(t *testing.T) {
	// The frame's layers, checked byte by byte where the kernel looks.
	src, _ := netip.ParseAddr("10.245.1.0")
	dst, _ := netip.ParseAddr("10.245.2.0")
	sm, _ := net.ParseMAC("0a:58:0a:f5:01:00")
	dm, _ := net.ParseMAC("0a:58:0a:f5:02:00")
	b := vxlanProbe(1, sm, dm, src, dst, 47007)
	if b[0] != 0x08 || b[4] != 0 || b[5] != 0 || b[6] != 1 || b[7] != 0 {
		t.Errorf("VXLAN header % x", b[:8])
	}
	eth := b[8:]
	if net.HardwareAddr(eth[0:6]).String() != dm.String() || net.HardwareAddr(eth[6:12]).String() != sm.String() || eth[12] != 0x08 || eth[13] != 0 {
		t.Errorf("Ethernet header % x", eth[:14])
	}
	ip := eth[14:]
	if checksum(ip[:20]) != 0 {
		t.Errorf("IPv4 header checksum does not verify: % x", ip[:20])
	}
	if int(ip[2])<<8|int(ip[3]) != len(ip) || ip[9] != 17 || netip.AddrFrom4([4]byte(ip[12:16])) != src || netip.AddrFrom4([4]byte(ip[16:20])) != dst {
		t.Errorf("IPv4 header % x (packet %d bytes)", ip[:20], len(ip))
	}
	udp := ip[20:]
	if int(udp[0])<<8|int(udp[1]) != 47007 || int(udp[2])<<8|int(udp[3]) != ProbePort || int(udp[4])<<8|int(udp[5]) != len(udp) {
		t.Errorf("UDP header % x (%d bytes)", udp[:8], len(udp))
	}
}

// conntrackStat sums one column of /proc/net/stat/nf_conntrack (one row per
// CPU, hexadecimal) in n's namespace.
func conntrackStat(t *testing.T, n *netns.NS, column string) uint64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(n.MustRun(t, "cat", "/proc/net/stat/nf_conntrack")), "\n")
	col := slices.Index(strings.Fields(lines[0]), column)
	if col < 0 {
		t.Fatalf("no column %q in %q", column, lines[0])
	}
	var sum uint64
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		v, err := strconv.ParseUint(f[col], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		sum += v
	}
	return sum
}
