package iptables

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/collectors"
)

// apiQuery builds the query for one Service of the real testbed dump from the
// API objects recorded next to it (testdata/iptables/testbed-api.json), the
// way the plugin would: Service spec plus the union of its EndpointSlices.
func apiQuery(t *testing.T, name string) Query {
	t.Helper()
	b, err := os.ReadFile("../testdata/iptables/testbed-api.json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string            `json:"name"`
				Namespace string            `json:"namespace"`
				Labels    map[string]string `json:"labels"`
			} `json:"metadata"`
			Spec struct {
				Type                  string   `json:"type"`
				ClusterIPs            []string `json:"clusterIPs"`
				ExternalIPs           []string `json:"externalIPs"`
				SessionAffinity       string   `json:"sessionAffinity"`
				ExternalTrafficPolicy string   `json:"externalTrafficPolicy"`
				InternalTrafficPolicy string   `json:"internalTrafficPolicy"`
				HealthCheckNodePort   int32    `json:"healthCheckNodePort"`
				Ports                 []struct {
					Name     string `json:"name"`
					Protocol string `json:"protocol"`
					Port     int32  `json:"port"`
					NodePort int32  `json:"nodePort"`
				} `json:"ports"`
			} `json:"spec"`
			Ports []struct {
				Name string `json:"name"`
				Port int32  `json:"port"`
			} `json:"ports"`
			Endpoints []struct {
				Addresses  []string `json:"addresses"`
				NodeName   string   `json:"nodeName"`
				Conditions struct {
					Ready, Serving, Terminating *bool
				} `json:"conditions"`
			} `json:"endpoints"`
		} `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	var q Query
	for _, it := range list.Items {
		switch {
		case it.Kind == "Service" && it.Metadata.Name == name:
			s := it.Spec
			q.Service = collectors.ServiceSpec{Namespace: it.Metadata.Namespace, Name: name, Type: s.Type, ClusterIPs: s.ClusterIPs,
				ExternalIPs: s.ExternalIPs, SessionAffinity: s.SessionAffinity, ExternalTrafficPolicy: s.ExternalTrafficPolicy,
				InternalTrafficPolicy: s.InternalTrafficPolicy, HealthCheckNodePort: s.HealthCheckNodePort}
			for _, p := range s.Ports {
				q.Service.Ports = append(q.Service.Ports, collectors.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, NodePort: p.NodePort})
			}
		case it.Kind == "EndpointSlice" && it.Metadata.Labels["kubernetes.io/service-name"] == name:
			ports := map[string]int32{}
			for _, p := range it.Ports {
				ports[p.Name] = p.Port
			}
			for _, e := range it.Endpoints {
				c := e.Conditions
				q.Endpoints = append(q.Endpoints, collectors.Endpoint{IP: e.Addresses[0], Ports: ports, NodeName: e.NodeName,
					Ready: c.Ready == nil || *c.Ready, Serving: c.Serving == nil || *c.Serving, Terminating: c.Terminating != nil && *c.Terminating})
			}
		}
	}
	if q.Service.Name == "" {
		t.Fatalf("no Service %s in testbed-api.json", name)
	}
	return q
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
	}{{"nf_tables", func() *fakeRunner { return &fakeRunner{nft: d} }, BackendNFTables}, {"legacy", func() *fakeRunner { return &fakeRunner{legacy: d} }, BackendLegacy}} {
		t.Run(r.name, func(t *testing.T) {
			get := func(name string) PortObservation {
				t.Helper()
				b := backend(t, readWith(t, apiQuery(t, name), r.runner()), r.be)
				if !b.KubeProxyChains || b.MasqMark != "0x4000/0x4000" {
					t.Fatalf("%s: backend %+v", name, b)
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
