package framework

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
)

// Undo reverses one injected fault. Every fault registers its Undo with
// t.Cleanup as well, so a test may undo early and the cleanup is a no-op.
type Undo func()

func (tb *Testbed) fault(t testing.TB, undo func(ctx context.Context) error) Undo {
	var once sync.Once
	u := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := undo(ctx); err != nil {
				t.Errorf("undo fault: %v", err)
			}
		})
	}
	t.Cleanup(u)
	return u
}

func (tb *Testbed) ctl(t testing.TB, args ...string) {
	t.Helper()
	if _, err := tb.Ctl(Context(t, 2*time.Minute), args...); err != nil {
		t.Fatalf("%v", err)
	}
}

// StopKubeProxy stops kube-proxy on a node; its rules stay behind and go stale.
func (tb *Testbed) StopKubeProxy(t testing.TB, node string) Undo {
	t.Helper()
	tb.ctl(t, "proxy-stop", node)
	return tb.fault(t, func(ctx context.Context) error {
		_, err := tb.Ctl(ctx, "proxy-start", node)
		return err
	})
}

// StopPolicyEnforcer stops kube-router's policy controller on a node and
// removes what it programmed there: the node no longer enforces
// NetworkPolicies. Undo starts it again.
func (tb *Testbed) StopPolicyEnforcer(t testing.TB, node string) Undo {
	t.Helper()
	tb.ctl(t, "netpol-stop", node)
	return tb.fault(t, func(ctx context.Context) error {
		_, err := tb.Ctl(ctx, "netpol-start", node)
		return err
	})
}

// RestartKubeProxy stops and starts kube-proxy on a node (a full resync).
func (tb *Testbed) RestartKubeProxy(t testing.TB, node string) {
	t.Helper()
	tb.ctl(t, "proxy-stop", node)
	tb.ctl(t, "proxy-start", node)
}

// DeleteServiceRules removes one Service port's capture rule on a node
// (iptables: its nat KUBE-SERVICES jump; nftables: its service-ips element).
// A running kube-proxy restores it on its next sync: stop kube-proxy first when
// the fault must last. Undo restarts kube-proxy if it runs (a full resync).
func (tb *Testbed) DeleteServiceRules(t testing.TB, node, clusterIP string, port int32, proto string) Undo {
	t.Helper()
	tb.ctl(t, "svc-rules-delete", node, clusterIP, fmt.Sprint(port), strings.ToLower(proto))
	return tb.fault(t, func(ctx context.Context) error {
		if tb.KubeProxyRunning(node) {
			if _, err := tb.Ctl(ctx, "proxy-stop", node); err != nil {
				return err
			}
			_, err := tb.Ctl(ctx, "proxy-start", node)
			return err
		}
		return nil
	})
}

// KubeProxyRunning reports whether the node's kube-proxy process is alive.
func (tb *Testbed) KubeProxyRunning(node string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := tb.ExecInNode(ctx, node, tb.EchoClient, "get", "http://127.0.0.1:10249/metrics")
	return err == nil
}

// WriteLegacyLeftovers writes kube-proxy-looking rules with iptables-legacy on
// a node whose kube-proxy uses the nft backend (or nftables mode).
func (tb *Testbed) WriteLegacyLeftovers(t testing.TB, node string) Undo {
	t.Helper()
	tb.ctl(t, "legacy-leftovers", node)
	return tb.fault(t, func(ctx context.Context) error {
		_, err := tb.Ctl(ctx, "legacy-clean", node)
		return err
	})
}

// SetIPForward sets the testbed primary family's forwarding (net.ipv4.ip_forward,
// or net.ipv6.conf.all.forwarding on an IPv6-primary testbed) in a node's
// namespace; undo restores the old value.
func (tb *Testbed) SetIPForward(t testing.TB, node string, on bool) Undo {
	t.Helper()
	// The primary family's forwarding: what Pods' primary addresses, and
	// the other node's Pod CIDR route, depend on.
	family, file := "ipv4", "/proc/sys/net/ipv4/ip_forward"
	if len(tb.IPFamilies) > 0 && tb.IPFamilies[0] == "ipv6" {
		family, file = "ipv6", "/proc/sys/net/ipv6/conf/all/forwarding"
	}
	old, err := tb.ExecInNode(Context(t, 10*time.Second), node, "cat", file)
	if err != nil {
		t.Fatal(err)
	}
	v := "0"
	if on {
		v = "1"
	}
	tb.ctl(t, "ip-forward", node, v, family)
	return tb.fault(t, func(ctx context.Context) error {
		_, err := tb.Ctl(ctx, "ip-forward", node, strings.TrimSpace(old), family)
		return err
	})
}

