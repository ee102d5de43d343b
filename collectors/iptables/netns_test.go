package iptables

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// restored creates a namespace and loads the fixture
// (testdata/iptables/<fixture>) into it with each restore command in turn
// (iptables-nft-restore, iptables-legacy-restore).
func restored(t *testing.T, fixture string, restores ...string) *netns.NS {
	t.Helper()
	ns := netns.New(t, "ipt")
	for _, restore := range restores {
		ns.MustRun(t, restore, "../testdata/iptables/"+fixture)
	}
	return ns
}

func portsJSON(t *testing.T, b collectorapi.IPTablesBackendObservation) string {
	t.Helper()
	out, err := json.MarshalIndent(b.Ports, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func legacyTables(t *testing.T, ns *netns.NS) string {
	t.Helper()
	out, err := ns.Run("cat", "/proc/self/net/ip_tables_names")
	if err != nil {
		t.Fatalf("ip_tables_names: %v %s", err, out)
	}
	return strings.Join(strings.Fields(out), ",")
}

// TestReadRealBackendsInNetNS loads the kube-proxy-format fixture with the
// real iptables-nft-restore and iptables-legacy-restore into namespaces of
// its own and reads it back with the real binaries.
func TestReadRealBackendsInNetNS(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "nsenter")
	nftNS := restored(t, "scenarios.restore", "iptables-nft-restore")
	legNS := restored(t, "scenarios.restore", "iptables-legacy-restore")
	bothNS := restored(t, "scenarios.restore", "iptables-nft-restore", "iptables-legacy-restore")

	d := parseDump(t, readFixture(t, "scenarios.save"))
	for name, q := range scenarioQueries() {
		t.Run(name, func(t *testing.T) {
			want := backend(t, readWith(t, q, &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)

			q.NetNS = nftNS.Path()
			obs, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			n := backend(t, obs, collectorapi.IPTablesBackendNFTables)
			requireReferences(t, name, n)
			if d := sameEntries(want, n); d != "" {
				t.Error(d)
			}
			if !n.KubeProxyChains || portsJSON(t, withoutEntries(n)) != portsJSON(t, withoutEntries(want)) {
				t.Errorf("real nf_tables read differs from the recorded dump:\nreal: %s\nrecorded: %s", portsJSON(t, n), portsJSON(t, want))
			}
			if l := backend(t, obs, collectorapi.IPTablesBackendLegacy); l.KubeProxyChains || len(l.Commands) != 0 {
				t.Errorf("legacy on an nf_tables node: %+v", l)
			}
			// The reader must not create legacy tables as a side effect.
			if got := legacyTables(t, nftNS); got != "" {
				t.Fatalf("legacy tables appeared: %q", got)
			}

			q.NetNS = legNS.Path()
			obs, err = Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			l := backend(t, obs, collectorapi.IPTablesBackendLegacy)
			if !l.KubeProxyChains || portsJSON(t, l) != portsJSON(t, want) {
				t.Errorf("real legacy read differs:\nreal: %s\nrecorded: %s", portsJSON(t, l), portsJSON(t, want))
			}
			if n := backend(t, obs, collectorapi.IPTablesBackendNFTables); n.KubeProxyChains {
				t.Errorf("nf_tables reported chains on a legacy node")
			}

			q.NetNS = bothNS.Path()
			obs, err = Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if !backend(t, obs, collectorapi.IPTablesBackendNFTables).KubeProxyChains || !backend(t, obs, collectorapi.IPTablesBackendLegacy).KubeProxyChains {
				t.Errorf("both backends hold chains but were not both reported")
			}
		})
	}
}

// On a node whose kube-proxy runs in nftables mode, iptables-nft answers
// "incompatible" and there are no legacy tables: no chains, no errors, and
// no legacy table created by reading.
func TestReadNFTablesModeNodeInNetNS(t *testing.T) {
	netns.RequireTools(t, "iptables-nft", "nft", "nsenter")
	ns := netns.New(t, "ipt")
	ns.MustRun(t, "nft", "-f", "../testdata/nftables/scenarios.nft")
	q := scenarioQueries()["web"]
	q.NetNS = ns.Path()
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range obs.Backends {
		if b.KubeProxyChains || b.Error != "" {
			t.Errorf("%s: %+v", b.Backend, b)
		}
	}
	if got := legacyTables(t, ns); got != "" {
		t.Errorf("legacy tables appeared: %q", got)
	}
}

// Large-cluster mode through the real legacy save: SEP chains without
// comments, printed before the SVC chain, are resolved by following jumps.
func TestReadLargeLegacyInNetNS(t *testing.T) {
	netns.RequireTools(t, "iptables-legacy-restore", "nsenter")
	ns := restored(t, "large.restore", "iptables-legacy-restore")
	q := Query{NetNS: ns.Path(), Backends: []string{collectorapi.IPTablesBackendLegacy}}
	q.Service.Namespace, q.Service.Name, q.Service.ClusterIPs = "default", "big", []string{"10.96.1.1"}
	q.Service.Ports = scenarioQueries()["web"].Service.Ports
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	l := backend(t, obs, collectorapi.IPTablesBackendLegacy)
	p := l.Ports[0]
	if len(p.Endpoints) != 1001 || len(p.Service.Selection) != 1001 {
		t.Fatalf("endpoints %d selection %d", len(p.Endpoints), len(p.Service.Selection))
	}
	for _, e := range p.Endpoints {
		if e.DNAT == "" || e.EndpointFrom != "dnat" {
			t.Fatalf("%+v", e)
		}
	}
}
