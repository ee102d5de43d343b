// Package fakedns answers DNS the way CoreDNS's kubernetes plugin would for
// the one Service the collector tests use, default/web in cluster.local: an
// A record 10.96.0.50 and the SRV record of its "http" TCP port (port 80).
// Other types for the Service's name get no data (NOERROR, no answer, so no
// AAAA); every other name is NXDOMAIN. Answers are authoritative.
package fakedns

import (
	"net"
	"testing"
	"time"

	mdns "github.com/miekg/dns"
)

// Names and the address the server knows.
const (
	WebName = "web.default.svc.cluster.local."
	WebSRV  = "_http._tcp.web.default.svc.cluster.local."
	WebA    = "10.96.0.50"
)

// Handler answers for default/web as the package comment says.
func Handler() mdns.Handler {
	return mdns.HandlerFunc(func(w mdns.ResponseWriter, r *mdns.Msg) {
		m := new(mdns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		q := r.Question[0]
		switch {
		case q.Name == WebName && q.Qtype == mdns.TypeA:
			rr, _ := mdns.NewRR(WebName + " 5 IN A " + WebA)
			m.Answer = append(m.Answer, rr)
		case q.Name == WebName:
			// NOERROR, no data.
		case q.Name == WebSRV && q.Qtype == mdns.TypeSRV:
			rr, _ := mdns.NewRR(WebSRV + " 5 IN SRV 0 100 80 " + WebName)
			m.Answer = append(m.Answer, rr)
		default:
			m.Rcode = mdns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
}

// ServeLoopback serves Handler on 127.0.0.1, UDP and TCP on the same port,
// until the test ends, and returns the port. The test is skipped when the
// TCP side of the port the UDP socket got is taken.
func ServeLoopback(t testing.TB) uint16 {
	t.Helper()
	return ServeLoopbackHandler(t, Handler())
}

// ServeLoopbackHandler is ServeLoopback with another handler: one that
// delays or drops some answers, wrapping Handler.
func ServeLoopbackHandler(t testing.TB, h mdns.Handler) uint16 {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	l, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		pc.Close()
		t.Skipf("tcp port %d busy: %v", port, err)
	}
	udp := &mdns.Server{PacketConn: pc, Handler: h}
	tcp := &mdns.Server{Listener: l, Handler: h}
	go func() { _ = udp.ActivateAndServe() }()
	go func() { _ = tcp.ActivateAndServe() }()
	t.Cleanup(func() { _ = udp.Shutdown(); _ = tcp.Shutdown() })
	time.Sleep(20 * time.Millisecond)
	return uint16(port)
}

// ListenAndServe serves Handler on addr over UDP and TCP until one of them
// fails, and returns why: for a helper process that a test starts inside a
// network namespace of its own.
func ListenAndServe(addr string) error {
	errs := make(chan error, 2)
	go func() { errs <- (&mdns.Server{Addr: addr, Net: "udp", Handler: Handler()}).ListenAndServe() }()
	go func() { errs <- (&mdns.Server{Addr: addr, Net: "tcp", Handler: Handler()}).ListenAndServe() }()
	return <-errs
}
