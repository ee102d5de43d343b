package nftables

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
)

// apiQuery builds the query for one Service of the real testbed dump from
// the recorded API objects (testdata/iptables/testbed-api.json).
func apiQuery(t *testing.T, name string) Query {
	t.Helper()
	s := fixture.TestbedService(t, name)
	return Query{Service: s.Spec, Endpoints: s.Endpoints}
}

// Real kube-proxy v1.37.2 in nftables mode (node svtb-node2 of the testbed).
func checkTestbedNode2(t *testing.T, read func(Query) *collectorapi.NFTablesObservation) {
	t.Helper()
	port := func(name string) collectorapi.NFTablesPortObservation {
		t.Helper()
		o := read(apiQuery(t, name))
		if len(o.Tables) != 1 || !o.Tables[0].Present || o.Tables[0].Error != "" || !o.Tables[0].ClusterIPs[0].Member {
			t.Fatalf("%s: %+v", name, o.Tables)
		}
		return o.Tables[0].Ports[0]
	}
	web := port("web")
	// The masquerade path (pkg/proxy/nftables/proxier.go v1.37.2): marked
	// packets lose the mark and are masqueraded, then the hairpin
	// connections; nat-postrouting jumps there.
	tbl := read(apiQuery(t, "web")).Tables[0]
	if m := tbl.Masquerading; m == nil || !m.Exists || len(m.Rules) != 2 || !m.Rules[0].Masquerade || m.Rules[0].Conditions != 1 ||
		m.Rules[0].MarkMatch == nil || *m.Rules[0].MarkMatch != (collectorapi.NFTablesMarkMatch{Mask: 0x4000, Op: "!=", Value: 0}) ||
		m.Rules[0].Mark != "0x4000" || !m.Rules[1].Masquerade || m.Rules[1].Conditions != 2 || m.Rules[1].MarkMatch != nil {
		t.Errorf("masquerading: %+v", m)
	}
	if p := tbl.NATPostrouting; p == nil || !p.Exists || len(p.Rules) != 1 || p.Rules[0].Verdict != "jump masquerading" || p.Rules[0].Conditions != 0 {
		t.Errorf("nat-postrouting: %+v", p)
	}
	ng := web.Service.Rules[0].Numgen
	if !web.ServiceIPs[0].Found || ng == nil || ng.Modulus != 3 || ng.Entries[2].Address != "10.244.2.9:8080" {
		t.Errorf("web: %+v %+v", web.ServiceIPs, ng)
	}
	sticky := port("sticky")
	if len(sticky.Endpoints) != 2 || len(sticky.Affinity) != 2 || sticky.Affinity[0].TimeoutSeconds != 600 || !sticky.Endpoints[0].Exists {
		t.Errorf("sticky: %+v %+v", sticky.Endpoints, sticky.Affinity)
	}
	lb := port("lb")
	if !lb.ServiceNodePorts[0].Found || lb.ServiceNodePorts[0].Target != lb.ChainNames.External || !lb.Local.Exists || len(lb.External.Rules) != 4 {
		t.Errorf("lb: %+v local %v ext %d", lb.ServiceNodePorts, lb.Local.Exists, len(lb.External.Rules))
	}
	empty := port("empty")
	if !empty.NoEndpointServices[0].Found || empty.NoEndpointServices[0].Verdict != "goto reject-chain" || !empty.NoEndpointNodePorts[0].Found {
		t.Errorf("empty: %+v %+v", empty.NoEndpointServices, empty.NoEndpointNodePorts)
	}
	itp := port("itp") // node2 holds the only endpoint: local chain
	if !itp.ServiceIPs[0].Found || itp.ServiceIPs[0].Target != itp.ChainNames.Local || !itp.Local.Exists {
		t.Errorf("itp: %+v", itp.ServiceIPs)
	}
	big := port("big")
	bng := big.Service.Rules[0].Numgen
	sum := 0.0
	if bng != nil {
		for _, e := range bng.Entries {
			sum += e.Share
		}
	}
	if bng == nil || bng.Modulus != 1001 || len(bng.Entries) != 1001 || math.Abs(sum-1) > 1e-9 {
		t.Errorf("big: %+v", bng)
	}
}

func TestReadTestbedNode2CLI(t *testing.T) {
	checkTestbedNode2(t, func(q Query) *collectorapi.NFTablesObservation {
		q.ForceCLI = true
		q.Runner = runnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
			if !strings.Contains(strings.Join(args, " "), "table ip kube-proxy") {
				return nil, os.ErrNotExist
			}
			return os.ReadFile("../testdata/nftables/testbed-node2.json")
		})
		o, err := Read(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return o
	})
}

// The real listing is valid `nft -f` input: load it into a namespace and
// read it through netlink.
func TestReadTestbedNode2Netlink(t *testing.T) {
	ns := loadTable(t, "testbed-node2.list")
	checkTestbedNode2(t, func(q Query) *collectorapi.NFTablesObservation {
		q.NetNS = ns.Path()
		o, err := Read(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if o.Source != collectorapi.NFTablesSourceNetlink {
			t.Fatalf("source %s %s", o.Source, o.NetlinkError)
		}
		q.ForceCLI = true
		c, err := Read(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if normalized(o) != normalized(c) {
			t.Errorf("netlink and nft-cli disagree for %s", q.Service.Name)
		}
		return o
	})
}
