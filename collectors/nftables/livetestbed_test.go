package nftables

import (
	"context"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
)

// TestReadLiveTestbed reads default/kubernetes from the testbed's
// nftables-mode node while the real kube-proxy runs (skipped when the
// testbed is not up). Read-only.
func TestReadLiveTestbed(t *testing.T) {
	netns := fixture.LiveTestbedNode(t, "svtb-node2")
	q := Query{NetNS: netns, Service: fixture.LiveKubernetes(t, netns)}
	obs, err := Read(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if obs.Source != collectorapi.NFTablesSourceNetlink {
		t.Fatalf("source %s: %s", obs.Source, obs.NetlinkError)
	}
	tb := obs.Tables[0]
	if !tb.Present {
		t.Skip("kube-proxy has not programmed svtb-node2 (testbed starting or stopping)")
	}
	p := tb.Ports[0]
	if p.ChainNames.Service != "service-2QRHZV4L-default/kubernetes/tcp/https" || !p.ServiceIPs[0].Found || !p.Service.Exists || len(p.Service.Rules) == 0 {
		t.Errorf("default/kubernetes: %+v", p)
	}
}
