package nftables

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
)

// scenarioQueries are the Services of collectors/testdata/nftables/scenarios.*.
func scenarioQueries() map[string]Query {
	return map[string]Query{
		"web": {Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{"10.96.0.50"},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
			Endpoints: []collectorapi.Endpoint{fixture.Endpoint("10.244.1.5", 8080, "http"), fixture.Endpoint("10.244.2.7", 8080, "http"), fixture.Endpoint("10.244.3.9", 8080, "http")}},
		"sticky": {Service: collectorapi.ServiceSpec{Namespace: "default", Name: "sticky", ClusterIPs: []string{"10.96.0.51"},
			SessionAffinity: "ClientIP", AffinityTimeoutSecs: 10800, Ports: []collectorapi.ServicePort{{Protocol: "TCP", Port: 80}}},
			Endpoints: []collectorapi.Endpoint{fixture.Endpoint("10.244.1.6", 8080, ""), fixture.Endpoint("10.244.2.8", 8080, "")}},
		"lb": {Service: collectorapi.ServiceSpec{Namespace: "default", Name: "lb", Type: "LoadBalancer", ClusterIPs: []string{"10.96.0.52"},
			LoadBalancerIPs: []string{"192.0.2.10"}, ExternalTrafficPolicy: "Local",
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}}},
			Endpoints: []collectorapi.Endpoint{fixture.Endpoint("10.244.1.7", 80, "http"), fixture.Endpoint("10.244.2.9", 80, "http")}},
		"empty": {Service: collectorapi.ServiceSpec{Namespace: "default", Name: "empty", Type: "NodePort", ClusterIPs: []string{"10.96.0.53"},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30081}}}},
		"itp": {Service: collectorapi.ServiceSpec{Namespace: "default", Name: "itp", ClusterIPs: []string{"10.96.0.54"}, InternalTrafficPolicy: "Local",
			Ports: []collectorapi.ServicePort{{Name: "dns", Protocol: "UDP", Port: 53}, {Name: "dns-tcp", Protocol: "TCP", Port: 53}}}},
		"term": {Service: collectorapi.ServiceSpec{Namespace: "default", Name: "term", ClusterIPs: []string{"10.96.0.55"},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}},
		"extip": {Service: collectorapi.ServiceSpec{Namespace: "default", Name: "extip", Type: "NodePort", ClusterIPs: []string{"10.96.0.56"},
			ExternalIPs: []string{"198.51.100.5"}, ExternalTrafficPolicy: "Local",
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30082}}}},
		"absent": {Service: collectorapi.ServiceSpec{Namespace: "default", Name: "absent", ClusterIPs: []string{"10.96.9.9"},
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}},
	}
}

