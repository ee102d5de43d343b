package iptables

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
)

// scenarioQueries are the Services of collectors/testdata/iptables/scenarios.*
// as the API would report them.
func scenarioQueries() map[string]Query {
	web := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{"10.96.0.50"},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
		Endpoints: []collectorapi.Endpoint{fixture.Endpoint("10.244.1.5", 8080, "http"), fixture.Endpoint("10.244.2.7", 8080, "http"), fixture.Endpoint("10.244.3.9", 8080, "http"),
			{IP: "10.244.4.4", Ports: map[string]int32{"http": 8080}, Serving: true, Terminating: true}}}
	sticky := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "sticky", ClusterIPs: []string{"10.96.0.51"},
		SessionAffinity: "ClientIP", AffinityTimeoutSecs: 10800,
		Ports: []collectorapi.ServicePort{{Protocol: "TCP", Port: 80}}},
		Endpoints: []collectorapi.Endpoint{fixture.Endpoint("10.244.1.6", 8080, ""), fixture.Endpoint("10.244.2.8", 8080, "")}}
	lb := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "lb", Type: "LoadBalancer", ClusterIPs: []string{"10.96.0.52"},
		LoadBalancerIPs: []string{"192.0.2.10"}, ExternalTrafficPolicy: "Local", HealthCheckNodePort: 32000,
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}}},
		Endpoints: []collectorapi.Endpoint{fixture.Endpoint("10.244.1.7", 80, "http"), fixture.Endpoint("10.244.2.9", 80, "http")}}
	empty := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "empty", Type: "NodePort", ClusterIPs: []string{"10.96.0.53"},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30081}}}}
	itp := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "itp", ClusterIPs: []string{"10.96.0.54"}, InternalTrafficPolicy: "Local",
		Ports: []collectorapi.ServicePort{{Name: "dns", Protocol: "UDP", Port: 53}, {Name: "dns-tcp", Protocol: "TCP", Port: 53}}},
		Endpoints: []collectorapi.Endpoint{{IP: "10.244.2.10", Ports: map[string]int32{"dns": 53, "dns-tcp": 53}, Ready: true, Serving: true}}}
	term := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "term", ClusterIPs: []string{"10.96.0.55"},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
		Endpoints: []collectorapi.Endpoint{{IP: "10.244.1.12", Ports: map[string]int32{"http": 80}, Serving: true, Terminating: true}}}
	extip := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "extip", Type: "NodePort", ClusterIPs: []string{"10.96.0.56"},
		ExternalIPs: []string{"198.51.100.5"}, ExternalTrafficPolicy: "Local",
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30082}}},
		Endpoints: []collectorapi.Endpoint{fixture.Endpoint("10.244.2.11", 80, "http")}}
	return map[string]Query{"web": web, "sticky": sticky, "lb": lb, "empty": empty, "itp": itp, "term": term, "extip": extip}
}

