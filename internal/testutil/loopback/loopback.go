// Package loopback gives tests ports on 127.0.0.1: one that nothing listens
// on (connection refused, ICMP port unreachable) and one that accepts.
package loopback

import (
	"net"
	"testing"
)

// FreePort returns a 127.0.0.1 port that nothing listens on for network
// ("tcp" or "udp"): it is bound once to learn a free number, then closed.
// Another process may take it in between; that is rare enough for tests.
func FreePort(t testing.TB, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// AcceptTCP listens on a 127.0.0.1 port, accepts every connection and
// closes it at once (a TCP probe target that connects), until the test
// ends. It returns the port.
func AcceptTCP(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}
