package iptables

import (
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/kubeproxy"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
)

// The real kube-proxy v1.37.2 in iptables mode with a single-stack IPv6
// Service (default/web, ClusterIP fd00:96::50, endpoint [fd00:250::2]:8080),
// dumped with ip6tables-nft-save (collectors/testdata/PROVENANCE.md).
func TestReadKubeProxyIPv6(t *testing.T) {
	d := parseDump(t, readFixture(t, "kubeproxy-ipv6.save"))
	q := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{"fd00:96::50"},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}},
		Endpoints: []collectorapi.Endpoint{fixture.Endpoint("fd00:250::2", 8080, "http")}}
	for _, withEndpoints := range []bool{true, false} {
		if !withEndpoints {
			q.Endpoints = nil // SEP found only by following the SVC chain's jump
		}
		r := &fakeRunner{nft: d}
		obs := readWith(t, q, r)
		b := backend(t, obs, collectorapi.IPTablesBackendNFTables)
		if b.Family != "IPv6" || !b.KubeProxyChains || b.MasqMark != "0x4000/0x4000" || len(b.Ports) != 1 {
			t.Fatalf("backend: %+v", b)
		}
		for _, c := range r.ran("") {
			if !strings.HasPrefix(c, "ip6tables-nft ") && c != "iptables -V" {
				t.Errorf("IPv6 read ran %q", c)
			}
		}
		spn := kubeproxy.ServicePortName("default", "web", "http")
		svc := kubeproxy.IPTablesServiceChains(spn, "tcp").Service
		p := b.Ports[0]
		if len(p.Entry) != 1 || p.Entry[0].Kind != "clusterIP" || p.Entry[0].Destination != "fd00:96::50/128" ||
			p.Entry[0].DPort != "80" || p.Entry[0].Target() != svc {
			t.Errorf("entry: %+v", p.Entry)
		}
		if !p.Service.Exists || p.Service.Name != svc || p.Service.Masquerade == nil ||
			!strings.Contains(p.Service.Masquerade.Raw, "! -s fd00:10:244::/56") {
			t.Errorf("service chain: %+v", p.Service)
		}
		const endpoint = "[fd00:250::2]:8080"
		sep := kubeproxy.IPTablesEndpointChain(spn, "tcp", endpoint)
		if len(p.Service.Selection) != 1 || p.Service.Selection[0].Target != sep || p.Service.Selection[0].Endpoint != endpoint ||
			p.Service.Selection[0].Share != 1 {
			t.Errorf("selection: %+v", p.Service.Selection)
		}
		if len(p.Endpoints) != 1 {
			t.Fatalf("endpoints: %+v", p.Endpoints)
		}
		e := p.Endpoints[0]
		if !e.Exists || e.Name != sep || e.Endpoint != endpoint || e.DNAT != endpoint || e.Hairpin != "fd00:250::2/128" {
			t.Errorf("endpoint chain (endpoints from the API: %v): %+v", withEndpoints, e)
		}
	}
}