func readWith(t *testing.T, q Query, r *fakeRunner) *collectorapi.IPTablesObservation {
	t.Helper()
	q.Runner = r
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

func backend(t *testing.T, obs *collectorapi.IPTablesObservation, name string) collectorapi.IPTablesBackendObservation {
	t.Helper()
	for _, b := range obs.Backends {
		if b.Backend == name {
			if b.Error != "" {
				t.Fatalf("%s error: %s", name, b.Error)
			}
			return b
		}
	}
	t.Fatalf("no %s backend in %+v", name, obs.Backends)
	return collectorapi.IPTablesBackendObservation{}
}

func TestParseRule(t *testing.T) {
	r, err := ParseRule(`-A KUBE-SVC-X ! -s 10.0.0.0/8 -d 10.96.0.50/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ`)
	if err != nil {
		t.Fatal(err)
	}
	if r.Chain != "KUBE-SVC-X" || !r.NotSource || r.Source != "10.0.0.0/8" || r.Destination != "10.96.0.50/32" ||
		r.Protocol != "tcp" || r.DPort != "80" || r.Comment != "default/web:http cluster IP" || r.Jump != "KUBE-MARK-MASQ" {
		t.Errorf("masq rule: %+v", r)
	}
	r, _ = ParseRule(`-A KUBE-SVC-X -m comment --comment "a -> 10.0.0.1:80" -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-Y --mask 255.255.255.255 --rsource -j KUBE-SEP-Y`)
	if r.Recent == nil || !r.Recent.Check || r.Recent.Seconds != 10800 || !r.Recent.Reap || r.Recent.Name != "KUBE-SEP-Y" || !r.Recent.Source || r.Jump != "KUBE-SEP-Y" {
		t.Errorf("recent: %+v %+v", r, r.Recent)
	}
	r, _ = ParseRule(`-A KUBE-SVC-X -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-Z`)
	if r.Probability != "0.33333333349" || r.ProbabilityValue == nil || math.Abs(*r.ProbabilityValue-1.0/3) > 1e-9 {
		t.Errorf("probability: %+v", r)
	}
	r, _ = ParseRule(`-A KUBE-FW-X -m comment --comment "other traffic to ns/a:p will be dropped by KUBE-PROXY-FIREWALL"`)
	if r.Target() != "" || r.Comment == "" {
		t.Errorf("no-target rule: %+v", r)
	}
	r, _ = ParseRule(`-A X -m comment --comment "say \"hi\" \\ ok" -j MARK --set-xmark 0x4000/0x4000`)
	if r.Comment != `say "hi" \ ok` || r.Mark != "0x4000/0x4000" {
		t.Errorf("escapes: %q %q", r.Comment, r.Mark)
	}
	r, _ = ParseRule(`-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN`)
	if r.Mark != "0x4000/0x4000" || !r.Options[1].Negated {
		t.Errorf("negated mark: %+v", r)
	}
	for _, bad := range []string{"", "-N X", `-A X -m comment --comment "open`, "-A X !", "-A X foo"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) did not fail", bad)
		}
	}
}

