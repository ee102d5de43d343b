package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/loopback"
)

func waitHTTP(t *testing.T, url string) *http.Response {
	t.Helper()
	for i := 0; i < 100; i++ {
		if r, err := http.Get(url); err == nil {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s never answered", url)
	return nil
}

func status(t *testing.T, url string) int {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return r.StatusCode
}

// TestServeReadinessAndEcho drives the server the way e2e tests do: readiness
// flips through POST /ready, TCP and UDP echo, and the HTTP identity answer.
func TestServeReadinessAndEcho(t *testing.T) {
	hp, tp, up := loopback.FreePort(t, "tcp"), loopback.FreePort(t, "tcp"), loopback.FreePort(t, "udp")
	go func() {
		_ = serve([]string{"--bind", "127.0.0.1", "--http-port", strconv.Itoa(hp), "--tcp-port", strconv.Itoa(tp), "--udp-port", strconv.Itoa(up)})
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", hp)
	r := waitHTTP(t, base+"/")
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if !strings.Contains(string(body), `"ready":true`) {
		t.Errorf("identity answer %s", body)
	}
	if s := status(t, base+"/healthz"); s != 200 {
		t.Fatalf("healthz %d, want 200", s)
	}
	if r, err := http.Post(base+"/ready?v=false", "", nil); err != nil || r.StatusCode != 200 {
		t.Fatalf("POST /ready?v=false: %v %v", r, err)
	}
	if s := status(t, base+"/healthz"); s != 503 {
		t.Fatalf("healthz after flip %d, want 503", s)
	}
	if r, err := http.Post(base+"/ready?v=true", "", nil); err != nil || r.StatusCode != 200 {
		t.Fatalf("POST /ready?v=true: %v %v", r, err)
	}
	if s := status(t, base+"/healthz"); s != 200 {
		t.Fatalf("healthz after flip back %d, want 200", s)
	}
	for _, network := range []string{"tcp", "udp"} {
		port := tp
		if network == "udp" {
			port = up
		}
		c, err := net.Dial(network, fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		fmt.Fprint(c, "ping-"+network+"\n")
		line, err := bufio.NewReader(c).ReadString('\n')
		c.Close()
		if err != nil || line != "ping-"+network+"\n" {
			t.Errorf("%s echo: %q %v", network, line, err)
		}
	}
}

// TestServeOneFamily: --family 4 on the wildcard address takes IPv4
// connections and refuses IPv6 ones (the IPv4-only app behind a dual-stack
// Service), where the plain wildcard takes both.
func TestServeOneFamily(t *testing.T) {
	if c, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	} else {
		c.Close()
	}
	for _, tc := range []struct {
		family string
		v6     bool
	}{{"", true}, {"4", false}} {
		hp := loopback.FreePort(t, "tcp")
		args := []string{"--http-port", strconv.Itoa(hp), "--tcp-port", "0", "--udp-port", "0"}
		if tc.family != "" {
			args = append(args, "--family", tc.family)
		}
		go func() { _ = serve(args) }()
		r := waitHTTP(t, fmt.Sprintf("http://127.0.0.1:%d/healthz", hp))
		r.Body.Close()
		c, err := net.DialTimeout("tcp6", fmt.Sprintf("[::1]:%d", hp), 2*time.Second)
		if c != nil {
			c.Close()
		}
		if (err == nil) != tc.v6 {
			t.Errorf("--family %q: IPv6 connection error %v, want accepted %v", tc.family, err, tc.v6)
		}
	}
}
