package fakeapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func TestBenchServices(t *testing.T) {
	s := BenchService(1000, 4, false)
	if s.Namespace != "bench" || s.Name != "svc-1000" || s.ClusterIP != "10.100.4.1" || len(s.Endpoints) != 4 || s.Endpoints[0] != "10.200.16.1" {
		t.Errorf("IPv4 bench Service: %+v", s)
	}
	s = BenchService(1000, 4, true)
	if s.ClusterIP != "fd00:100::3e9" || s.Endpoints[3] != "fd00:200::fa4" {
		t.Errorf("IPv6 bench Service: %+v", s)
	}
	c, err := Decode(Cluster{NodeName: "n", NodeIP: "10.0.0.1", BenchServices: 7, BenchEndpoints: 2}.Encode())
	if err != nil || c.BenchServices != 7 || c.NodeName != "n" {
		t.Errorf("round trip: %+v %v", c, err)
	}
}

func TestHandlerListsAndWatchList(t *testing.T) {
	c := Cluster{NodeName: "node", NodeIP: "fd00::1", BenchServices: 3, BenchEndpoints: 250, BenchIPv6: true}
	srv := httptest.NewServer(c.Handler())
	defer srv.Close()

	var svcs corev1.ServiceList
	get(t, srv.URL+"/api/v1/services", &svcs)
	if len(svcs.Items) != 3 || svcs.Items[2].Name != "svc-2" || svcs.Items[2].Spec.IPFamilies[0] != corev1.IPv6Protocol {
		t.Errorf("services: %+v", svcs.Items)
	}
	var slices discoveryv1.EndpointSliceList
	get(t, srv.URL+"/apis/discovery.k8s.io/v1/endpointslices", &slices)
	// 250 endpoints per Service: slices of 100, 100 and 50.
	if len(slices.Items) != 9 || len(slices.Items[2].Endpoints) != 50 || slices.Items[0].AddressType != discoveryv1.AddressTypeIPv6 ||
		slices.Items[0].Labels[discoveryv1.LabelServiceName] != "svc-0" {
		t.Errorf("slices: %d", len(slices.Items))
	}
	var nodes corev1.NodeList
	get(t, srv.URL+"/api/v1/nodes", &nodes)
	if len(nodes.Items) != 1 || nodes.Items[0].Spec.PodCIDR != "fd00:10:244::/64" {
		t.Errorf("nodes: %+v", nodes.Items)
	}

	// Watch-list: every object as ADDED, then the initial-events-end bookmark.
	resp, err := http.Get(srv.URL + "/api/v1/services?watch=true&sendInitialEvents=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var types []string
	for len(types) < 4 && sc.Scan() {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct {
					Annotations map[string]string `json:"annotations"`
				} `json:"metadata"`
			} `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "BOOKMARK" && ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] != "true" {
			t.Errorf("bookmark without initial-events-end: %s", sc.Text())
		}
		types = append(types, ev.Type)
	}
	if len(types) != 4 || types[0] != "ADDED" || types[3] != "BOOKMARK" {
		t.Errorf("watch events: %v", types)
	}
}

func get(t *testing.T, url string, into any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}
