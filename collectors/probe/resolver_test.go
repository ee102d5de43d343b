package probe

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func config(t *testing.T, text string) *dns.ClientConfig {
	t.Helper()
	cfg, err := dns.ClientConfigFromReader(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// The kubelet's resolv.conf for a Pod in namespace shop (ClusterFirst).
const kubeletResolvConf = "nameserver 10.96.0.10\nsearch shop.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n"

func TestCandidates(t *testing.T) {
	tests := []struct {
		name, conf, lookup, libc string
		want                     []string
	}{
		{"ndots 5, bare name: search first, as-is last", kubeletResolvConf, "web", LibcGlibc,
			[]string{"web.shop.svc.cluster.local.", "web.svc.cluster.local.", "web.cluster.local.", "web."}},
		{"ndots 5, name.namespace still below ndots", kubeletResolvConf, "web.other", LibcGlibc,
			[]string{"web.other.shop.svc.cluster.local.", "web.other.svc.cluster.local.", "web.other.cluster.local.", "web.other."}},
		{"trailing dot: as-is only", kubeletResolvConf, "web.shop.svc.cluster.local.", LibcGlibc,
			[]string{"web.shop.svc.cluster.local."}},
		{"default ndots 1: a dotted name is tried as-is first", "nameserver 10.0.0.1\nsearch a.example b.example\n", "web.shop", LibcGlibc,
			[]string{"web.shop.", "web.shop.a.example.", "web.shop.b.example."}},
		{"default ndots 1: a bare name goes through the search list first", "nameserver 10.0.0.1\nsearch a.example b.example\n", "web", LibcGlibc,
			[]string{"web.a.example.", "web.b.example.", "web."}},
		{"dots equal to ndots count as enough", "nameserver 10.0.0.1\nsearch a.example\noptions ndots:2\n", "x.y.z", LibcGlibc,
			[]string{"x.y.z.", "x.y.z.a.example."}},
		{"musl: enough dots means no search list at all", "nameserver 10.0.0.1\nsearch a.example\noptions ndots:1\n", "web.shop", LibcMusl,
			[]string{"web.shop."}},
		{"musl: fewer dots than ndots search as glibc does", kubeletResolvConf, "web", LibcMusl,
			[]string{"web.shop.svc.cluster.local.", "web.svc.cluster.local.", "web.cluster.local.", "web."}},
		{"domain sets a one-entry search list", "nameserver 10.0.0.1\ndomain corp.example\n", "web", LibcGlibc,
			[]string{"web.corp.example.", "web."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Candidates(config(t, tt.conf), tt.lookup, tt.libc); !slices.Equal(got, tt.want) {
				t.Errorf("Candidates(%q) = %q, want %q", tt.lookup, got, tt.want)
			}
		})
	}
}

// serveZone answers A queries from records (name → address), NXDOMAIN
// for any other name, and SERVFAIL for names in servfail, on loopback.
func serveZone(t *testing.T, records map[string]string, servfail ...string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		q := r.Question[0]
		switch {
		case slices.Contains(servfail, q.Name):
			m.Rcode = dns.RcodeServerFailure
		case records[q.Name] != "" && q.Qtype == dns.TypeA:
			rr, _ := dns.NewRR(q.Name + " 5 IN A " + records[q.Name])
			m.Answer = append(m.Answer, rr)
		case records[q.Name] != "":
		default:
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port)
}

func TestResolveRecordsEveryQueryAndStopsAtTheFirstAnswer(t *testing.T) {
	// A search domain where the same short name exists: "web" resolves to
	// web.shop-tools.svc.cluster.local before the Pod's own namespace.
	port := serveZone(t, map[string]string{
		"web.shop-tools.svc.cluster.local.": "10.96.7.7",
		"web.shop.svc.cluster.local.":       "10.96.0.50",
	})
	conf := "nameserver 127.0.0.1\nsearch shop-tools.svc.cluster.local shop.svc.cluster.local svc.cluster.local\noptions ndots:5\n"
	r := resolve(context.Background(), conf, "web", LibcGlibc, "A", time.Second, port)
	if r.Answered != "web.shop-tools.svc.cluster.local." || !slices.Equal(r.Addrs, []string{"10.96.7.7"}) {
		t.Fatalf("answered %q %v, want the first search domain's record", r.Answered, r.Addrs)
	}
	if len(r.Queries) != 1 || r.Queries[0].Rcode != "NOERROR" {
		t.Fatalf("queries %+v, want one answered query", r.Queries)
	}

	conf = "nameserver 127.0.0.1\nsearch other.svc.cluster.local shop.svc.cluster.local\noptions ndots:5\n"
	r = resolve(context.Background(), conf, "web", LibcGlibc, "A", time.Second, port)
	var sent []string
	for _, q := range r.Queries {
		sent = append(sent, q.Name+" "+q.Rcode)
	}
	want := []string{"web.other.svc.cluster.local. NXDOMAIN", "web.shop.svc.cluster.local. NOERROR"}
	if !slices.Equal(sent, want) || r.Answered != "web.shop.svc.cluster.local." {
		t.Fatalf("sent %q answered %q, want %q", sent, r.Answered, want)
	}
	if r.Ndots != 5 || len(r.Search) != 2 {
		t.Errorf("config not recorded: ndots %d search %v", r.Ndots, r.Search)
	}
}

func TestResolveNothingAnswers(t *testing.T) {
	port := serveZone(t, map[string]string{}, "web.b.example.")
	conf := "nameserver 127.0.0.1\nsearch a.example b.example c.example\n"
	// glibc goes on after a SERVFAIL; musl stops there.
	r := resolve(context.Background(), conf, "web", LibcGlibc, "A", time.Second, port)
	if r.Answered != "" || len(r.Queries) != 4 {
		t.Fatalf("glibc: answered %q after %d queries, want none after 4", r.Answered, len(r.Queries))
	}
	r = resolve(context.Background(), conf, "web", LibcMusl, "A", time.Second, port)
	if len(r.Queries) != 2 || r.Queries[1].Rcode != "SERVFAIL" {
		t.Fatalf("musl: %+v, want to stop at the SERVFAIL", r.Queries)
	}
}

func TestResolveNoNameserver(t *testing.T) {
	r := Resolve(context.Background(), "search a.example\n", "web", LibcGlibc, "A", time.Second)
	if r.Error == "" || len(r.Queries) != 0 {
		t.Fatalf("got %+v, want an error and no query", r)
	}
}
