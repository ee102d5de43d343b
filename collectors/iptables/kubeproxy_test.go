package iptables

import (
	"context"
	"math"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// overallQueries are Services of kube-proxy v1.37.2's TestOverallIPTablesRules
// (collectors/testdata/PROVENANCE.md).
func overallQueries() map[string]Query {
	out := map[string]Query{}
	for name, s := range fixture.KubeProxyOverall() {
		out[name] = Query{Service: s.Spec, Endpoints: s.Endpoints}
	}
	return out
}

func checkOverall(t *testing.T, name string, b collectorapi.IPTablesBackendObservation) {
	t.Helper()
	if !b.KubeProxyChains || len(b.Ports) != 1 {
		t.Fatalf("backend: %+v", b)
	}
	p := b.Ports[0]
	kinds := map[string]string{}
	for _, e := range p.Entry {
		kinds[e.Kind] = e.Target()
	}
	for _, e := range p.EntryReferences {
		kinds[e.Kind] = e.Target
	}
	switch name {
	case "svc2": // ETP=Local, no local endpoints
		if kinds["clusterIP"] != p.Service.Name || kinds["externalIP"] != p.External.Name || kinds["loadBalancerIP"] != p.External.Name {
			t.Errorf("entries: %v", kinds)
		}
		// The localhost NodePort rule (-d 127.0.0.0/8) comes first.
		if len(p.NodePorts) != 2 || p.NodePorts[0].Destination != "127.0.0.0/8" || p.NodePorts[1].DPort != "3001" || p.NodePorts[1].Target() != p.External.Name {
			t.Errorf("nodeports: %+v", p.NodePorts)
		}
		if len(p.External.Rules) != 3 || p.Local.Exists {
			t.Errorf("EXT without jump to SVL, no SVL: %d rules, SVL %v", len(p.External.Rules), p.Local.Exists)
		}
		drops, hc := 0, false
		for _, r := range p.Filter {
			if r.Jump == "DROP" && r.Comment == "ns2/svc2:p80 has no local endpoints" {
				drops++
			}
			hc = hc || (r.Jump == "ACCEPT" && r.DPort == "30000")
		}
		if drops != 3 || !hc {
			t.Errorf("filter: %d drops, health check %v: %+v", drops, hc, p.Filter)
		}
	case "svc4":
		if len(p.Service.Selection) != 2 || math.Abs(p.Service.Selection[0].Share-0.5) > 1e-9 || math.Abs(p.Service.Selection[1].Share-0.5) > 1e-9 {
			t.Errorf("selection: %+v", p.Service.Selection)
		}
		if len(p.Endpoints) != 2 || p.Endpoints[0].DNAT != "10.180.0.4:80" || p.Endpoints[0].EndpointFrom != "hash" {
			t.Errorf("endpoints: %+v", p.Endpoints)
		}
	case "svc5":
		if kinds["loadBalancerIP"] != p.Firewall.Name || !p.Firewall.Exists || p.Firewall.Rules[0].Source != "203.0.113.0/25" {
			t.Errorf("firewall: %v %+v", kinds, p.Firewall)
		}
		if len(p.Service.Affinity) != 1 || p.Service.Affinity[0].Seconds != 10800 || p.Endpoints[0].AffinitySet != p.Endpoints[0].Name {
			t.Errorf("affinity: %+v %+v", p.Service.Affinity, p.Endpoints)
		}
		var fwDrop bool
		for _, r := range p.Filter {
			fwDrop = fwDrop || (r.Chain == chainProxyFirewall && r.Jump == "DROP")
		}
		if !fwDrop {
			t.Errorf("KUBE-PROXY-FIREWALL drop missing: %+v", p.Filter)
		}
	case "svc6":
		if len(p.Filter) != 1 || p.Filter[0].Jump != "REJECT" || p.Filter[0].Destination != "172.30.0.46/32" || p.Service.Exists {
			t.Errorf("no endpoints: %+v", p.Filter)
		}
	}
}

func TestReadKubeProxyOverall(t *testing.T) {
	d := parseDump(t, readFixture(t, "kubeproxy-overall.save"))
	for name, q := range overallQueries() {
		t.Run(name, func(t *testing.T) {
			checkOverall(t, name, backend(t, readWith(t, q, &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables))
			checkOverall(t, name, backend(t, readWith(t, q, &fakeRunner{legacy: d}), collectorapi.IPTablesBackendLegacy))
		})
	}
}

func TestReadKubeProxyOverallInNetNS(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "nsenter")
	ns := restored(t, "kubeproxy-overall.restore", "iptables-nft-restore")
	for name, q := range overallQueries() {
		t.Run(name, func(t *testing.T) {
			q.NetNS = ns.Path()
			obs, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			checkOverall(t, name, backend(t, obs, collectorapi.IPTablesBackendNFTables))
		})
	}
}
