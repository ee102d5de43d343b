package nftables

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
)

// overallQueries are Services of kube-proxy v1.37.2's TestOverallNFTablesRules
// (collectors/testdata/PROVENANCE.md).
func overallQueries() map[string]Query {
	out := map[string]Query{}
	for name, s := range fixture.KubeProxyOverall() {
		out[name] = Query{Service: s.Spec, Endpoints: s.Endpoints}
	}
	return out
}

func checkOverall(t *testing.T, name string, obs *collectorapi.NFTablesObservation) {
	t.Helper()
	tb := obs.Tables[0]
	if !tb.Present || tb.Error != "" || len(tb.Ports) != 1 {
		t.Fatalf("table: %+v", tb)
	}
	p := tb.Ports[0]
	switch name {
	case "svc2":
		if len(p.ServiceIPs) != 3 || !p.ServiceIPs[1].Found || p.ServiceIPs[1].Target != p.ChainNames.External || !p.ServiceIPs[2].Found {
			t.Errorf("service-ips: %+v", p.ServiceIPs)
		}
		if e := p.NoEndpointServices[1]; !e.Found || e.Verdict != "drop" || e.Comment != "ns2/svc2:p80" {
			t.Errorf("no-endpoint-services: %+v", p.NoEndpointServices)
		}
		if e := p.NoEndpointNodePorts[0]; !e.Found || e.Verdict != "drop" || !p.ServiceNodePorts[0].Found {
			t.Errorf("nodeports: %+v %+v", p.NoEndpointNodePorts, p.ServiceNodePorts)
		}
		if len(p.External.Rules) != 3 || p.Local.Exists || p.Service.Rules[0].DNAT != "10.180.0.2:80" {
			t.Errorf("chains: ext %d local %v svc %+v", len(p.External.Rules), p.Local.Exists, p.Service.Rules)
		}
	case "svc4":
		ng := p.Service.Rules[0].Numgen
		if ng == nil || ng.Modulus != 2 || ng.Entries[0].Address != "10.180.0.4:80" || ng.Entries[1].Address != "10.180.0.5:80" || ng.Entries[1].Share != 0.5 {
			t.Errorf("numgen: %+v", ng)
		}
	case "svc5":
		rules := p.Service.Rules
		if len(rules) != 2 || rules[0].AffinityMatch == "" || rules[1].Numgen == nil || rules[1].Numgen.Modulus != 1 || rules[1].Numgen.Kind != "vmap" {
			t.Fatalf("affinity service chain: %+v", rules)
		}
		if len(p.Endpoints) != 1 || p.Endpoints[0].Rules[1].DNAT != "10.180.0.3:80" || len(p.Affinity) != 1 || p.Affinity[0].TimeoutSeconds != 10800 {
			t.Errorf("endpoint chain / affinity set: %+v %+v", p.Endpoints, p.Affinity)
		}
		if !p.FirewallIPs[1].Found || !p.Firewall.Exists || p.Firewall.Rules[0].Verdict != "drop" {
			t.Errorf("firewall: %+v %+v", p.FirewallIPs, p.Firewall)
		}
	case "svc6":
		if e := p.NoEndpointServices[0]; !e.Found || e.Verdict != "goto reject-chain" || p.ServiceIPs[0].Found || !tb.ClusterIPs[0].Member {
			t.Errorf("no endpoints: %+v %+v", p.NoEndpointServices, tb.ClusterIPs)
		}
	}
}

func TestReadKubeProxyOverallCLI(t *testing.T) {
	for name, q := range overallQueries() {
		t.Run(name, func(t *testing.T) {
			q.ForceCLI, q.Runner = true, &fileRunner{file: "../testdata/nftables/kubeproxy-overall.json"}
			obs, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			checkOverall(t, name, obs)
		})
	}
}

func TestReadKubeProxyOverallNetlink(t *testing.T) {
	ns := loadTable(t, "kubeproxy-overall.nft")
	for name, q := range overallQueries() {
		t.Run(name, func(t *testing.T) {
			q.NetNS = ns.Path()
			obs, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if obs.Source != collectorapi.NFTablesSourceNetlink {
				t.Fatalf("source %s: %s", obs.Source, obs.NetlinkError)
			}
			checkOverall(t, name, obs)
			q.ForceCLI = true
			cli, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if normalized(obs) != normalized(cli) {
				t.Errorf("netlink and nft-cli disagree:\n%s\n%s", normalized(obs), normalized(cli))
			}
		})
	}
}

