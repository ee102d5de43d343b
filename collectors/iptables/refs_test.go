package iptables

import (
	"strconv"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

func counts(chain string, exists bool, unread int) collectorapi.IPTablesChainReferences {
	return collectorapi.IPTablesChainReferences{Chain: chain, Exists: exists, Unread: unread}
}

// entryReferences accepts only the counts kube-proxy v1.37.2 writes, and
// asks for KUBE-NODEPORTS when node-port jumps cannot be told from the rest.
func TestEntryReferences(t *testing.T) {
	spn := "ns/svc:http"
	svc := func(extIPs, lbIPs []string) collectorapi.ServiceSpec {
		return collectorapi.ServiceSpec{Namespace: "ns", Name: "svc", ClusterIPs: []string{"10.96.0.10"}, ExternalIPs: extIPs, LoadBalancerIPs: lbIPs}
	}
	reject := []collectorapi.IPTablesRule{{Chain: chainServices, Comment: spn + " has no endpoints", Jump: "REJECT"}}
	drop := []collectorapi.IPTablesRule{{Chain: chainServices, Comment: spn + " has no local endpoints", Jump: "DROP"}}
	for _, c := range []struct {
		name          string
		svc           collectorapi.ServiceSpec
		nodePort      bool
		nodePortsRead bool
		filter        []collectorapi.IPTablesRule
		refs          [4][2]int // exists (0/1), unread for SVC, SVL, EXT, FW
		want          string    // entries as "kind target count", or "why" / "nodeports"
	}{
		{name: "cluster IP to SVC", svc: svc(nil, nil), refs: [4][2]int{{1, 1}, {0, 0}, {0, 0}, {0, 0}}, want: "clusterIP SVC 1"},
		{name: "cluster IP to SVL (internalTrafficPolicy Local)", svc: svc(nil, nil), refs: [4][2]int{{1, 0}, {1, 1}, {0, 0}, {0, 0}}, want: "clusterIP SVL 1"},
		{name: "jump missing", svc: svc(nil, nil), refs: [4][2]int{{1, 0}, {0, 0}, {0, 0}, {0, 0}}, want: "why"},
		{name: "two jumps", svc: svc(nil, nil), refs: [4][2]int{{1, 2}, {0, 0}, {0, 0}, {0, 0}}, want: "why"},
		{name: "rejected, no endpoints", svc: svc(nil, nil), filter: reject, refs: [4][2]int{{0, 0}, {0, 0}, {0, 0}, {0, 0}}, want: ""},
		{name: "dropped, no local endpoints", svc: svc(nil, nil), filter: drop, refs: [4][2]int{{0, 0}, {1, 0}, {0, 0}, {0, 0}}, want: ""},
		{name: "rejected and jumped to", svc: svc(nil, nil), filter: reject, refs: [4][2]int{{1, 1}, {0, 0}, {0, 0}, {0, 0}}, want: "why"},
		{name: "no cluster IP, no jump", svc: collectorapi.ServiceSpec{ClusterIPs: []string{"None"}}, refs: [4][2]int{{0, 0}, {0, 0}, {0, 0}, {0, 0}}, want: ""},
		{name: "node port only", svc: svc(nil, nil), nodePort: true, refs: [4][2]int{{1, 1}, {0, 0}, {1, 1}, {0, 0}}, want: "clusterIP SVC 1,nodePort EXT 1"},
		{name: "node port with localhost rule", svc: svc(nil, nil), nodePort: true, refs: [4][2]int{{1, 1}, {0, 0}, {1, 2}, {0, 0}}, want: "nodeports"},
		{name: "node port and external IP", svc: svc([]string{"198.51.100.5"}, nil), nodePort: true, refs: [4][2]int{{1, 1}, {0, 0}, {1, 2}, {0, 0}}, want: "nodeports"},
		{name: "external IP, KUBE-NODEPORTS read", svc: svc([]string{"198.51.100.5"}, nil), nodePort: true, nodePortsRead: true, refs: [4][2]int{{1, 1}, {0, 0}, {1, 1}, {0, 0}}, want: "clusterIP SVC 1,externalIP EXT 1"},
		{name: "external IP jump missing, KUBE-NODEPORTS read", svc: svc([]string{"198.51.100.5"}, nil), nodePort: true, nodePortsRead: true, refs: [4][2]int{{1, 1}, {0, 0}, {1, 0}, {0, 0}}, want: "why"},
		{name: "external IP of the other family", svc: svc([]string{"2001:db8::5"}, nil), refs: [4][2]int{{1, 1}, {0, 0}, {1, 0}, {0, 0}}, want: "clusterIP SVC 1"},
		{name: "load balancer through KUBE-FW", svc: svc(nil, []string{"192.0.2.10", "192.0.2.11"}), refs: [4][2]int{{1, 1}, {0, 0}, {1, 0}, {1, 2}}, want: "clusterIP SVC 1,loadBalancerIP FW 2"},
		{name: "load balancer, KUBE-FW short", svc: svc(nil, []string{"192.0.2.10", "192.0.2.11"}), refs: [4][2]int{{1, 1}, {0, 0}, {1, 1}, {1, 1}}, want: "why"},
		{name: "load balancer direct", svc: svc(nil, []string{"192.0.2.10"}), refs: [4][2]int{{1, 1}, {0, 0}, {1, 1}, {0, 0}}, want: "clusterIP SVC 1,loadBalancerIP EXT 1"},
		{name: "external chain missing", svc: svc(nil, nil), nodePort: true, refs: [4][2]int{{1, 1}, {0, 0}, {0, 0}, {0, 0}}, want: "why"},
		{name: "external chain missing, no endpoints", svc: svc(nil, nil), nodePort: true, filter: reject, refs: [4][2]int{{0, 0}, {0, 0}, {0, 0}, {0, 0}}, want: ""},
		{name: "stale external chain jumped to", svc: svc(nil, nil), refs: [4][2]int{{1, 1}, {0, 0}, {1, 1}, {0, 0}}, want: "why"},
	} {
		t.Run(c.name, func(t *testing.T) {
			names := map[string]string{"KUBE-SVC-X": "SVC", "KUBE-SVL-X": "SVL", "KUBE-EXT-X": "EXT", "KUBE-FW-X": "FW"}
			var refs []collectorapi.IPTablesChainReferences
			for i, n := range []string{"KUBE-SVC-X", "KUBE-SVL-X", "KUBE-EXT-X", "KUBE-FW-X"} {
				refs = append(refs, counts(n, c.refs[i][0] == 1, c.refs[i][1]))
			}
			entries, needNodePorts, why := entryReferences(refInput{spn: spn, family: "IPv4", svc: c.svc, nodePort: c.nodePort,
				nodePortsRead: c.nodePortsRead, filter: c.filter, refs: refs})
			var got []string
			for _, e := range entries {
				got = append(got, e.Kind+" "+names[e.Target]+" "+itoa(e.Count))
			}
			gotS := strings.Join(got, ",")
			switch {
			case why != "":
				gotS = "why"
			case needNodePorts:
				gotS = "nodeports"
			}
			if gotS != c.want {
				t.Errorf("got %q (why %q), want %q", gotS, why, c.want)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// Faults on the real kube-proxy's rules that the reference counts must not
// hide: the reader falls back to reading KUBE-SERVICES and then agrees with
// the text reader rule for rule.
func TestReferencesFallBackOnRealFaults(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-nft", "nsenter")
	for _, c := range []struct {
		name    string
		service string
		fault   [][]string
		why     string
	}{
		{name: "cluster IP jump deleted", service: "web", fault: [][]string{{"-D", "KUBE-SERVICES", "-d", "10.96.219.249/32", "-p", "tcp", "-m", "comment", "--comment", "nf-fixtures/web:http cluster IP", "-m", "tcp", "--dport", "80", "-j", "KUBE-SVC-EZNMPPQBOZVU5VUP"}},
			why: "kube-proxy writes one jump"},
		{name: "extra jump from another chain", service: "web", fault: [][]string{{"-N", "OTHER"}, {"-A", "OTHER", "-j", "KUBE-SVC-EZNMPPQBOZVU5VUP"}},
			why: "2 jump(s) from chains not read"},
		{name: "external IP jump deleted", service: "extip", fault: [][]string{{"-D", "KUBE-SERVICES", "-d", "198.51.100.5/32", "-p", "tcp", "-m", "comment", "--comment", "nf-fixtures/extip:http external IP", "-m", "tcp", "--dport", "80", "-j", "KUBE-EXT-XDZOPTEFO6RN5VPH"}},
			why: "kube-proxy writes 1 (1 external IP"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := restoredWithNFAcct(t, "testbed-node1.save", "iptables-nft-restore")
			for _, f := range c.fault {
				ns.MustRun(t, append([]string{"iptables-nft", "-t", "nat"}, f...)...)
			}
			text, kernel := readerPair(t, apiQuery(t, c.service), ns.Path(), collectorapi.IPTablesBackendNFTables)
			if kernel.EntryProof != collectorapi.IPTablesEntryProofRules || !strings.Contains(kernel.EntryProofFallback, c.why) {
				t.Errorf("proof %q, fallback %q: want rules because %q", kernel.EntryProof, kernel.EntryProofFallback, c.why)
			}
			sameObservation(t, c.name, text, kernel, collectorapi.IPTablesReaderNetlink)
		})
	}
}

// Told to (a probe of a frontend failed), the reader reads KUBE-SERVICES
// even where the counts would do.
func TestEntryProofRulesOnRequest(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "nsenter")
	ns := restoredWithNFAcct(t, "testbed-node1.save", "iptables-nft-restore")
	q := apiQuery(t, "web")
	q.EntryProof = collectorapi.IPTablesEntryProofRules
	text, kernel := readerPair(t, q, ns.Path(), collectorapi.IPTablesBackendNFTables)
	if kernel.EntryProof != collectorapi.IPTablesEntryProofRules || len(kernel.Ports[0].Entry) != 1 {
		t.Fatalf("proof %q, entries %+v", kernel.EntryProof, kernel.Ports[0].Entry)
	}
	sameObservation(t, "web", text, kernel, collectorapi.IPTablesReaderNetlink)
}

// The kernel behaviour the reference counts rest on: NFTA_CHAIN_USE of a
// chain is its own rules plus every jump and goto to it (nf_tables_api.c:
// nf_tables_newrule and nft_verdict_init take a reference, and
// nf_tables_fill_chain_info reports chain->use), and the generation moves
// with every commit.
func TestChainUseCountsRulesAndJumps(t *testing.T) {
	netns.RequireTools(t, "iptables-nft", "nsenter")
	ns := netns.New(t, "ipt")
	run := func(args ...string) { ns.MustRun(t, append([]string{"iptables-nft", "-t", "nat"}, args...)...) }
	for _, c := range []string{"KUBE-SERVICES", "KUBE-SVC-A", "KUBE-EXT-A", "KUBE-MARK-MASQ", "KUBE-EMPTY"} {
		run("-N", c)
	}
	run("-A", "OUTPUT", "-j", "KUBE-SERVICES")
	run("-A", "KUBE-SERVICES", "-d", "10.0.0.1/32", "-p", "tcp", "--dport", "80", "-j", "KUBE-SVC-A")
	run("-A", "KUBE-SERVICES", "-d", "10.0.0.2/32", "-p", "tcp", "--dport", "80", "-g", "KUBE-EXT-A")
	run("-A", "KUBE-EXT-A", "-j", "KUBE-SVC-A")
	run("-A", "KUBE-SVC-A", "-j", "KUBE-MARK-MASQ")
	run("-A", "KUBE-SVC-A", "-j", "RETURN")
	run("-A", "KUBE-SVC-A", "-j", "RETURN")
	nl, err := openNFNL(ns.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer nl.close()
	gen, err := nl.generation()
	if err != nil {
		t.Fatal(err)
	}
	for chain, want := range map[string]uint32{
		"KUBE-SERVICES":  2 + 1, // two rules, OUTPUT's jump
		"KUBE-SVC-A":     3 + 2, // three rules, a jump and a jump through KUBE-EXT-A
		"KUBE-EXT-A":     1 + 1, // one rule, a goto
		"KUBE-MARK-MASQ": 0 + 1,
		"KUBE-EMPTY":     0,
		"OUTPUT":         1, // a base chain: its rule
	} {
		ci, err := nl.chainInfo("IPv4", "nat", chain)
		if err != nil || !ci.exists || ci.use != want || ci.gen != uint16(gen) {
			t.Errorf("%s: %+v %v, want use %d in generation %d", chain, ci, err, want, gen)
		}
	}
	if ci, err := nl.chainInfo("IPv4", "nat", "KUBE-NONE"); err != nil || ci.exists {
		t.Errorf("missing chain: %+v %v", ci, err)
	}
	run("-A", "KUBE-EMPTY", "-j", "RETURN")
	if g, err := nl.generation(); err != nil || g == gen {
		t.Errorf("generation %d after a commit, was %d (%v)", g, gen, err)
	}
}
