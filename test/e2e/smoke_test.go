// Smoke tests of the testbed itself: if these fail, no other end-to-end result
// means anything.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
)

func TestNodesReady(t *testing.T) {
	tb := framework.Setup(t)
	nodes, err := tb.Client.CoreV1().Nodes().List(framework.Context(t, 30*time.Second), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The IPVS node (user-mode Linux) registers itself beside the kubelet
	// nodes; the IPVS e2e checks it.
	kubeletNodes := 0
	for _, n := range nodes.Items {
		if n.Labels["svctrace.dev/ipvs-node"] == "" {
			kubeletNodes++
		}
	}
	if kubeletNodes != len(tb.Nodes) || len(tb.Nodes) < 2 {
		t.Fatalf("want %d nodes (at least 2) besides the IPVS node, have %d", len(tb.Nodes), kubeletNodes)
	}
	for _, want := range tb.Nodes {
		var got *corev1.Node
		for i := range nodes.Items {
			if nodes.Items[i].Name == want.Name {
				got = &nodes.Items[i]
			}
		}
		if got == nil {
			t.Errorf("node %s missing", want.Name)
			continue
		}
		ready := false
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
		if !ready {
			t.Errorf("node %s not Ready", want.Name)
		}
		if z := got.Labels["topology.kubernetes.io/zone"]; z != want.Zone {
			t.Errorf("node %s zone label %q, want %q", want.Name, z, want.Zone)
		}
		// The kubelet lists one InternalIP a family, its --node-ip order:
		// the primary family's first.
		var internal []string
		for _, a := range got.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				internal = append(internal, a.Address)
			}
		}
		if len(internal) == 0 || internal[0] != want.IP || !slices.Equal(internal, want.IPs) {
			t.Errorf("node %s InternalIPs %q, want %q (primary %s first)", want.Name, internal, want.IPs, want.IP)
		}
		if v := got.Status.NodeInfo.KubeletVersion; v != "v1.37.2" {
			t.Errorf("node %s kubelet version %q, want v1.37.2", want.Name, v)
		}
	}
	modes := map[string]bool{}
	for _, n := range tb.Nodes {
		modes[n.ProxyMode] = true
	}
	t.Logf("nodes: %+v", tb.Nodes)
	if len(tb.Nodes) >= 2 && !modes["iptables"] && !modes["nftables"] {
		t.Errorf("unexpected proxy modes %v", modes)
	}
}

// echoAnswer is what the echo app returns on "/".
type echoAnswer struct {
	Hostname string `json:"hostname"`
	PodIP    string `json:"podIP"`
	NodeName string `json:"nodeName"`
}

func getEcho(ctx context.Context, tb *framework.Testbed, node, url string) (echoAnswer, error) {
	var a echoAnswer
	out, err := tb.ExecInNode(ctx, node, tb.EchoClient, "get", url)
	if err != nil {
		return a, err
	}
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		return a, fmt.Errorf("decode %q: %w", out, err)
	}
	return a, nil
}

// twoNodeEcho deploys one echo replica per node behind a ClusterIP Service.
func twoNodeEcho(t *testing.T, tb *framework.Testbed) (string, *corev1.Service, []corev1.Pod) {
	ns := tb.Namespace(t)
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "echo", Replicas: int32(len(tb.Nodes)), Nodes: tb.NodeNames()})
	svc := tb.CreateService(t, ns, framework.NewService("echo", "echo", framework.WithNamedTargetPorts()))
	pods := tb.WaitPodsReady(t, ns, map[string]string{"app": "echo"}, len(tb.Nodes))
	tb.WaitReadyEndpoints(t, ns, "echo", len(tb.Nodes))
	seen := map[string]bool{}
	for _, p := range pods {
		seen[p.Spec.NodeName] = true
	}
	if len(seen) != len(tb.Nodes) {
		t.Fatalf("echo pods not spread over all nodes: %v", seen)
	}
	return ns, svc, pods
}

func TestClusterIPFromNodesAndPod(t *testing.T) {
	tb := framework.Setup(t)
	ns, svc, pods := twoNodeEcho(t, tb)
	ctx := framework.Context(t, 3*time.Minute)
	url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
	for _, n := range tb.Nodes {
		// kube-proxy programs the new Service within a sync; poll until both backends answered.
		backends := map[string]bool{}
		err := framework.Eventually(ctx, 60*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
			a, err := getEcho(ctx, tb, n.Name, url)
			if err != nil {
				return err
			}
			backends[a.NodeName] = true
			if len(backends) < len(tb.Nodes) {
				return fmt.Errorf("reached backends on %v only", backends)
			}
			return nil
		})
		if err != nil {
			t.Errorf("ClusterIP %s from node %s (%s mode): %v", url, n.Name, n.ProxyMode, err)
		}
		// TCP and UDP echo through the same ClusterIP.
		if out, err := tb.ExecInNode(ctx, n.Name, tb.EchoClient, "tcp", net.JoinHostPort(svc.Spec.ClusterIP, "9000"), "hello-"+n.Name); err != nil || !strings.Contains(out, "hello-"+n.Name) {
			t.Errorf("TCP echo via ClusterIP from %s: %q %v", n.Name, out, err)
		}
		if out, err := tb.ExecInNode(ctx, n.Name, tb.EchoClient, "udp", net.JoinHostPort(svc.Spec.ClusterIP, "9001"), "udp-"+n.Name); err != nil || !strings.Contains(out, "udp-"+n.Name) {
			t.Errorf("UDP echo via ClusterIP from %s: %q %v", n.Name, out, err)
		}
	}
	// From inside a Pod.
	err := framework.Eventually(ctx, 30*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		out, err := tb.ExecInPod(ctx, ns, pods[0].Name, "echo", "/echo", "get", url)
		if err != nil {
			return err
		}
		if !strings.Contains(out, `"hostname"`) {
			return fmt.Errorf("unexpected answer %q", out)
		}
		return nil
	})
	if err != nil {
		t.Errorf("ClusterIP from pod %s: %v", pods[0].Name, err)
	}
}

