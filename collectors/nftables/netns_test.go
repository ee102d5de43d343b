package nftables

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// loadTable creates a namespace holding the fixture's kube-proxy table.
func loadTable(t *testing.T, fixture string) *netns.NS {
	t.Helper()
	ns := netns.New(t, "nft")
	ns.MustRun(t, "nft", "-f", "../testdata/nftables/"+fixture)
	return ns
}

// TestReadNetlinkInNetNS reads every scenario through netlink from a
// namespace loaded by `nft -f`, checks it, and checks that the nft-cli
// fallback observes the same thing.
func TestReadNetlinkInNetNS(t *testing.T) {
	ns := loadTable(t, "scenarios.nft")
	for name, q := range scenarioQueries() {
		t.Run(name, func(t *testing.T) {
			q.NetNS = ns.Path()
			obs, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if obs.Source != collectorapi.NFTablesSourceNetlink || obs.NetlinkError != "" {
				t.Fatalf("source %s (%s)", obs.Source, obs.NetlinkError)
			}
			checkScenario(t, name, obs)
			q.ForceCLI = true
			cli, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if cli.Source != collectorapi.NFTablesSourceCLI {
				t.Fatalf("cli source %s", cli.Source)
			}
			checkScenario(t, name, cli)
			if a, b := normalized(obs), normalized(cli); a != b {
				t.Errorf("netlink and nft-cli disagree:\nnetlink: %s\ncli: %s", a, b)
			}
		})
	}
}

func TestReadNetlinkNoTable(t *testing.T) {
	ns := netns.New(t, "nft")
	q := scenarioQueries()["web"]
	q.NetNS = ns.Path()
	q.Families = []string{"ip", "ip6"}
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Source != collectorapi.NFTablesSourceNetlink || len(obs.Tables) != 2 || obs.Tables[0].Present || obs.Tables[1].Present {
		t.Errorf("%+v", obs)
	}
}

func TestReadNetlinkFallbackOnBadNetNS(t *testing.T) {
	netns.RequireRoot(t)
	q := scenarioQueries()["web"]
	q.NetNS = "/nonexistent/netns"
	q.Runner = &fileRunner{file: "../testdata/nftables/scenarios.json"}
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Source != collectorapi.NFTablesSourceCLI || obs.NetlinkError == "" {
		t.Fatalf("expected the CLI fallback with the netlink error, got %s %q", obs.Source, obs.NetlinkError)
	}
	checkScenario(t, "web", obs)
}

// More than 1000 endpoints: one numgen map of 1001 entries.
func TestReadNetlinkLarge(t *testing.T) {
	ns := loadTable(t, "large.nft")
	q := Query{NetNS: ns.Path(), Service: collectorapi.ServiceSpec{Namespace: "default", Name: "big", ClusterIPs: []string{"10.96.1.1"},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}}
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	p := obs.Tables[0].Ports[0]
	ng := p.Service.Rules[0].Numgen
	if ng == nil || ng.Modulus != 1001 || len(ng.Entries) != 1001 {
		t.Fatalf("numgen: %+v", ng)
	}
	sum := 0.0
	for i, e := range ng.Entries {
		want := fmt.Sprintf("10.245.%d.%d:8080", i/250, i%250+1)
		_ = want // entries are in endpoint-string order, not generation order
		if !strings.HasPrefix(e.Address, "10.245.") {
			t.Fatalf("entry %d: %+v", i, e)
		}
		sum += e.Share
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares sum %v", sum)
	}
	q.ForceCLI = true
	cli, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if normalized(obs) != normalized(cli) {
		t.Errorf("netlink and nft-cli disagree on the large Service")
	}
}