// DeleteRouteToNode deletes node's route to the other node's Pod CIDR.
func (tb *Testbed) DeleteRouteToNode(t testing.TB, node, otherNode string) Undo {
	t.Helper()
	cidr := tb.Node(t, otherNode).PodCIDR
	tb.ctl(t, "route-del", node, cidr)
	return tb.fault(t, func(ctx context.Context) error {
		_, err := tb.Ctl(ctx, "route-add", node, cidr)
		return err
	})
}

// echoHTTP sends a request to an echo Pod's HTTP port from a node's namespace.
func (tb *Testbed) echoHTTP(ctx context.Context, node, method, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := HTTPClientInNode(node).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		return string(b), fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	return string(b), nil
}

// SetEchoReady flips an echo Pod's readiness endpoint (the kubelet's probe then
// marks the Pod and its endpoint ready or not). Undo makes it ready again.
func (tb *Testbed) SetEchoReady(t testing.TB, ns, pod string, ready bool) Undo {
	t.Helper()
	set := func(ctx context.Context, v bool) error {
		p, err := tb.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		if err != nil {
			return err
		}
		url := fmt.Sprintf("http://%s/ready?v=%t", net.JoinHostPort(p.Status.PodIP, fmt.Sprint(EchoHTTPPort)), v)
		_, err = tb.echoHTTP(ctx, p.Spec.NodeName, http.MethodPost, url)
		return err
	}
	if err := set(Context(t, 20*time.Second), ready); err != nil {
		t.Fatalf("set readiness of %s/%s: %v", ns, pod, err)
	}
	return tb.fault(t, func(ctx context.Context) error {
		err := set(ctx, true)
		if err != nil && strings.Contains(err.Error(), "not found") {
			return nil // the Pod is gone with its namespace
		}
		return err
	})
}

// ScaleCoreDNS scales kube-system/coredns; undo restores the replica count and
// waits until CoreDNS is available again.
func (tb *Testbed) ScaleCoreDNS(t testing.TB, replicas int32) Undo {
	t.Helper()
	ctx := Context(t, time.Minute)
	deps := tb.Client.AppsV1().Deployments("kube-system")
	// The deployment controller updates the object all the time: every
	// read-modify-write of the scale retries on conflict.
	scale := func(ctx context.Context, to int32) (from int32, err error) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			sc, err := deps.GetScale(ctx, "coredns", metav1.GetOptions{})
			if err != nil {
				return err
			}
			from = sc.Spec.Replicas
			sc.Spec.Replicas = to
			_, err = deps.UpdateScale(ctx, "coredns", sc, metav1.UpdateOptions{})
			return err
		})
		return from, err
	}
	old, err := scale(ctx, replicas)
	if err != nil {
		t.Fatal(err)
	}
	// Wait for the scale to be done and seen: the Pods gone or ready, and
	// kube-dns's EndpointSlices listing that many ready endpoints. A trace
	// in between sees the slices lag kube-proxy (DNS007 still counting a
	// terminating Pod while the datapath already rejects), which is not
	// what the scenarios that scale CoreDNS test.
	if err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 50*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := deps.Get(ctx, "coredns", metav1.GetOptions{})
		if err != nil || d.Status.Replicas != replicas || d.Status.ReadyReplicas != replicas {
			return false, nil
		}
		sl, err := tb.Client.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=kube-dns"})
		if err != nil {
			return false, nil
		}
		var ready int32
		for _, s := range sl.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					ready++
				}
			}
		}
		return ready == replicas, nil
	}); err != nil {
		t.Fatalf("CoreDNS scaled to %d, not seen in its Deployment and kube-dns's EndpointSlices: %v", replicas, err)
	}
	return tb.fault(t, func(ctx context.Context) error {
		if _, err := scale(ctx, old); err != nil {
			return err
		}
		return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			d, err := deps.Get(ctx, "coredns", metav1.GetOptions{})
			return err == nil && d.Status.ReadyReplicas == old && d.Status.UpdatedReplicas == old, nil
		})
	})
}

