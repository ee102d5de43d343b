package dns

import (
	"context"
	"strings"
	"testing"
	"time"

	mdns "github.com/miekg/dns"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakedns"
)

func webRequest() *collectorapi.Request {
	return &collectorapi.Request{
		Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web",
			Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}, {Name: "", Protocol: "TCP", Port: 81}}},
		ClusterDNS: []string{"127.0.0.1"},
	}
}

func TestQuestions(t *testing.T) {
	req := webRequest()
	req.ClusterDomain = "example.org."
	qs := Questions(req)
	if len(qs) != 3 || qs[0].Name != "web.default.svc.example.org." || qs[2].Name != "_http._tcp.web.default.svc.example.org." || qs[2].Type != mdns.TypeSRV {
		t.Fatalf("%+v", qs)
	}
}

func TestReadAgainstLoopbackServer(t *testing.T) {
	port := fakedns.ServeLoopback(t)
	obs, err := (&Reader{Port: port, Timeout: time.Second}).Read(context.Background(), webRequest())
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Queries) != 6 {
		t.Fatalf("want 3 questions x 2 transports, got %d", len(obs.Queries))
	}
	seen := map[string]collectorapi.DNSQuery{}
	for _, q := range obs.Queries {
		seen[q.Transport+" "+q.Type] = q
		if q.Error != "" || q.Rcode != "NOERROR" || !q.Authoritative {
			t.Errorf("%s %s: %+v", q.Transport, q.Type, q)
		}
	}
	for _, tr := range []string{"udp", "tcp"} {
		if a := seen[tr+" A"]; len(a.Answers) != 1 || a.Answers[0] != "A 10.96.0.50" {
			t.Errorf("%s A answers %v", tr, a.Answers)
		}
		if aaaa := seen[tr+" AAAA"]; len(aaaa.Answers) != 0 {
			t.Errorf("%s AAAA answers %v", tr, aaaa.Answers)
		}
		if srv := seen[tr+" SRV"]; len(srv.Answers) != 1 || !strings.HasPrefix(srv.Answers[0], "SRV 0 100 80 web.default") {
			t.Errorf("%s SRV answers %v", tr, srv.Answers)
		}
	}
}

func TestNXDOMAINAndDeadServer(t *testing.T) {
	port := fakedns.ServeLoopback(t)
	req := webRequest()
	req.Service.Name = "missing"
	obs, err := (&Reader{Port: port, Timeout: time.Second}).Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range obs.Queries {
		if q.Rcode != "NXDOMAIN" {
			t.Errorf("%s %s rcode %q", q.Transport, q.Type, q.Rcode)
		}
	}
	// Nothing listens on this loopback port: UDP gets ICMP port unreachable, TCP a RST.
	dead := Ask(context.Background(), "127.0.0.1", 1, "tcp", Question{"web.default.svc.cluster.local.", mdns.TypeA}, 300*time.Millisecond)
	if dead.ErrorClass != collectorapi.ErrClassRefused || dead.Rcode != "" {
		t.Errorf("dead tcp server %+v", dead)
	}
	deadUDP := Ask(context.Background(), "127.0.0.1", 1, "udp", Question{"web.default.svc.cluster.local.", mdns.TypeA}, 300*time.Millisecond)
	if deadUDP.ErrorClass != collectorapi.ErrClassRefused {
		t.Errorf("dead udp server %+v", deadUDP)
	}
	if _, err := Read(context.Background(), &collectorapi.Request{}); err == nil {
		t.Error("no servers should be an error")
	}
}
