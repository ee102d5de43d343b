package framework

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WaitServiceResolvable waits until every ready CoreDNS Pod answers the
// Service's name (NOERROR, an address: A and AAAA for the Service's IP
// families, A when it has none), asked directly from a node. Each
// CoreDNS replica learns of a new Service through its own watch, seconds
// apart under load; a trace taken before one has rightly sees NXDOMAIN from
// it, which is not what a scenario about a settled Service tests.
func (tb *Testbed) WaitServiceResolvable(t testing.TB, ns, name string) {
	t.Helper()
	ctx := Context(t, 2*time.Minute)
	fqdn := dns.Fqdn(name + "." + ns + ".svc.cluster.local")
	qtypes := []uint16{dns.TypeA}
	if svc, err := tb.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err == nil && len(svc.Spec.IPFamilies) > 0 {
		qtypes = nil
		for _, f := range svc.Spec.IPFamilies {
			if f == corev1.IPv6Protocol {
				qtypes = append(qtypes, dns.TypeAAAA)
			} else {
				qtypes = append(qtypes, dns.TypeA)
			}
		}
	}
	var last error
	err := Eventually(ctx, 90*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
		slices, err := tb.Client.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kube-dns"})
		if err != nil {
			return err
		}
		asked := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if len(e.Addresses) == 0 || (e.Conditions.Ready != nil && !*e.Conditions.Ready) {
					continue
				}
				asked++
				for _, q := range qtypes {
					if err := ask(ctx, tb.Nodes[0].Name, e.Addresses[0], fqdn, q); err != nil {
						last = err
						return err
					}
				}
			}
		}
		if asked == 0 {
			return fmt.Errorf("no ready CoreDNS endpoint")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s not answered by every CoreDNS Pod: %v (last: %v)", fqdn, err, last)
	}
}

// ask sends one query of type qtype over UDP from node's namespace to server:53.
func ask(ctx context.Context, node, server, fqdn string, qtype uint16) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := DialInNode(ctx, node, "udp", net.JoinHostPort(server, "53"))
	if err != nil {
		return err
	}
	defer c.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(d)
	}
	m := new(dns.Msg)
	m.SetQuestion(fqdn, qtype)
	conn := &dns.Conn{Conn: c}
	if err := conn.WriteMsg(m); err != nil {
		return err
	}
	r, err := conn.ReadMsg()
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
		return fmt.Errorf("%s answers %s for %s %s with %d records", server, dns.RcodeToString[r.Rcode], dns.TypeToString[qtype], fqdn, len(r.Answer))
	}
	return nil
}