func TestReadScenariosNFTables(t *testing.T) {
	d := parseDump(t, readFixture(t, "scenarios.save"))
	qs := scenarioQueries()

	t.Run("web", func(t *testing.T) {
		r := &fakeRunner{nft: d}
		obs := readWith(t, qs["web"], r)
		if obs.DefaultMode != "nf_tables" {
			t.Errorf("default mode %q", obs.DefaultMode)
		}
		b := backend(t, obs, collectorapi.IPTablesBackendNFTables)
		if !b.KubeProxyChains || b.MasqMark != "0x4000/0x4000" || len(b.Canary) != 1 || len(b.NodePortsTail) != 1 {
			t.Errorf("backend: chains=%v mark=%q canary=%v tail=%d", b.KubeProxyChains, b.MasqMark, b.Canary, len(b.NodePortsTail))
		}
		if lb := backend(t, obs, collectorapi.IPTablesBackendLegacy); lb.KubeProxyChains || len(lb.Commands) != 0 {
			t.Errorf("legacy should be empty and untouched: %+v", lb)
		}
		if got := r.ran("iptables-legacy"); len(got) != 0 {
			t.Errorf("legacy commands ran without legacy tables: %v", got)
		}
		// Never a full save on nf_tables.
		if got := r.ran("iptables-nft-save"); len(got) != 0 {
			t.Errorf("full save on nf_tables: %v", got)
		}
		p := b.Ports[0]
		if p.ServicePortName != "default/web:http" || len(p.Entry) != 1 || p.Entry[0].Kind != "clusterIP" || p.Entry[0].Target() != "KUBE-SVC-CDGGSHYLG3RE2FKL" {
			t.Fatalf("entry: %+v", p.Entry)
		}
		svc := p.Service
		if !svc.Exists || svc.FoundBy != "hash" || svc.Masquerade == nil || svc.Masquerade.Source != "10.0.0.0/8" || !svc.Masquerade.NotSource {
			t.Errorf("svc chain: %+v", svc)
		}
		if len(svc.Selection) != 3 || svc.UnmatchedShare != 0 {
			t.Fatalf("selection: %+v", svc.Selection)
		}
		for i, want := range []string{"10.244.1.5:8080", "10.244.2.7:8080", "10.244.3.9:8080"} {
			s := svc.Selection[i]
			if s.Endpoint != want || math.Abs(s.Share-1.0/3) > 1e-9 {
				t.Errorf("selection %d: %+v", i, s)
			}
		}
		if p.Local.Exists || p.External.Exists || p.Firewall.Exists {
			t.Errorf("unexpected chains: %v %v %v", p.Local.Exists, p.External.Exists, p.Firewall.Exists)
		}
		// Three programmed SEPs plus the predicted one of the terminating
		// endpoint, reported as absent.
		if len(p.Endpoints) != 4 {
			t.Fatalf("endpoints: %d", len(p.Endpoints))
		}
		for _, e := range p.Endpoints[:3] {
			if !e.Exists || e.DNAT != e.Endpoint || e.EndpointFrom != "hash" || e.Hairpin != strings.Split(e.Endpoint, ":")[0]+"/32" ||
				len(e.ReferencedBy) != 1 || e.ReferencedBy[0] != svc.Name {
				t.Errorf("sep: %+v", e)
			}
		}
		if last := p.Endpoints[3]; last.Exists || last.Endpoint != "10.244.4.4:8080" || len(last.ReferencedBy) != 0 {
			t.Errorf("terminating sep: %+v", last)
		}
		if len(p.Filter) != 0 {
			t.Errorf("filter: %+v", p.Filter)
		}
	})

	t.Run("sticky", func(t *testing.T) {
		b := backend(t, readWith(t, qs["sticky"], &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)
		p := b.Ports[0]
		if p.ServicePortName != "default/sticky" || p.Service.Name != "KUBE-SVC-BJWR5DPVIKTHVKZU" {
			t.Fatalf("unnamed port: %s %s", p.ServicePortName, p.Service.Name)
		}
		if len(p.Service.Affinity) != 2 || len(p.Service.Selection) != 2 {
			t.Fatalf("affinity %d selection %d", len(p.Service.Affinity), len(p.Service.Selection))
		}
		for _, a := range p.Service.Affinity {
			if a.Seconds != 10800 || !a.Reap || a.Name != a.Target {
				t.Errorf("affinity: %+v", a)
			}
		}
		for _, e := range p.Endpoints {
			if e.AffinitySet != e.Name {
				t.Errorf("sep affinity set %q in %s", e.AffinitySet, e.Name)
			}
		}
	})

	t.Run("lb", func(t *testing.T) {
		b := backend(t, readWith(t, qs["lb"], &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)
		p := b.Ports[0]
		kinds := map[string]string{}
		for _, e := range p.Entry {
			kinds[e.Kind] = e.Target()
		}
		if kinds["clusterIP"] != p.Service.Name || kinds["loadBalancerIP"] != p.Firewall.Name {
			t.Errorf("entries: %v", kinds)
		}
		if len(p.NodePorts) != 1 || p.NodePorts[0].DPort != "30080" || p.NodePorts[0].Target() != p.External.Name {
			t.Errorf("nodeports: %+v", p.NodePorts)
		}
		if !p.External.Exists || len(p.External.Rules) != 4 || p.External.Rules[3].Target() != p.Local.Name {
			t.Errorf("ext chain: %+v", p.External)
		}
		if !p.Firewall.Exists || len(p.Firewall.Rules) != 2 || p.Firewall.Rules[0].Source != "203.0.113.0/24" {
			t.Errorf("fw chain: %+v", p.Firewall)
		}
		if !p.Local.Exists || len(p.Local.Selection) != 1 || p.Local.Selection[0].Share != 1 {
			t.Errorf("svl: %+v", p.Local)
		}
		// One SEP is referenced by both SVC and SVL.
		both := 0
		for _, e := range p.Endpoints {
			if len(e.ReferencedBy) == 2 {
				both++
			}
		}
		if len(p.Endpoints) != 2 || both != 1 {
			t.Errorf("endpoints: %+v", p.Endpoints)
		}
		var hc, fwDrop bool
		for _, r := range p.Filter {
			hc = hc || (r.Chain == "KUBE-NODEPORTS" && r.Jump == "ACCEPT" && r.DPort == "32000")
			fwDrop = fwDrop || (r.Chain == "KUBE-PROXY-FIREWALL" && r.Jump == "DROP" && r.Destination == "192.0.2.10/32")
		}
		if !hc || !fwDrop {
			t.Errorf("filter: %+v", p.Filter)
		}
	})

	t.Run("empty", func(t *testing.T) {
		b := backend(t, readWith(t, qs["empty"], &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)
		p := b.Ports[0]
		if len(p.Entry) != 0 || p.Service.Exists || len(p.Endpoints) != 0 {
			t.Errorf("nat state for a Service without endpoints: %+v", p)
		}
		var cip, np bool
		for _, r := range p.Filter {
			cip = cip || (r.Chain == "KUBE-SERVICES" && r.Jump == "REJECT" && r.Comment == "default/empty:http has no endpoints")
			np = np || (r.Chain == "KUBE-EXTERNAL-SERVICES" && r.Jump == "REJECT" && r.DPort == "30081" && r.DstType == "LOCAL")
		}
		if !cip || !np {
			t.Errorf("filter: %+v", p.Filter)
		}
	})

	t.Run("itp", func(t *testing.T) {
		b := backend(t, readWith(t, qs["itp"], &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)
		if len(b.Ports) != 2 {
			t.Fatalf("ports %d", len(b.Ports))
		}
		for _, p := range b.Ports {
			if len(p.Filter) != 1 || p.Filter[0].Jump != "DROP" || p.Filter[0].Comment != p.ServicePortName+" has no local endpoints" {
				t.Errorf("%s filter: %+v", p.ServicePortName, p.Filter)
			}
			if p.Local.Exists || p.Service.Exists {
				t.Errorf("%s chains exist", p.ServicePortName)
			}
			if p.Protocol != map[string]string{"default/itp:dns": "UDP", "default/itp:dns-tcp": "TCP"}[p.ServicePortName] {
				t.Errorf("protocol %s for %s", p.Protocol, p.ServicePortName)
			}
		}
	})

	t.Run("term", func(t *testing.T) {
		b := backend(t, readWith(t, qs["term"], &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)
		p := b.Ports[0]
		if len(p.Service.Selection) != 1 || p.Service.Selection[0].Endpoint != "10.244.1.12:80" || len(p.Endpoints) != 1 || p.Endpoints[0].DNAT != "10.244.1.12:80" {
			t.Errorf("terminating-only: %+v %+v", p.Service.Selection, p.Endpoints)
		}
	})

	t.Run("extip", func(t *testing.T) {
		b := backend(t, readWith(t, qs["extip"], &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)
		p := b.Ports[0]
		kinds := map[string]bool{}
		for _, e := range p.Entry {
			kinds[e.Kind] = true
		}
		if !kinds["clusterIP"] || !kinds["externalIP"] {
			t.Errorf("entries %+v", p.Entry)
		}
		if len(p.External.Rules) != 3 {
			t.Errorf("ext rules without local endpoints: %d", len(p.External.Rules))
		}
		drops := 0
		for _, r := range p.Filter {
			if r.Jump == "DROP" && r.Comment == "default/extip:http has no local endpoints" {
				drops++
			}
		}
		if drops != 2 {
			t.Errorf("filter drops %d: %+v", drops, p.Filter)
		}
	})
}

// The legacy streaming path must observe exactly what the per-chain path
// observes (only the method and the commands differ).
func TestReadScenariosLegacyMatchesNFTables(t *testing.T) {
	d := parseDump(t, readFixture(t, "scenarios.save"))
	for name, q := range scenarioQueries() {
		t.Run(name, func(t *testing.T) {
			nft := backend(t, readWith(t, q, &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)
			r := &fakeRunner{legacy: d}
			obs := readWith(t, q, r)
			leg := backend(t, obs, collectorapi.IPTablesBackendLegacy)
			if !leg.KubeProxyChains || leg.Method != "save-stream" || strings.Join(leg.LegacyTables, ",") != "filter,nat" {
				t.Errorf("legacy backend: %+v", leg)
			}
			if saves := r.ran("iptables-legacy-save"); len(saves) != 2 {
				t.Errorf("legacy saves: %v", saves)
			}
			if n := backend(t, obs, collectorapi.IPTablesBackendNFTables); n.KubeProxyChains {
				t.Errorf("nf_tables reported chains on a legacy node")
			}
			a, _ := json.MarshalIndent(nft.Ports, "", " ")
			b, _ := json.MarshalIndent(leg.Ports, "", " ")
			if string(a) != string(b) {
				t.Errorf("legacy and nf_tables observations differ:\nnft: %s\nlegacy: %s", a, b)
			}
			if nft.MasqMark != leg.MasqMark || len(nft.NodePortsTail) != len(leg.NodePortsTail) {
				t.Errorf("backend-level fields differ")
			}
		})
	}
}

func TestReadBothBackends(t *testing.T) {
	d := parseDump(t, readFixture(t, "scenarios.save"))
	obs := readWith(t, scenarioQueries()["web"], &fakeRunner{nft: d, legacy: d})
	n, l := backend(t, obs, collectorapi.IPTablesBackendNFTables), backend(t, obs, collectorapi.IPTablesBackendLegacy)
	if !n.KubeProxyChains || !l.KubeProxyChains {
		t.Errorf("both backends hold chains: nft=%v legacy=%v", n.KubeProxyChains, l.KubeProxyChains)
	}
}

func TestReadNFTablesModeNode(t *testing.T) {
	// kube-proxy in nftables mode: iptables-nft says "incompatible" for
	// every chain and no legacy tables exist.
	r := &fakeRunner{}
	obs := readWith(t, scenarioQueries()["web"], r)
	for _, b := range obs.Backends {
		if b.KubeProxyChains || b.Error != "" || len(b.Ports) != 0 {
			t.Errorf("%s: %+v", b.Backend, b)
		}
	}
	// kube-router's chains, and the filter table's built-in chains where
	// any enforcer hooks its own, are looked at whatever kube-proxy's mode.
	if got := r.ran("iptables-nft"); len(got) != 8 || len(r.ran("iptables-nft -t filter -S KUBE-ROUTER-")) != 3 ||
		len(r.ran("iptables-nft -t filter -S INPUT")) != 1 || len(r.ran("iptables-nft -t filter -S FORWARD")) != 1 || len(r.ran("iptables-nft -t filter -S OUTPUT")) != 1 {
		t.Errorf("expected only the KUBE-MARK-MASQ, canary and policy enforcer probes, ran %v", got)
	}
}

func TestReadLargeClusterWithoutComments(t *testing.T) {
	d := parseDump(t, readFixture(t, "large.save"))
	svc := collectorapi.ServiceSpec{Namespace: "default", Name: "big", ClusterIPs: []string{"10.96.1.1"},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}
	var eps []collectorapi.Endpoint
	for i := 0; i < 1001; i++ {
		eps = append(eps, fixture.Endpoint(fmt.Sprintf("10.245.%d.%d", i/250, i%250+1), 8080, "http"))
	}
	for _, tc := range []struct {
		name     string
		eps      []collectorapi.Endpoint
		from     string
		legacy   bool
		parallel int
	}{
		{"hash/nft", eps, "hash", false, 8},
		{"dnat/nft", nil, "dnat", false, 8},
		{"hash/legacy", eps, "hash", true, 0},
		{"dnat/legacy", nil, "dnat", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &fakeRunner{nft: d}
			be := collectorapi.IPTablesBackendNFTables
			if tc.legacy {
				r = &fakeRunner{legacy: d}
				be = collectorapi.IPTablesBackendLegacy
			}
			b := backend(t, readWith(t, Query{Service: svc, Endpoints: tc.eps, Parallel: tc.parallel, Backends: []string{be}}, r), be)
			p := b.Ports[0]
			if len(p.Service.Selection) != 1001 || len(p.Endpoints) != 1001 {
				t.Fatalf("selection %d endpoints %d", len(p.Service.Selection), len(p.Endpoints))
			}
			sum := 0.0
			for _, s := range p.Service.Selection {
				if s.Endpoint != "" {
					t.Fatalf("large-cluster rule has an endpoint comment: %+v", s)
				}
				sum += s.Share
			}
			if math.Abs(sum-1) > 1e-6 || p.Service.UnmatchedShare > 1e-6 {
				t.Errorf("shares sum to %v (unmatched %v)", sum, p.Service.UnmatchedShare)
			}
			for _, e := range p.Endpoints {
				if e.EndpointFrom != tc.from || e.Endpoint != e.DNAT || !e.Exists {
					t.Fatalf("sep %+v", e)
				}
			}
		})
	}
}

// A KUBE-SVC chain that is not where the hash says (another kube-proxy
// version, a hand edit) is still found from the entry rule's comment, and
// its endpoint chains by following its jumps.
func TestReadCommentFallback(t *testing.T) {
	text := strings.ReplaceAll(readFixture(t, "scenarios.save"), "KUBE-SVC-CDGGSHYLG3RE2FKL", "KUBE-SVC-ELSEWHERE0000000")
	d := parseDump(t, text)
	q := scenarioQueries()["web"]
	q.Endpoints = nil // no hash predictions: SEPs only by following jumps
	for _, r := range []*fakeRunner{{nft: d}, {legacy: d}} {
		obs := readWith(t, q, r)
		for _, b := range obs.Backends {
			if !b.KubeProxyChains {
				continue
			}
			p := b.Ports[0]
			if p.Service.Exists {
				t.Errorf("%s: hash-named chain should be absent", b.Backend)
			}
			if len(p.Other) != 1 || p.Other[0].Name != "KUBE-SVC-ELSEWHERE0000000" || p.Other[0].FoundBy != "comment" || len(p.Other[0].Selection) != 3 {
				t.Fatalf("%s: other chains %+v", b.Backend, p.Other)
			}
			if len(p.Endpoints) != 3 || p.Endpoints[0].FoundBy != "jump" || p.Endpoints[0].EndpointFrom != "comment" || p.Endpoints[0].DNAT != "10.244.1.5:8080" {
				t.Errorf("%s: endpoints %+v", b.Backend, p.Endpoints)
			}
		}
	}
}

// TestFailedListingListedAgain: a chain whose listing failed while the
// references were counted (a netlink dump the ruleset changed under) is
// listed again for the rule-by-rule read, not kept as a chain without rules.
func TestFailedListingListedAgain(t *testing.T) {
	svc := chainKey{"nat", "KUBE-SVC-X6HGKHQUEUPFT27Y"}
	calls := 0
	st := &store{listings: map[chainKey]*chainListing{}, parallel: 1}
	st.fetch = func(context.Context, chainKey) *chainListing {
		calls++
		if calls == 1 {
			return &chainListing{err: errDumpInterrupted}
		}
		r, err := ParseRule("-A KUBE-SVC-X6HGKHQUEUPFT27Y -j KUBE-SEP-AAAAAAAAAAAAAAAA")
		if err != nil {
			t.Fatal(err)
		}
		return &chainListing{exists: true, rules: []collectorapi.IPTablesRule{r}}
	}
	st.ensure(context.Background(), svc)
	if st.firstErr() == nil {
		t.Fatal("the first listing should have failed")
	}
	st.forgetFailed()
	st.ensure(context.Background(), svc)
	if err := st.firstErr(); err != nil || len(st.get(svc).rules) != 1 || calls != 2 {
		t.Errorf("after forgetFailed: err %v, %d rules, %d listings; want the chain listed again with its rule", err, len(st.get(svc).rules), calls)
	}
}
