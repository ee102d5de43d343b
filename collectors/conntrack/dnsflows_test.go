package conntrack

import (
	"context"
	"fmt"
	"testing"

	ct "github.com/ti-mo/conntrack"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

func TestCountDNSFlows(t *testing.T) {
	answered := flow(17, "10.244.1.9:40001", "10.96.0.10:53", "10.244.0.3:53", 0)
	lost := flow(17, "10.244.1.9:40002", "10.96.0.10:53", "10.244.0.3:53", 0)
	lost.Status &^= ct.StatusSeenReply
	got := CountDNSFlows([]string{"10.96.0.10:53/UDP"}, []ct.Flow{answered, lost, answered})
	if got.Total != 3 || got.Unreplied != 1 || got.Backends["10.244.0.3:53"] != 3 {
		t.Errorf("%+v", got)
	}
}

// TestDNSFlowsInNetns sends UDP port-53 datagrams from a node namespace to
// an address nobody answers on and to a Pod that echoes, and reads them
// back through the same kernel filter the collector uses.
func TestDNSFlowsInNetns(t *testing.T) {
	netns.RequireTools(t, "nft", "socat", "nsenter")
	node := netns.NewNamed(t, "svfm-ctnode")
	pod := netns.NewNamed(t, "svfm-ctpod")
	const nodeIP, podIP, silentIP = "10.254.0.1", "10.254.0.2", "10.96.0.10"
	netns.VethPair(t, node, "veth-pod", nodeIP+"/24", pod, "eth0", podIP+"/24")
	node.MustRun(t, "ip", "route", "add", silentIP+"/32", "via", podIP)
	// A conntrack match makes the namespace track its connections.
	node.MustRun(t, "nft", "add table ip svfm; add chain ip svfm out { type filter hook output priority 0; }; add rule ip svfm out ct state new accept")
	pod.Start(t, nil, "socat", "UDP4-RECVFROM:53,bind="+podIP+",fork", "PIPE")
	for i := range 3 {
		node.MustRun(t, "sh", "-c", fmt.Sprintf("echo q | socat -T 0.2 - UDP4:%s:53,sourceport=%d", silentIP, 41000+i))
	}
	node.MustRun(t, "sh", "-c", fmt.Sprintf("echo q | socat -T 1 - UDP4:%s:53,sourceport=42000", podIP))
	req := &collectorapi.Request{ClusterDNS: []string{silentIP, podIP, "not-an-ip"}, ConntrackSampleMillis: 50}
	var obs *collectorapi.ConntrackObservation
	var err error
	netns.Do(t, node, func() {
		obs, err = (&Reader{NetNS: int(node.Handle(t))}).Read(context.Background(), req)
	})
	if err != nil {
		t.Fatal(err)
	}
	if obs.DNSFlowsError != "" {
		t.Fatal(obs.DNSFlowsError)
	}
	f := obs.DNSFlows
	if f == nil || f.Total != 4 || f.Unreplied != 3 || len(f.Destinations) != 2 {
		t.Fatalf("dns flows %+v", f)
	}
	if f.Backends[podIP+":53"] != 1 {
		t.Errorf("reply sources %v", f.Backends)
	}
	if obs.TCPBeLiberal != "0" {
		t.Errorf("nf_conntrack_tcp_be_liberal in a fresh namespace = %q", obs.TCPBeLiberal)
	}
}