// checkScenario asserts what a correct reader must observe for each
// scenario, whichever source it used.
func checkScenario(t *testing.T, name string, obs *collectorapi.NFTablesObservation) {
	t.Helper()
	if len(obs.Tables) != 1 || !obs.Tables[0].Present || obs.Tables[0].Error != "" {
		t.Fatalf("tables: %+v", obs.Tables)
	}
	tb := obs.Tables[0]
	p := tb.Ports[0]
	switch name {
	case "web":
		if len(tb.ClusterIPs) != 1 || !tb.ClusterIPs[0].Member {
			t.Errorf("cluster-ips: %+v", tb.ClusterIPs)
		}
		if len(p.ServiceIPs) != 1 || !p.ServiceIPs[0].Found || p.ServiceIPs[0].Verdict != "goto "+p.ChainNames.Service || p.ServiceIPs[0].Key != "10.96.0.50 . tcp . 80" {
			t.Errorf("service-ips: %+v", p.ServiceIPs)
		}
		if p.NoEndpointServices[0].Found || p.FirewallIPs[0].Found {
			t.Errorf("unexpected no-endpoint/firewall elements")
		}
		if !p.Service.Exists || p.Service.FoundBy != "hash" || len(p.Service.Rules) != 1 {
			t.Fatalf("service chain: %+v", p.Service)
		}
		ng := p.Service.Rules[0].Numgen
		if ng == nil || ng.Kind != "dnat" || ng.Modulus != 3 || len(ng.Entries) != 3 || ng.UnmatchedShare != 0 {
			t.Fatalf("numgen: %+v", ng)
		}
		for i, want := range []string{"10.244.1.5:8080", "10.244.2.7:8080", "10.244.3.9:8080"} {
			if e := ng.Entries[i]; e.Index != uint32(i) || e.Address != want || math.Abs(e.Share-1.0/3) > 1e-12 {
				t.Errorf("entry %d: %+v", i, e)
			}
		}
		if p.Local.Exists || p.External.Exists || p.Firewall.Exists || len(p.Endpoints) != 0 {
			t.Errorf("unexpected chains")
		}
	case "sticky":
		if !strings.HasSuffix(p.ChainNames.Service, "default/sticky/tcp/") || !p.Service.Exists || len(p.Service.Rules) != 3 {
			t.Fatalf("service chain: %+v", p.Service)
		}
		for _, r := range p.Service.Rules[:2] {
			if !strings.HasPrefix(r.AffinityMatch, "affinity-") || r.Target != "endpoint-"+strings.TrimPrefix(r.AffinityMatch, "affinity-") || r.Verdict != "goto "+r.Target {
				t.Errorf("affinity rule: %+v", r)
			}
		}
		ng := p.Service.Rules[2].Numgen
		if ng == nil || ng.Kind != "vmap" || ng.Modulus != 2 || len(ng.Entries) != 2 || !strings.HasPrefix(ng.Entries[0].Target, "endpoint-") {
			t.Fatalf("vmap: %+v", ng)
		}
		if len(p.Endpoints) != 2 || len(p.Affinity) != 2 {
			t.Fatalf("endpoints %d affinity %d", len(p.Endpoints), len(p.Affinity))
		}
		for i, c := range p.Endpoints {
			if !c.Exists || len(c.Rules) != 2 || c.Rules[0].Update != "affinity-"+strings.TrimPrefix(c.Name, "endpoint-") || c.Rules[1].DNAT == "" {
				t.Errorf("endpoint chain %d: %+v", i, c)
			}
		}
		for _, a := range p.Affinity {
			if !a.Exists || a.TimeoutSeconds != 10800 {
				t.Errorf("affinity set: %+v", a)
			}
		}
	case "lb":
		if len(p.ServiceIPs) != 2 || !p.ServiceIPs[0].Found || !p.ServiceIPs[1].Found || p.ServiceIPs[1].Target != p.ChainNames.External {
			t.Errorf("service-ips: %+v", p.ServiceIPs)
		}
		if len(p.ServiceNodePorts) != 1 || p.ServiceNodePorts[0].Key != "tcp . 30080" || p.ServiceNodePorts[0].Target != p.ChainNames.External {
			t.Errorf("service-nodeports: %+v", p.ServiceNodePorts)
		}
		if !p.FirewallIPs[1].Found || p.FirewallIPs[1].Target != p.ChainNames.Firewall || p.FirewallIPs[0].Found {
			t.Errorf("firewall-ips: %+v", p.FirewallIPs)
		}
		if !p.Firewall.Exists || p.Firewall.Rules[0].SourceMatch != "!= 203.0.113.0/24" || p.Firewall.Rules[0].Verdict != "drop" {
			t.Errorf("firewall chain: %+v", p.Firewall)
		}
		ext := p.External.Rules
		if len(ext) != 4 || ext[0].SourceMatch != "10.0.0.0/8" || ext[0].Target != p.ChainNames.Service || ext[1].Mark != "0x4000" ||
			ext[1].Comment != "masquerade local traffic" || ext[3].Target != p.ChainNames.Local {
			t.Errorf("external chain: %+v", ext)
		}
		if !p.Local.Exists || p.Local.Rules[0].DNAT != "10.244.1.7:80" {
			t.Errorf("local chain: %+v", p.Local)
		}
	case "empty":
		if p.ServiceIPs[0].Found || p.Service.Exists {
			t.Errorf("nat state for a Service without endpoints")
		}
		if e := p.NoEndpointServices[0]; !e.Found || e.Verdict != "goto reject-chain" || e.Comment != "default/empty:http" {
			t.Errorf("no-endpoint-services: %+v", e)
		}
		if e := p.NoEndpointNodePorts[0]; !e.Found || e.Key != "tcp . 30081" || e.Verdict != "goto reject-chain" {
			t.Errorf("no-endpoint-nodeports: %+v", e)
		}
		if len(tb.ClusterIPs) != 1 || !tb.ClusterIPs[0].Member {
			t.Errorf("a ClusterIP without endpoints is still in cluster-ips: %+v", tb.ClusterIPs)
		}
	case "itp":
		for _, p := range tb.Ports {
			if e := p.NoEndpointServices[0]; !e.Found || e.Verdict != "drop" || e.Comment != p.ServicePortName {
				t.Errorf("%s: %+v", p.ServicePortName, e)
			}
		}
		if tb.Ports[0].NoEndpointServices[0].Key != "10.96.0.54 . udp . 53" {
			t.Errorf("udp key %q", tb.Ports[0].NoEndpointServices[0].Key)
		}
	case "term":
		if !p.Service.Exists || p.Service.Rules[0].DNAT != "10.244.1.12:80" || p.Service.Rules[0].Numgen != nil {
			t.Errorf("terminating-only: %+v", p.Service)
		}
	case "extip":
		// The external IP still goes to the external chain (it short-circuits
		// pod and host traffic); other traffic meets the drop element.
		if len(p.ServiceIPs) != 2 || !p.ServiceIPs[1].Found || p.ServiceIPs[1].Target != p.ChainNames.External {
			t.Errorf("service-ips: %+v", p.ServiceIPs)
		}
		if e := p.NoEndpointServices[1]; !e.Found || e.Verdict != "drop" {
			t.Errorf("no-endpoint-services drop: %+v", e)
		}
		if len(p.External.Rules) != 3 {
			t.Errorf("external chain without goto local: %+v", p.External.Rules)
		}
	case "absent":
		if len(tb.ClusterIPs) != 1 || tb.ClusterIPs[0].Member || p.ServiceIPs[0].Found || p.Service.Exists {
			t.Errorf("absent Service: %+v", tb)
		}
	}
}

