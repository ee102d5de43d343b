package trace_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// The scenarios of this file run on the real flannel overlay: flanneld
// v0.28.10 with the VXLAN backend between the two kubelet nodes
// (SVTB_CNI=flannel, the testbed's default). The IPVS node stays on static
// routes, so the route layer is judged on a tunnel and on plain routes.

// flannelTestbed skips unless the kubelet nodes talk over flannel.
func flannelTestbed(t *testing.T) *framework.Testbed {
	t.Helper()
	tb := framework.Setup(t)
	if tb.CNI != "flannel" {
		t.Skipf("the testbed runs the %q Pod network, not flannel (SVTB_CNI=flannel make testbed-up)", tb.CNI)
	}
	if len(tb.Nodes) < 2 {
		t.Skip("the overlay needs two kubelet nodes")
	}
	return tb
}

// requireOverlayHealthy asserts that node's route layer judged flannel.1 on
// a real tunnel: the collector's own encapsulated probe was answered by every
// other flannel node, and no overlay check failed.
func requireOverlayHealthy(t *testing.T, r result, node string, peers ...string) {
	t.Helper()
	c := requireCheck(t, r, report.LayerRoute, report.CodeRTEncapAnswered, node)
	if !strings.Contains(c.Message, "flannel.1 (vxlan VNI 1)") || !strings.Contains(c.Message, "UDP 8472") {
		t.Errorf("%s on %s: %s", c.Code, node, c.Message)
	}
	for _, p := range peers {
		if !strings.Contains(c.Message, p+" (") {
			t.Errorf("%s on %s does not name the peer %s: %s", c.Code, node, p, c.Message)
		}
	}
	for _, code := range []string{report.CodeRTOverlayVTEP, report.CodeRTOverlayMTU, report.CodeRTOverlayDown, report.CodeRTPMTUBlackhole,
		report.CodeRTEncapRefused, report.CodeRTEncapSilent} {
		if c := check(r.Trace, report.LayerRoute, code, node); c != nil {
			t.Errorf("healthy flannel overlay: %s on %s: %s", code, node, c.Message)
		}
	}
}

// TestFlannelOverlayHealthy: a Service with one endpoint on each flannel
// node passes, by default and with --all-nodes, with the route layer judged
// on flannel.1 (FDB, neighbour, MTU, the encapsulation probe) and the
// per-node share table in the report.
func TestFlannelOverlayHealthy(t *testing.T) {
	tb := flannelTestbed(t)
	n1, n2 := tb.Nodes[0].Name, tb.Nodes[1].Name
	ns, svc := deployWeb(t, tb, 2, []string{n1, n2})
	waitAllNodes(t, tb, svc, 2)
	for _, extra := range [][]string{nil, {"--all-nodes"}} {
		t.Run(strings.Join(append([]string{"default"}, extra...), " "), func(t *testing.T) {
			r := svctrace(t, tb, append([]string{"web", "-n", ns}, extra...)...)
			requireNoFail(t, r)
			inspected := 0
			for _, n := range []string{n1, n2} {
				if check(r.Trace, report.LayerRoute, report.CodeRTHealthy, n) == nil {
					continue
				}
				inspected++
				other := n2
				if n == n2 {
					other = n1
				}
				requireOverlayHealthy(t, r, n, other)
			}
			if inspected == 0 {
				t.Fatalf("no flannel node inspected: %s", summarize(r.Trace, report.LayerRoute))
			}
			if extra != nil && inspected != 2 {
				t.Errorf("--all-nodes inspected %d of the flannel nodes", inspected)
			}
			if r.Trace.Shares == nil || len(r.Trace.Shares.Ports) == 0 || len(r.Trace.Shares.Ports[0].Nodes) == 0 {
				t.Errorf("no per-node share table: %+v", r.Trace.Shares)
			}
		})
	}
}

// TestFlannelVTEPEntryMissing deletes, on node1, flannel.1's forwarding
// database entry and then its neighbour entry for node2's tunnel endpoint
// (flannel programs them only when a lease changes): the route layer names
// the missing entry on node1 (RT014), and Pods on node2 are not reached
// from node1.
func TestFlannelVTEPEntryMissing(t *testing.T) {
	tb := flannelTestbed(t)
	n1, n2 := tb.Nodes[0].Name, tb.Nodes[1].Name
	ns, _ := deployWeb(t, tb, 1, []string{n2})
	for _, tt := range []struct{ kind, what string }{{"fdb", "forwarding-database entry"}, {"neigh", "neighbour entry"}} {
		t.Run(tt.kind, func(t *testing.T) {
			undo := tb.DeleteVTEPEntry(t, tt.kind, n1, n2)
			defer undo()
			r := svctrace(t, tb, "web", "-n", ns, "--node", n1)
			c := requireCheck(t, r, report.LayerRoute, report.CodeRTOverlayVTEP, n1)
			if c.Status != report.StatusFail || !strings.Contains(c.Message, "flannel.1 (vxlan) has no "+tt.what) || !strings.Contains(c.Message, n2+" (") {
				t.Errorf("%s: %s %s", c.Code, c.Status, c.Message)
			}
			if check(r.Trace, report.LayerRoute, report.CodeRTHealthy, n1) != nil {
				t.Errorf("route layer healthy on %s beside %s", n1, c.Code)
			}
			if r.Exit == 0 {
				t.Errorf("exit 0 with %s", c.Code)
			}
		})
	}
}