func TestCrossNodePodTraffic(t *testing.T) {
	tb := framework.Setup(t)
	ns, _, pods := twoNodeEcho(t, tb)
	ctx := framework.Context(t, 2*time.Minute)
	for _, from := range pods {
		for _, to := range pods {
			if from.Spec.NodeName == to.Spec.NodeName {
				continue
			}
			url := fmt.Sprintf("http://%s/", net.JoinHostPort(to.Status.PodIP, "8080"))
			err := framework.Eventually(ctx, 20*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
				out, err := tb.ExecInPod(ctx, ns, from.Name, "echo", "/echo", "get", url)
				if err != nil {
					return err
				}
				var a echoAnswer
				if err := json.Unmarshal([]byte(out), &a); err != nil {
					return err
				}
				if a.NodeName != to.Spec.NodeName {
					return fmt.Errorf("answer from node %q, want %q", a.NodeName, to.Spec.NodeName)
				}
				return nil
			})
			if err != nil {
				t.Errorf("pod %s (%s) -> pod %s (%s): %v", from.Name, from.Spec.NodeName, to.Name, to.Spec.NodeName, err)
			}
		}
		// And node -> pod on the other node (routes between Pod CIDRs).
		for _, n := range tb.Nodes {
			if n.Name == from.Spec.NodeName {
				continue
			}
			if _, err := getEcho(ctx, tb, n.Name, "http://"+net.JoinHostPort(from.Status.PodIP, "8080")+"/"); err != nil {
				t.Errorf("node %s -> pod %s on %s: %v", n.Name, from.Name, from.Spec.NodeName, err)
			}
		}
	}
}

func TestDNS(t *testing.T) {
	tb := framework.Setup(t)
	ns, svc, pods := twoNodeEcho(t, tb)
	ctx := framework.Context(t, 2*time.Minute)
	fqdn := fmt.Sprintf("echo.%s.svc.cluster.local", ns)
	// From inside a Pod, through its resolv.conf (cluster DNS + search path).
	for _, name := range []string{fqdn, "echo"} {
		err := framework.Eventually(ctx, 30*time.Second, time.Second, func(ctx context.Context) error {
			out, err := tb.ExecInPod(ctx, ns, pods[0].Name, "echo", "/echo", "dns", name)
			if err != nil {
				return err
			}
			if strings.TrimSpace(out) != svc.Spec.ClusterIP {
				return fmt.Errorf("resolved %q, want %s", strings.TrimSpace(out), svc.Spec.ClusterIP)
			}
			return nil
		})
		if err != nil {
			t.Errorf("DNS %s from pod: %v", name, err)
		}
	}
	// From every node, to kube-dns's ClusterIP, over UDP and TCP, A and SRV (named port).
	for _, n := range tb.Nodes {
		for _, proto := range []string{"udp", "tcp"} {
			err := framework.Eventually(ctx, 30*time.Second, time.Second, func(ctx context.Context) error {
				conn, err := framework.DialInNode(ctx, n.Name, proto, net.JoinHostPort(tb.KubeDNSIP, "53"))
				if err != nil {
					return err
				}
				c := &dns.Client{Net: proto, Timeout: 3 * time.Second}
				dc := &dns.Conn{Conn: conn}
				defer dc.Close()
				// The Service's ClusterIP is of the cluster's primary
				// family: an A record on IPv4, AAAA on IPv6.
				qtype := dns.TypeA
				if strings.Contains(svc.Spec.ClusterIP, ":") {
					qtype = dns.TypeAAAA
				}
				m := new(dns.Msg).SetQuestion(fqdn+".", qtype)
				r, _, err := c.ExchangeWithConnContext(ctx, m, dc)
				if err != nil {
					return err
				}
				if len(r.Answer) != 1 || answerIP(r.Answer[0]) != svc.Spec.ClusterIP {
					return fmt.Errorf("%s answer %v", dns.TypeToString[qtype], r.Answer)
				}
				m = new(dns.Msg).SetQuestion("_http._tcp."+fqdn+".", dns.TypeSRV)
				r, _, err = c.ExchangeWithConnContext(ctx, m, dc)
				if err != nil {
					return err
				}
				if len(r.Answer) != 1 || r.Answer[0].(*dns.SRV).Port != 80 {
					return fmt.Errorf("SRV answer %v", r.Answer)
				}
				return nil
			})
			if err != nil {
				t.Errorf("DNS via %s from node %s over %s: %v", tb.KubeDNSIP, n.Name, proto, err)
			}
		}
	}
}

// answerIP is the address of an A or AAAA record, "" for another type.
func answerIP(rr dns.RR) string {
	switch a := rr.(type) {
	case *dns.A:
		return a.A.String()
	case *dns.AAAA:
		return a.AAAA.String()
	}
	return ""
}
