// Tests of the fault-injection harness: each fault must really break what it
// claims to break, and its undo must really repair it. Later svctrace e2e tests
// rely on both.
package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
)

const (
	failWindow = 4 * time.Second // a broken path must keep failing this long
	fixWindow  = 60 * time.Second
)

// mustFail checks that fn keeps failing for failWindow.
func mustFail(t *testing.T, what string, fn func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(failWindow)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil {
			t.Fatalf("%s: still works, the fault had no effect", what)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func mustWork(t *testing.T, what string, fn func(context.Context) error) {
	t.Helper()
	if err := framework.Eventually(framework.Context(t, 2*fixWindow), fixWindow, 300*time.Millisecond, fn); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func TestFaultKubeProxyStoppedAndServiceRulesDeleted(t *testing.T) {
	tb := framework.Setup(t)
	ns, svc, _ := twoNodeEcho(t, tb)
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	for _, n := range tb.Nodes {
		t.Run(n.Name+"-"+n.ProxyMode, func(t *testing.T) {
			get := func(ctx context.Context) error { _, err := getEcho(ctx, tb, n.Name, url); return err }
			mustWork(t, "before", get)
			undoStop := tb.StopKubeProxy(t, n.Name)
			mustWork(t, "stale rules still serve an unchanged Service", get)
			undoRules := tb.DeleteServiceRules(t, n.Name, svc.Spec.ClusterIP, 80, "tcp")
			mustFail(t, "ClusterIP without its capture rule", get)
			// A Service created while kube-proxy is down gets no rules on this node.
			late := tb.CreateService(t, ns, framework.NewService("late-"+n.Name, "echo"))
			tb.WaitReadyEndpoints(t, ns, late.Name, len(tb.Nodes))
			lateGet := func(ctx context.Context) error {
				_, err := getEcho(ctx, tb, n.Name, "http://"+net.JoinHostPort(late.Spec.ClusterIP, "80")+"/")
				return err
			}
			mustFail(t, "Service created while kube-proxy is stopped", lateGet)
			undoRules()
			undoStop()
			mustWork(t, "after kube-proxy restart", get)
			mustWork(t, "late Service after kube-proxy restart", lateGet)
		})
	}
}

func TestFaultRoutesAndForwarding(t *testing.T) {
	tb := framework.Setup(t)
	_, _, pods := twoNodeEcho(t, tb)
	n1, n2 := tb.Nodes[0].Name, tb.Nodes[1].Name
	var podOn2 string
	for _, p := range pods {
		if p.Spec.NodeName == n2 {
			podOn2 = p.Status.PodIP
		}
	}
	get := func(ctx context.Context) error {
		_, err := getEcho(ctx, tb, n1, "http://"+net.JoinHostPort(podOn2, "8080")+"/")
		return err
	}
	mustWork(t, "node1 -> pod on node2", get)

	undo := tb.DeleteRouteToNode(t, n1, n2)
	mustFail(t, "without node1's route to node2's Pod CIDR", get)
	undo()
	mustWork(t, "route restored", get)

	undo = tb.SetIPForward(t, n2, false)
	mustFail(t, "with ip_forward=0 on node2", get)
	// node2 reaches its own Pod without forwarding.
	mustWork(t, "node2 -> own pod with ip_forward=0", func(ctx context.Context) error {
		_, err := getEcho(ctx, tb, n2, "http://"+net.JoinHostPort(podOn2, "8080")+"/")
		return err
	})
	undo()
	mustWork(t, "ip_forward restored", get)
}

func TestFaultReadinessFlip(t *testing.T) {
	tb := framework.Setup(t)
	ns, _, pods := twoNodeEcho(t, tb)
	undo := tb.SetEchoReady(t, ns, pods[0].Name, false)
	tb.WaitReadyEndpoints(t, ns, "echo", len(pods)-1)
	undo()
	tb.WaitReadyEndpoints(t, ns, "echo", len(pods))
}

func TestFaultWrongPortAndLoopbackOnly(t *testing.T) {
	tb := framework.Setup(t)
	ns := tb.Namespace(t)
	node := tb.Nodes[0].Name
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "wrongport", Nodes: []string{node}, ListenHTTPPort: 8081})
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "loopback", Nodes: []string{node}, Bind: "127.0.0.1"})
	for _, app := range []string{"wrongport", "loopback"} {
		pods := tb.WaitPodsReady(t, ns, map[string]string{"app": app}, 1)
		svc := tb.CreateService(t, ns, framework.NewService(app, app))
		tb.WaitReadyEndpoints(t, ns, app, 1)
		mustFail(t, app+": direct to the declared port", func(ctx context.Context) error {
			_, err := getEcho(ctx, tb, node, "http://"+net.JoinHostPort(pods[0].Status.PodIP, "8080")+"/")
			return err
		})
		mustFail(t, app+": via ClusterIP", func(ctx context.Context) error {
			_, err := getEcho(ctx, tb, node, "http://"+net.JoinHostPort(svc.Spec.ClusterIP, "80")+"/")
			return err
		})
	}
}

