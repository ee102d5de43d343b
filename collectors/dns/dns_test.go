package dns

import (
	"context"
	"net"
	"strings"
	"sync"
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

// An ExternalName Service with a named port is asked for its name only:
// its port names do not exist in the cluster DNS.
func TestQuestionsExternalName(t *testing.T) {
	req := webRequest()
	req.Service.Type, req.Service.ExternalName = "ExternalName", "web.other.svc.cluster.local"
	if len(req.Service.Ports) == 0 || req.Service.Ports[0].Name == "" {
		t.Fatal("the request needs a named port for this test")
	}
	for _, q := range Questions(req) {
		if q.Type == mdns.TypeSRV {
			t.Errorf("asked %s SRV for an ExternalName Service", q.Name)
		}
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

// TestTimeoutRetriedOnce: a server that lets the first query of each
// question go unanswered (a dropped datagram, a slow node) is asked once
// more with twice the timeout; the answer counts, and the query says it took
// two attempts. A server that never answers still times out, after two.
func TestTimeoutRetriedOnce(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	inner := fakedns.Handler()
	dropFirst := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		k := w.LocalAddr().Network() + " " + r.Question[0].String()
		mu.Lock()
		seen[k]++
		n := seen[k]
		mu.Unlock()
		if n == 1 {
			if w.LocalAddr().Network() == "tcp" {
				time.Sleep(400 * time.Millisecond) // past the first try's deadline
			}
			return
		}
		inner.ServeDNS(w, r)
	})
	port := fakedns.ServeLoopbackHandler(t, dropFirst)
	obs, err := (&Reader{Port: port, Timeout: 200 * time.Millisecond}).Read(context.Background(), webRequest())
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range obs.Queries {
		if q.Error != "" || q.Rcode != "NOERROR" || q.Attempts != 2 || q.FirstError == "" {
			t.Errorf("%s %s: %+v, want answered on the second attempt", q.Transport, q.Type, q)
		}
	}

	// Nothing answers a blackholed address: two attempts, still a timeout.
	silent, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	req := webRequest()
	obs, err = (&Reader{Port: uint16(silent.LocalAddr().(*net.UDPAddr).Port), Timeout: 100 * time.Millisecond}).Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range obs.Queries {
		if q.Transport == "udp" && (q.ErrorClass != collectorapi.ErrClassTimeout || q.Attempts != 2) {
			t.Errorf("silent server, %s %s: %+v", q.Transport, q.Type, q)
		}
	}
}

// TestSlowAnswerAskedAgain: an answer slower than DNSSlowMillis is asked once
// more; a fast second answer is kept with the first one's latency recorded,
// and a server slow both times keeps its slow answer.
func TestSlowAnswerAskedAgain(t *testing.T) {
	const slow = (collectorapi.DNSSlowMillis + 150) * time.Millisecond
	serve := func(t *testing.T, slowAlways bool) uint16 {
		var mu sync.Mutex
		seen := map[string]int{}
		inner := fakedns.Handler()
		h := mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
			k := w.LocalAddr().Network() + " " + r.Question[0].String()
			mu.Lock()
			seen[k]++
			n := seen[k]
			mu.Unlock()
			if n == 1 || slowAlways {
				time.Sleep(slow)
			}
			inner.ServeDNS(w, r)
		})
		return fakedns.ServeLoopbackHandler(t, h)
	}
	read := func(t *testing.T, port uint16) []collectorapi.DNSQuery {
		obs, err := (&Reader{Port: port, Timeout: 2 * time.Second, Concurrency: 16}).Read(context.Background(), webRequest())
		if err != nil {
			t.Fatal(err)
		}
		return obs.Queries
	}

	t.Run("fast when asked again", func(t *testing.T) {
		for _, q := range read(t, serve(t, false)) {
			if q.Error != "" || q.Attempts != 2 || q.FirstLatencyMillis < collectorapi.DNSSlowMillis || q.LatencyMillis >= collectorapi.DNSSlowMillis {
				t.Errorf("%s %s: %+v, want the fast second answer kept and the slow first one's latency recorded", q.Transport, q.Type, q)
			}
		}
	})
	t.Run("slow both times", func(t *testing.T) {
		for _, q := range read(t, serve(t, true)) {
			if q.Error != "" || q.Rcode != "NOERROR" || q.Attempts != 2 || q.LatencyMillis < collectorapi.DNSSlowMillis {
				t.Errorf("%s %s: %+v, want a slow answer after two asks", q.Transport, q.Type, q)
			}
		}
	})
}