// TestFlannelEncapBlocked drops UDP 8472 arriving at node2 (a firewall
// between the nodes): node1's encapsulated probe to node2 goes unanswered
// (RT024, naming node2), and from node2 the way back to node1 is broken
// the same way.
func TestFlannelEncapBlocked(t *testing.T) {
	tb := flannelTestbed(t)
	n1, n2 := tb.Nodes[0].Name, tb.Nodes[1].Name
	ns, svc := deployWeb(t, tb, 2, []string{n1, n2})
	waitAllNodes(t, tb, svc, 2)
	tb.BlockEncap(t, n2)
	r := svctrace(t, tb, "web", "-n", ns, "--all-nodes")
	for _, n := range []string{n1, n2} {
		other := map[string]string{n1: n2, n2: n1}[n]
		c := requireCheck(t, r, report.LayerRoute, report.CodeRTEncapSilent, n)
		if c.Status != report.StatusWarn || !strings.Contains(c.Message, "no answer from "+other+" (") || !strings.Contains(c.Message, "UDP 8472") {
			t.Errorf("%s on %s: %s %s", c.Code, n, c.Status, c.Message)
		}
		if check(r.Trace, report.LayerRoute, report.CodeRTEncapAnswered, n) != nil {
			t.Errorf("%s answered on %s with UDP 8472 dropped at %s", report.CodeRTEncapAnswered, n, n2)
		}
	}
	// The tunnel is really down: the endpoint on node2 is not reached from node1.
	if r.Exit == 0 {
		t.Errorf("exit 0 with the tunnel down")
	}
}

// TestFlannelPodVethMTUBlackhole lowers the MTU of the node side of the
// endpoint Pod's veth on node2 below flannel's 1450 (the Pod's eth0 keeps
// 1450, its segmentation offload off so that its packets are wire-sized):
// the endpoint's packets larger than 1200 bytes are dropped where they
// enter the device, with no ICMP error. The TCP handshake and small answers
// work, large answers hang. The way to the endpoint is no blackhole: node2
// answers the path MTU probe from node1 with "fragmentation needed" (cni0
// follows its smallest port down to 1200), which is a lowered path MTU
// inside the Pod network: RT025 on node1, naming the endpoint and 1200.
func TestFlannelPodVethMTUBlackhole(t *testing.T) {
	tb := flannelTestbed(t)
	n1, n2 := tb.Nodes[0].Name, tb.Nodes[1].Name
	ns, _ := deployWeb(t, tb, 1, []string{n2})
	pods := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)
	ip := pods[0].Status.PodIP
	dev, _ := tb.SetPodVethMTU(t, n2, ip, 1200)
	client := framework.HTTPClientInNode(n1)
	get := func(path string) (int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("http://%s:8080%s", ip, path), nil)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		return io.Copy(io.Discard, resp.Body)
	}
	if _, err := get("/bytes?n=200"); err != nil {
		t.Fatalf("a small answer from %s through %s (MTU 1200) failed: %v", ip, dev, err)
	}
	if n, err := get("/bytes?n=65536"); err == nil {
		t.Fatalf("a 64 KiB answer came through %s at MTU 1200 (%d bytes): no blackhole to judge", dev, n)
	}
	r := svctrace(t, tb, "web", "-n", ns, "--node", n1)
	c := requireCheck(t, r, report.LayerRoute, report.CodeRTPathMTULowered, n1)
	if c.Status != report.StatusWarn || !strings.Contains(c.Message, ip) || !strings.Contains(c.Message, "MTU 1450 via flannel.1") ||
		!strings.Contains(c.Message, "MTU 1200") {
		t.Errorf("%s on %s: %s %s", c.Code, n1, c.Status, c.Message)
	}
	if c := check(r.Trace, report.LayerRoute, report.CodeRTHealthy, n1); c != nil {
		t.Errorf("route layer healthy on %s beside %s", n1, report.CodeRTPathMTULowered)
	}
	// The overlay itself is healthy: the tunnel answers, its entries are there.
	requireOverlayHealthy(t, r, n1, n2)
}