func TestFaultLegacyLeftovers(t *testing.T) {
	tb := framework.Setup(t)
	n := tb.Nodes[len(tb.Nodes)-1].Name
	ctx := framework.Context(t, time.Minute)
	save := func() string {
		out, err := tb.ExecInNode(ctx, n, "iptables-legacy-save", "-t", "nat")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if strings.Contains(save(), "SVTBLEFTOVER") {
		t.Fatal("leftovers present before the fault")
	}
	undo := tb.WriteLegacyLeftovers(t, n)
	if out := save(); !strings.Contains(out, "-A KUBE-SERVICES -d 10.96.255.254/32") {
		t.Fatalf("legacy leftovers not written:\n%s", out)
	}
	undo()
	if out := save(); strings.Contains(out, "KUBE-") {
		t.Fatalf("legacy leftovers not removed:\n%s", out)
	}
}

func TestFaultCoreDNSScaledToZero(t *testing.T) {
	tb := framework.Setup(t)
	n := tb.Nodes[0].Name
	lookup := func(ctx context.Context) error {
		_, err := tb.ExecInNode(ctx, n, tb.EchoClient, "dns", "kubernetes.default.svc.cluster.local", net.JoinHostPort(tb.KubeDNSIP, "53"))
		return err
	}
	mustWork(t, "DNS before", lookup)
	undo := tb.ScaleCoreDNS(t, 0)
	mustWork(t, "DNS stops answering once CoreDNS is gone", func(ctx context.Context) error {
		if lookup(ctx) == nil {
			return fmt.Errorf("still answers")
		}
		return nil
	})
	undo()
	mustWork(t, "DNS after undo", lookup)
}

func TestHoldConnections(t *testing.T) {
	tb := framework.Setup(t)
	_, svc, _ := twoNodeEcho(t, tb)
	n := tb.Nodes[0].Name
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "9000")
	mustWork(t, "TCP echo via ClusterIP", func(ctx context.Context) error {
		_, err := tb.ExecInNode(ctx, n, tb.EchoClient, "tcp", addr)
		return err
	})
	conns, undo := tb.HoldConnections(t, n, addr, 3)
	out, err := tb.ExecInNode(framework.Context(t, 20*time.Second), n, "conntrack", "-L", "-p", "tcp", "--orig-dst", svc.Spec.ClusterIP, "--dport", "9000", "--state", "ESTABLISHED")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(out, "ESTABLISHED"); got < len(conns) {
		t.Fatalf("conntrack on %s shows %d established flows to %s, want >= %d:\n%s", n, got, addr, len(conns), out)
	}
	undo()
	if _, err := conns[0].Write([]byte("x\n")); err == nil {
		buf := make([]byte, 2)
		_ = conns[0].SetReadDeadline(time.Now().Add(time.Second))
		if _, err := conns[0].Read(buf); err == nil {
			t.Fatal("connection still open after undo")
		}
	}
}
