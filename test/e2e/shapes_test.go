package e2e

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
)

// dnsQuery asks kube-dns from inside a node's namespace.
func dnsQuery(ctx context.Context, tb *framework.Testbed, node, name string, qtype uint16) (*dns.Msg, error) {
	conn, err := framework.DialInNode(ctx, node, "udp", net.JoinHostPort(tb.KubeDNSIP, "53"))
	if err != nil {
		return nil, err
	}
	dc := &dns.Conn{Conn: conn}
	defer dc.Close()
	c := &dns.Client{Net: "udp", Timeout: 3 * time.Second}
	r, _, err := c.ExchangeWithConnContext(ctx, new(dns.Msg).SetQuestion(dns.Fqdn(name), qtype), dc)
	return r, err
}

// TestServiceShapes checks that every Service shape the framework builds
// behaves on the testbed as Kubernetes says it should.
func TestServiceShapes(t *testing.T) {
	tb := framework.Setup(t)
	ns, _, pods := twoNodeEcho(t, tb)
	n1, n2 := tb.Nodes[0], tb.Nodes[1]
	ctx := framework.Context(t, 3*time.Minute)
	var podIPs []string
	for _, p := range pods {
		podIPs = append(podIPs, p.Status.PodIP)
	}
	sort.Strings(podIPs)

	t.Run("NodePort-ETP-Local", func(t *testing.T) {
		tb.DeployEcho(t, ns, framework.EchoOptions{Name: "local", Nodes: []string{n1.Name}})
		tb.WaitPodsReady(t, ns, map[string]string{"app": "local"}, 1)
		svc := tb.CreateService(t, ns, framework.NewService("local", "local", framework.NodePortLocal()))
		tb.WaitReadyEndpoints(t, ns, "local", 1)
		np := svc.Spec.Ports[0].NodePort
		mustWork(t, "NodePort on the node with the endpoint", func(ctx context.Context) error {
			_, err := getEcho(ctx, tb, n2.Name, "http://"+net.JoinHostPort(n1.IP, strconv.Itoa(int(np)))+"/")
			return err
		})
		mustFail(t, "NodePort with ETP=Local on a node without endpoint", func(ctx context.Context) error {
			_, err := getEcho(ctx, tb, n1.Name, "http://"+net.JoinHostPort(n2.IP, strconv.Itoa(int(np)))+"/")
			return err
		})
	})

	// The Pods' primary addresses, and the ClusterIPs, are of the testbed's
	// primary family: A records on IPv4, AAAA on IPv6.
	qtype, rtype := dns.TypeA, "A"
	if strings.Contains(podIPs[0], ":") {
		qtype, rtype = dns.TypeAAAA, "AAAA"
	}

	t.Run("headless", func(t *testing.T) {
		tb.CreateService(t, ns, framework.NewService("headless", "echo", framework.Headless()))
		mustWork(t, "headless "+rtype+" records are the Pod IPs", func(ctx context.Context) error {
			r, err := dnsQuery(ctx, tb, n1.Name, "headless."+ns+".svc.cluster.local", qtype)
			if err != nil {
				return err
			}
			var got []string
			for _, rr := range r.Answer {
				switch a := rr.(type) {
				case *dns.A:
					got = append(got, a.A.String())
				case *dns.AAAA:
					got = append(got, a.AAAA.String())
				}
			}
			sort.Strings(got)
			if fmt.Sprint(got) != fmt.Sprint(podIPs) {
				return fmt.Errorf("%s %v, want %v", rtype, got, podIPs)
			}
			return nil
		})
	})

	t.Run("ExternalName", func(t *testing.T) {
		target := "echo." + ns + ".svc.cluster.local"
		tb.CreateService(t, ns, framework.NewService("ext", "", framework.ExternalName(target)))
		mustWork(t, "ExternalName answers a CNAME", func(ctx context.Context) error {
			// CoreDNS answers the CNAME with the target's records of the
			// type asked, and with nothing when the target has none.
			r, err := dnsQuery(ctx, tb, n1.Name, "ext."+ns+".svc.cluster.local", qtype)
			if err != nil {
				return err
			}
			for _, rr := range r.Answer {
				if c, ok := rr.(*dns.CNAME); ok && c.Target == dns.Fqdn(target) {
					return nil
				}
			}
			return fmt.Errorf("no CNAME to %s in %v", target, r.Answer)
		})
	})

	t.Run("session-affinity", func(t *testing.T) {
		svc := tb.CreateService(t, ns, framework.NewService("sticky", "echo", framework.SessionAffinityClientIP(600)))
		tb.WaitReadyEndpoints(t, ns, "sticky", len(pods))
		url := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, "80") + "/"
		mustWork(t, "sticky reachable", func(ctx context.Context) error { _, err := getEcho(ctx, tb, n1.Name, url); return err })
		seen := map[string]bool{}
		for i := 0; i < 12; i++ {
			a, err := getEcho(ctx, tb, n1.Name, url)
			if err != nil {
				t.Fatal(err)
			}
			seen[a.Hostname] = true
		}
		if len(seen) != 1 {
			t.Errorf("ClientIP affinity reached %d backends: %v", len(seen), seen)
		}
	})

	t.Run("no-selector-manual-slice", func(t *testing.T) {
		svc := tb.CreateService(t, ns, framework.NewService("manual", ""))
		tb.CreateManualEndpointSlice(t, ns, "manual", podIPs, []discoveryv1.EndpointPort{{
			Name: ptr.To("http"), Port: ptr.To[int32](framework.EchoHTTPPort), Protocol: ptr.To(corev1.ProtocolTCP),
		}})
		tb.WaitReadyEndpoints(t, ns, "manual", len(podIPs))
		for _, n := range tb.Nodes {
			mustWork(t, "manual endpoints via ClusterIP from "+n.Name, func(ctx context.Context) error {
				_, err := getEcho(ctx, tb, n.Name, "http://"+net.JoinHostPort(svc.Spec.ClusterIP, "80")+"/")
				return err
			})
		}
	})
}
