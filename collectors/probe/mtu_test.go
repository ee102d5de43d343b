package probe

import (
	"context"
	"net/netip"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// pathMTUIn probes addr from inside namespace n.
func pathMTUIn(t *testing.T, n *netns.NS, addr string) collectorapi.PathMTUProbe {
	t.Helper()
	var got []collectorapi.PathMTUProbe
	netns.Do(t, n, func() {
		got = PathMTU(context.Background(), []netip.Addr{netip.MustParseAddr(addr)}, 300*time.Millisecond)
	})
	if len(got) != 1 {
		t.Fatalf("probes %+v", got)
	}
	return got[0]
}

// TestPathMTUBlackholeInNetns: svfm-a's veth has MTU 1500, its peer in
// svfm-b 1400, so a 1500-byte frame is dropped on arrival (a veth drops
// frames above the receiver's MTU, and sends no ICMP). An nft rule in
// svfm-a also drops any "fragmentation needed" that might come back. The
// small probe is answered, the full-size one is lost: a PMTU blackhole.
// With both ends at 1500 the large probe is answered.
func TestPathMTUBlackholeInNetns(t *testing.T) {
	netns.RequireTools(t, "nft")
	a := netns.NewNamed(t, "svfm-a")
	b := netns.NewNamed(t, "svfm-b")
	netns.VethPair(t, a, "eth0", "10.253.0.1/24", b, "eth0", "10.253.0.2/24")
	a.MustRun(t, "nft", "add table inet svfm; add chain inet svfm in { type filter hook input priority 0; }; add rule inet svfm in icmp type destination-unreachable icmp code frag-needed drop")

	healthy := pathMTUIn(t, a, "10.253.0.2")
	if healthy.Error != "" || !healthy.SmallOK || !healthy.LargeOK || healthy.RouteMTU != 1500 || healthy.Device != "eth0" {
		t.Fatalf("matching MTUs: %+v", healthy)
	}

	b.MustRun(t, "ip", "link", "set", "eth0", "mtu", "1400")
	hole := pathMTUIn(t, a, "10.253.0.2")
	if hole.Error != "" || !hole.SmallOK || hole.LargeOK || hole.LargeSize != 1500 || hole.SmallSize != SmallProbeSize || hole.FragNeededMTU != 0 {
		t.Fatalf("blackhole: %+v", hole)
	}
	t.Logf("blackhole probe: %+v", hole)

	// A route MTU of 1400 makes the probe fit the path again.
	a.MustRun(t, "ip", "route", "replace", "10.253.0.2/32", "dev", "eth0", "mtu", "1400")
	fits := pathMTUIn(t, a, "10.253.0.2")
	if !fits.SmallOK || !fits.LargeOK || fits.RouteMTU != 1400 {
		t.Fatalf("route MTU 1400: %+v", fits)
	}
}

func TestPathMTUTargets(t *testing.T) {
	targets := []Target{
		{Kind: "clusterIP", Addr: netip.MustParseAddrPort("10.96.0.20:80")},
		{Kind: "endpoint", Addr: netip.MustParseAddrPort("10.244.1.5:8080")},
		{Kind: "endpoint", Addr: netip.MustParseAddrPort("10.244.1.5:9090")},
		{Kind: "endpoint", Addr: netip.MustParseAddrPort("[fd00::5]:8080")},
		{Kind: "endpoint", Addr: netip.MustParseAddrPort("10.244.2.7:8080")},
	}
	got := PathMTUTargets(targets)
	if len(got) != 2 || got[0].String() != "10.244.1.5" || got[1].String() != "10.244.2.7" {
		t.Errorf("targets %v", got)
	}
}
