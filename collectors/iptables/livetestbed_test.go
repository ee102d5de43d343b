package iptables

import (
	"context"
	"testing"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
)

// TestReadLiveTestbed reads default/kubernetes from the testbed's
// iptables-mode node while the real kube-proxy runs (skipped when the
// testbed is not up). Read-only: it lists chains and never names a legacy
// table that does not exist.
func TestReadLiveTestbed(t *testing.T) {
	netns := fixture.LiveTestbedNode(t, "svtb-node1")
	q := Query{NetNS: netns, Service: fixture.LiveKubernetes(t, netns)}
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
		if p.Service.Name == "KUBE-SVC-NPX46M4PTMTKRN6Y" && p.Service.Exists && entryCounts(p)["clusterIP KUBE-SERVICES→KUBE-SVC-NPX46M4PTMTKRN6Y"] == 1 && len(p.Endpoints) > 0 && p.Endpoints[0].DNAT != "" {
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
