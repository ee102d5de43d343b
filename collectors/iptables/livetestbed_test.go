package iptables

import (
	"context"
	"os"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// TestReadLiveTestbed reads default/kubernetes from the testbed's
// iptables-mode node while the real kube-proxy runs (skipped when the
// testbed is not up). Read-only: it lists chains and never names a legacy
// table that does not exist.
func TestReadLiveTestbed(t *testing.T) {
	const ns = "/var/run/netns/svtb-node1"
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := os.Stat(ns); err != nil {
		t.Skip("testbed node svtb-node1 not up")
	}
	q := Query{NetNS: ns, Service: collectorapi.ServiceSpec{Namespace: "default", Name: "kubernetes", ClusterIPs: []string{"10.96.0.1"},
		Ports: []collectorapi.ServicePort{{Name: "https", Protocol: "TCP", Port: 443}}}}
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	// Other tests may leave legacy leftovers on the node: only one backend
	// (the one kube-proxy writes) has to hold the Service.
	var chains, programmed bool
	for _, b := range obs.Backends {
		if b.Error != "" {
			t.Errorf("%s: %s", b.Backend, b.Error)
		}
		if !b.KubeProxyChains {
			continue
		}
		chains = true
		p := b.Ports[0]
		if p.Service.Name == "KUBE-SVC-NPX46M4PTMTKRN6Y" && p.Service.Exists && len(p.Entry) == 1 && len(p.Endpoints) > 0 && p.Endpoints[0].DNAT != "" {
			programmed = true
		}
	}
	if !chains {
		t.Skip("kube-proxy has not programmed svtb-node1 (testbed starting or stopping)")
	}
	if !programmed {
		t.Errorf("no backend holds default/kubernetes: %+v", obs.Backends)
	}
}