// HoldConnections opens n TCP connections from a node's namespace to addr
// (host:port; a backend Pod or a ClusterIP) and keeps them open until undo,
// for conntrack and "long-lived connections to one backend" scenarios. The echo
// TCP port answers, so the connections are checked end to end.
func (tb *Testbed) HoldConnections(t testing.TB, node, addr string, n int) ([]net.Conn, Undo) {
	t.Helper()
	var conns []net.Conn
	closeAll := func(context.Context) error {
		for _, c := range conns {
			_ = c.Close()
		}
		return nil
	}
	for i := 0; i < n; i++ {
		c, err := DialInNode(Context(t, 10*time.Second), node, "tcp", addr)
		if err != nil {
			_ = closeAll(context.Background())
			t.Fatalf("connection %d to %s from %s: %v", i, addr, node, err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		msg := fmt.Sprintf("hold-%d\n", i)
		buf := make([]byte, len(msg))
		_, err = c.Write([]byte(msg))
		if err == nil {
			_, err = io.ReadFull(c, buf)
		}
		_ = c.SetDeadline(time.Time{})
		conns = append(conns, c)
		if err != nil || string(buf) != msg {
			_ = closeAll(context.Background())
			t.Fatalf("connection %d to %s from %s does not echo: %v", i, addr, node, err)
		}
	}
	return conns, tb.fault(t, closeAll)
}

// DeleteVTEPEntry deletes, on node, flannel.1's forwarding-database entry
// ("fdb") or neighbour entry ("neigh") for other's tunnel endpoint; flannel
// programs them only when a Node lease changes, so the fault lasts.
func (tb *Testbed) DeleteVTEPEntry(t testing.TB, kind, node, other string) Undo {
	t.Helper()
	return tb.ctlFault(t, []string{kind + "-del", node, other}, []string{kind + "-add", node, other})
}

// ctlFault runs the ctl.sh command do and registers the command undo as its Undo.
func (tb *Testbed) ctlFault(t testing.TB, do, undo []string) Undo {
	t.Helper()
	tb.ctl(t, do...)
	return tb.fault(t, func(ctx context.Context) error {
		_, err := tb.Ctl(ctx, undo...)
		return err
	})
}

// BlockEncap drops UDP to the VXLAN port arriving at node (a firewall
// between the nodes, seen from the other side).
func (tb *Testbed) BlockEncap(t testing.TB, node string) Undo {
	t.Helper()
	return tb.ctlFault(t, []string{"encap-block", node}, []string{"encap-unblock", node})
}

// SetPodVethMTU sets the MTU of the node side of a Pod's veth (its port on
// the bridge cni0) and returns the device's name. Frames larger than a
// device's MTU are dropped where they enter it, without an ICMP error; the
// Pod's own segmentation offload is turned off, since a veth passes the
// Pod's TCP super-packets whatever their size where a real link would not.
func (tb *Testbed) SetPodVethMTU(t testing.TB, node, podIP string, mtu int) (string, Undo) {
	t.Helper()
	tb.ctlFault(t, []string{"pod-offload", node, podIP, "off"}, []string{"pod-offload", node, podIP, "on"})
	out, err := tb.Ctl(Context(t, time.Minute), "pod-veth", node, podIP)
	if err != nil {
		t.Fatalf("%v", err)
	}
	dev := strings.TrimSpace(out)
	link, err := tb.ExecInNode(Context(t, time.Minute), node, "ip", "-o", "link", "show", "dev", dev)
	f := strings.Fields(link)
	i := slices.Index(f, "mtu")
	if err != nil || i < 0 || i+1 >= len(f) {
		t.Fatalf("MTU of %s on %s: %v %q", dev, node, err, link)
	}
	old := f[i+1]
	return dev, tb.ctlFault(t, []string{"link-mtu", node, dev, fmt.Sprint(mtu)}, []string{"link-mtu", node, dev, old})
}

// IPVSNodeLabel marks the Node the testbed's IPVS node (user-mode Linux)
// registers with its own kubelet.
const IPVSNodeLabel = "svctrace.dev/ipvs-node"

// WaitIPVSProgrammed waits until kube-proxy on the testbed's IPVS node holds
// a virtual server for addr (ClusterIP:port, TCP) with at least realServers
// real servers. Its kube-proxy runs in user-mode Linux and syncs a new
// Service seconds after the others; an --all-nodes trace taken before
// rightly reports it unprogrammed there. Without a registered IPVS node
// (SVTB_IPVS_NODE=0 or no kubelet) there is nothing to wait for.
func (tb *Testbed) WaitIPVSProgrammed(t testing.TB, addr string, realServers int) {
	t.Helper()
	ctx := Context(t, 2*time.Minute)
	nodes, err := tb.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: IPVSNodeLabel})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) == 0 {
		return
	}
	script := filepath.Join(tb.RepoRoot, "test", "testbed", "ipvs-node.sh")
	var last string
	err = Eventually(ctx, 90*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		out, err := Run(ctx, "bash", script, "exec", "ipvsadm", "-Ln", "-t", addr)
		last = out
		if err != nil {
			return err
		}
		if n := strings.Count(out, "Masq"); n < realServers {
			return fmt.Errorf("%d of %d real servers", n, realServers)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("kube-proxy (ipvs) on %s did not program %s: %v\n%s", nodes.Items[0].Name, addr, err, last)
	}
}
