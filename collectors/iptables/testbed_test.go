package iptables

import (
	"math"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
)

// apiQuery builds the query for one Service of the real testbed dump from the
// API objects recorded next to it (testdata/iptables/testbed-api.json), the
// way the plugin would: Service spec plus the union of its EndpointSlices.
func apiQuery(t *testing.T, name string) Query {
	t.Helper()
	s := fixture.TestbedService(t, name)
	return Query{Service: s.Spec, Endpoints: s.Endpoints}
}

// Real kube-proxy v1.37.2 (iptables mode, node svtb-node1) in the project
// testbed, dumped with iptables-nft-save; 1001 endpoints in the cluster, so
// kube-proxy dropped every endpoint comment.
func TestReadTestbedNode1(t *testing.T) {
	d := parseDump(t, readFixture(t, "testbed-node1.save"))
	for _, r := range []struct {
		name   string
		runner func() *fakeRunner
		be     string
	}{{"nf_tables", func() *fakeRunner { return &fakeRunner{nft: d} }, collectorapi.IPTablesBackendNFTables}, {"legacy", func() *fakeRunner { return &fakeRunner{legacy: d} }, collectorapi.IPTablesBackendLegacy}} {
		t.Run(r.name, func(t *testing.T) {
			get := func(name string) collectorapi.IPTablesPortObservation {
				t.Helper()
				b := backend(t, readWith(t, apiQuery(t, name), r.runner()), r.be)
				if !b.KubeProxyChains || b.MasqMark != "0x4000/0x4000" {
					t.Fatalf("%s: backend %+v", name, b)
				}
				// The masquerade path: POSTROUTING's jump, then RETURN for
				// unmarked packets, the mark cleared, MASQUERADE.
				if pr := b.Postrouting; pr == nil || !pr.Exists || len(pr.Jumps) != 1 || len(pr.Rules) != 3 ||
					pr.Rules[0].Jump != "RETURN" || pr.Rules[0].Mark != "0x4000/0x4000" || pr.Rules[1].Jump != "MARK" || pr.Rules[2].Jump != "MASQUERADE" {
					t.Fatalf("%s: postrouting %+v", name, b.Postrouting)
				}
				return b.Ports[0]
			}
			web := get("web")
			if len(web.Entry) != 1 || !web.Service.Exists || len(web.Service.Selection) != 3 {
				t.Fatalf("web: %+v", web)
			}
			for _, s := range web.Service.Selection {
				if s.Endpoint != "" || math.Abs(s.Share-1.0/3) > 1e-9 {
					t.Errorf("web selection (no comments in large-cluster mode): %+v", s)
				}
			}
			progd := 0
			for _, e := range web.Endpoints {
				if e.Exists {
					progd++
					if e.EndpointFrom != "hash" || e.DNAT != e.Endpoint || len(e.ReferencedBy) != 1 {
						t.Errorf("web sep: %+v", e)
					}
				} else if e.Endpoint != "10.244.1.4:8080" {
					t.Errorf("only the terminating endpoint may be unprogrammed: %+v", e)
				}
			}
			if progd != 3 {
				t.Errorf("web: %d programmed endpoints", progd)
			}

			sticky := get("sticky")
			if len(sticky.Service.Affinity) != 2 || sticky.Service.Affinity[0].Seconds != 600 {
				t.Errorf("sticky: %+v", sticky.Service.Affinity)
			}

			lb := get("lb")
			if !lb.Local.Exists || len(lb.Local.Selection) != 1 || len(lb.External.Rules) != 4 || len(lb.NodePorts) != 2 {
				t.Errorf("lb: local %+v ext %d nodeports %d", lb.Local, len(lb.External.Rules), len(lb.NodePorts))
			}
			var hc bool
			for _, f := range lb.Filter {
				hc = hc || (f.Jump == "ACCEPT" && f.DPort == "30995")
			}
			if !hc {
				t.Errorf("lb health check: %+v", lb.Filter)
			}

			empty := get("empty")
			if len(empty.Filter) != 2 || empty.Filter[0].Jump != "REJECT" || empty.Filter[0].RejectWith != "icmp-port-unreachable" {
				t.Errorf("empty: %+v", empty.Filter)
			}

			b := backend(t, readWith(t, apiQuery(t, "itp"), r.runner()), r.be)
			for _, p := range b.Ports {
				if len(p.Filter) != 1 || p.Filter[0].Jump != "DROP" || !strings.HasSuffix(p.Filter[0].Comment, "has no local endpoints") {
					t.Errorf("itp %s: %+v", p.ServicePortName, p.Filter)
				}
			}

			term := get("term")
			if len(term.Service.Selection) != 1 || term.Endpoints[0].DNAT != "10.244.1.12:80" {
				t.Errorf("term (serving+terminating fallback): %+v %+v", term.Service.Selection, term.Endpoints)
			}

			extip := get("extip")
			drops := 0
			for _, f := range extip.Filter {
				if f.Jump == "DROP" {
					drops++
				}
			}
			if drops != 2 || len(extip.External.Rules) != 3 {
				t.Errorf("extip: %d drops, %d ext rules", drops, len(extip.External.Rules))
			}

			big := get("big")
			sum := 0.0
			for _, s := range big.Service.Selection {
				sum += s.Share
			}
			if len(big.Service.Selection) != 1001 || len(big.Endpoints) != 1001 || math.Abs(sum-1) > 1e-6 {
				t.Errorf("big: %d selections (sum %v), %d endpoints", len(big.Service.Selection), sum, len(big.Endpoints))
			}
		})
	}
}