// IPv6: kube-proxy v1.37.2's TestOverallNFTablesRulesIPv6 in table ip6.
func TestReadKubeProxyOverallIPv6(t *testing.T) {
	svc4 := Query{Service: collectorapi.ServiceSpec{Namespace: "ns4", Name: "svc4", ClusterIPs: []string{"fd00:172:30::44"},
		ExternalIPs: []string{"2001:db8:99::33"}, Ports: []collectorapi.ServicePort{{Name: "p80", Protocol: "TCP", Port: 80}}}}
	svc5 := Query{Service: collectorapi.ServiceSpec{Namespace: "ns5", Name: "svc5", ClusterIPs: []string{"fd00:172:30::45"}, SessionAffinity: "ClientIP",
		Ports: []collectorapi.ServicePort{{Name: "p80", Protocol: "TCP", Port: 80}}},
		Endpoints: []collectorapi.Endpoint{fixture.Endpoint("fd00:10:180::3", 80, "p80")}}
	check := func(t *testing.T, o4, o5 *collectorapi.NFTablesObservation) {
		t.Helper()
		tb := o4.Tables[0]
		if tb.Family != "ip6" || !tb.Present || !tb.ClusterIPs[0].Member {
			t.Fatalf("ip6 table: %+v", tb)
		}
		p := tb.Ports[0]
		if !p.ServiceIPs[0].Found || p.ServiceIPs[0].Key != "fd00:172:30::44 . tcp . 80" || !p.ServiceIPs[1].Found || p.ServiceIPs[1].Target != p.ChainNames.External {
			t.Errorf("service-ips: %+v", p.ServiceIPs)
		}
		ng := p.Service.Rules[0].Numgen
		if ng == nil || ng.Entries[0].Address != "[fd00:10:180::4]:80" || ng.Entries[1].Address != "[fd00:10:180::5]:80" {
			t.Errorf("numgen: %+v", ng)
		}
		p5 := o5.Tables[0].Ports[0]
		if len(p5.Endpoints) != 1 || !p5.Endpoints[0].Exists || p5.Endpoints[0].Rules[1].DNAT != "[fd00:10:180::3]:80" || len(p5.Affinity) != 1 || !p5.Affinity[0].Exists {
			t.Errorf("affinity endpoint: %+v %+v", p5.Endpoints, p5.Affinity)
		}
		if p5.Service.Rules[0].AffinityMatch != p5.Affinity[0].Name {
			t.Errorf("affinity match %q vs set %q", p5.Service.Rules[0].AffinityMatch, p5.Affinity[0].Name)
		}
	}
	t.Run("cli", func(t *testing.T) {
		read := func(q Query) *collectorapi.NFTablesObservation {
			q.ForceCLI = true
			q.Runner = runnerFunc(func(ctx context.Context, name string, args ...string) ([]byte, error) {
				if strings.Join(args, " ") != "--json list table ip6 kube-proxy" {
					return nil, fmt.Errorf("unexpected %v", args)
				}
				return os.ReadFile("../testdata/nftables/kubeproxy-overall-ipv6.json")
			})
			o, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		check(t, read(svc4), read(svc5))
	})
	t.Run("netlink", func(t *testing.T) {
		ns := loadTable(t, "kubeproxy-overall-ipv6.nft")
		read := func(q Query) *collectorapi.NFTablesObservation {
			q.NetNS = ns.Path()
			o, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if o.Source != collectorapi.NFTablesSourceNetlink {
				t.Fatalf("source %s", o.Source)
			}
			return o
		}
		check(t, read(svc4), read(svc5))
	})
}

type runnerFunc func(ctx context.Context, name string, args ...string) ([]byte, error)

func (f runnerFunc) Output(ctx context.Context, name string, args ...string) ([]byte, error) {
	return f(ctx, name, args...)
}