// fileRunner answers `nft --json list table ip kube-proxy` from a file.
type fileRunner struct {
	file  string
	calls int
}

func (f *fileRunner) Output(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.calls++
	want := "nft --json list table ip kube-proxy"
	if got := name + " " + strings.Join(args, " "); got != want {
		if strings.Contains(got, " ip6 ") {
			return nil, fmt.Errorf("nft: Error: No such file or directory")
		}
		return nil, fmt.Errorf("unexpected command %q", got)
	}
	return os.ReadFile(f.file)
}

func TestReadScenariosCLI(t *testing.T) {
	for name, q := range scenarioQueries() {
		t.Run(name, func(t *testing.T) {
			r := &fileRunner{file: "../testdata/nftables/scenarios.json"}
			q.ForceCLI, q.Runner = true, r
			obs, err := Read(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if obs.Source != collectorapi.NFTablesSourceCLI || r.calls != 1 {
				t.Errorf("source %s, nft calls %d", obs.Source, r.calls)
			}
			checkScenario(t, name, obs)
		})
	}
}

func TestReadIPv6TableAbsentCLI(t *testing.T) {
	q := scenarioQueries()["web"]
	q.Families = []string{"ip6"}
	q.ForceCLI, q.Runner = true, &fileRunner{file: "../testdata/nftables/scenarios.json"}
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Tables[0].Present || obs.Tables[0].Error != "" {
		t.Errorf("ip6 table: %+v", obs.Tables[0])
	}
}

func TestParseJSONLarge(t *testing.T) {
	b, err := os.ReadFile("../testdata/nftables/large.json")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	var ng *collectorapi.NFTablesNumgenMap
	for name, rules := range tb.rules {
		if strings.HasPrefix(name, "service-") && strings.Contains(name, "default/big/") {
			ng = rules[0].Numgen
		}
	}
	if ng == nil || ng.Modulus != 1001 || len(ng.Entries) != 1001 {
		t.Fatalf("numgen of 1001 endpoints: %+v", ng)
	}
	sum := 0.0
	for _, e := range ng.Entries {
		sum += e.Share
	}
	if math.Abs(sum-1) > 1e-9 {
		t.Errorf("shares sum %v", sum)
	}
}

func TestNumgenUnmatched(t *testing.T) {
	ng := &collectorapi.NFTablesNumgenMap{Modulus: 3, Entries: []collectorapi.NFTablesNumgenEntry{{Index: 2}, {Index: 0}}}
	finishNumgen(ng)
	if ng.Entries[0].Index != 0 || math.Abs(ng.UnmatchedShare-1.0/3) > 1e-12 {
		t.Errorf("%+v", ng)
	}
}

func TestElemKeyEncode(t *testing.T) {
	b, err := elemKey{IP: "10.96.0.50", Proto: "tcp", Port: 80}.encode("ip")
	if err != nil || fmt.Sprintf("%x", b) != "0a60003206000000"+"00500000" {
		t.Errorf("%x %v", b, err)
	}
	b, _ = elemKey{Proto: "udp", Port: 30053}.encode("ip")
	if fmt.Sprintf("%x", b) != "11000000"+"75650000" {
		t.Errorf("%x", b)
	}
	if _, err := (elemKey{IP: "fd00::1"}).encode("ip"); err == nil {
		t.Errorf("IPv6 key in an ip table accepted")
	}
}

// normalized drops what legitimately differs between netlink and CLI
// (rendered text, anonymous set names).
func normalized(obs *collectorapi.NFTablesObservation) string {
	c := *obs
	c.Source, c.NetlinkError = "", ""
	b, _ := json.Marshal(c)
	var v any
	_ = json.Unmarshal(b, &v)
	var strip func(any)
	strip = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			delete(x, "text")
			delete(x, "set")
			for _, y := range x {
				strip(y)
			}
		case []any:
			for _, y := range x {
				strip(y)
			}
		}
	}
	strip(v)
	out, _ := json.MarshalIndent(v, "", " ")
	return string(out)
}
