// Command echo is the testbed's backend application. As a server it answers
// HTTP (who am I, readiness that a test can flip), echoes TCP and UDP, and can
// be told to listen on loopback only or on another port than its Pod declares,
// so end-to-end tests can build the faults svctrace must explain. As a client
// (subcommands get, tcp, udp, dns) it lets tests probe from inside a Pod whose
// image has no other tools.
//
//	echo serve [--http-port 8080] [--tcp-port 9000] [--udp-port 9001] [--bind 0.0.0.0] [--family 4|6] [--not-ready]
//	echo get URL                  # HTTP GET, body to stdout
//	echo tcp HOST:PORT [MSG]      # TCP echo round trip
//	echo udp HOST:PORT [MSG]      # UDP echo round trip
//	echo dns NAME [SERVER:PORT]   # A/AAAA lookup through /etc/resolv.conf or SERVER
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "serve":
		err = serve(args)
	case "get":
		err = clientGet(args)
	case "tcp":
		err = clientStream("tcp", args)
	case "udp":
		err = clientStream("udp", args)
	case "dns":
		err = clientDNS(args)
	default:
		err = fmt.Errorf("unknown subcommand %q (serve, get, tcp, udp, dns)", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

func envStr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// identity is what every HTTP answer carries, so a test can tell which
// backend a connection through a Service reached.
type identity struct {
	Hostname   string `json:"hostname"`
	PodName    string `json:"podName,omitempty"`
	PodIP      string `json:"podIP,omitempty"`
	NodeName   string `json:"nodeName,omitempty"`
	LocalAddr  string `json:"localAddr"`
	RemoteAddr string `json:"remoteAddr"`
	Ready      bool   `json:"ready"`
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	httpPort := fs.Int("http-port", envInt("ECHO_HTTP_PORT", 8080), "HTTP port (0 disables)")
	tcpPort := fs.Int("tcp-port", envInt("ECHO_TCP_PORT", 9000), "TCP echo port (0 disables)")
	udpPort := fs.Int("udp-port", envInt("ECHO_UDP_PORT", 9001), "UDP echo port (0 disables)")
	bind := fs.String("bind", envStr("ECHO_BIND", "0.0.0.0"), "address to listen on (127.0.0.1 = loopback only; the wildcard 0.0.0.0 takes both families unless --family says one)")
	family := fs.String("family", envStr("ECHO_FAMILY", ""), "listen in this IP family only: 4 or 6 (empty: both, as a wildcard bind does)")
	notReady := fs.Bool("not-ready", os.Getenv("ECHO_NOT_READY") == "true", "start with /healthz failing")
	readyFile := fs.String("ready-file", os.Getenv("ECHO_READY_FILE"), "if set, /healthz also fails while this file exists containing \"false\"")
	stallPort := fs.Int("stall-port", 0, "also listen on this TCP port with an accept backlog of 1 and never accept: the queue fills after two connections and further SYNs are dropped (0 disables)")
	drain := fs.Duration("drain", 0, "on SIGTERM, keep serving (and answering /healthz) this long before exiting, as an app with a graceful shutdown does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Go listens on both families for a wildcard address; an app that
	// listens in one family only (an IPv4-only server behind a dual-stack
	// Service) needs the family's own network.
	tcpNet, udpNet := "tcp", "udp"
	switch *family {
	case "":
	case "4", "6":
		tcpNet, udpNet = "tcp"+*family, "udp"+*family
		if *bind == "0.0.0.0" && *family == "6" {
			*bind = "::"
		}
	default:
		return fmt.Errorf("--family %q: want 4 or 6", *family)
	}
	var ready atomic.Bool
	ready.Store(!*notReady)
	isReady := func() bool {
		if !ready.Load() {
			return false
		}
		if *readyFile != "" {
			if b, err := os.ReadFile(*readyFile); err == nil && string(trimSpace(b)) == "false" {
				return false
			}
		}
		return true
	}
	host, _ := os.Hostname()
	errc := make(chan error, 3)

	if *httpPort > 0 {
		mux := http.NewServeMux()
		ident := func(r *http.Request) identity {
			local := ""
			if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
				local = a.String()
			}
			return identity{Hostname: host, PodName: os.Getenv("POD_NAME"), PodIP: os.Getenv("POD_IP"),
				NodeName: os.Getenv("NODE_NAME"), LocalAddr: local, RemoteAddr: r.RemoteAddr, Ready: isReady()}
		}
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(ident(r))
		})
		mux.HandleFunc("/hostname", func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, host) })
		// /bytes?n=N answers N bytes (at most 16 MiB): a response that needs
		// full-size packets, where a path-MTU blackhole shows.
		mux.HandleFunc("/bytes", func(w http.ResponseWriter, r *http.Request) {
			n, err := strconv.Atoi(r.URL.Query().Get("n"))
			if err != nil || n < 0 || n > 16<<20 {
				http.Error(w, "want ?n=0..16777216", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/octet-stream")
			w.Header().Set("Content-Length", strconv.Itoa(n))
			_, _ = w.Write(bytes.Repeat([]byte{'x'}, n))
		})
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
			if !isReady() {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				v, err := strconv.ParseBool(r.URL.Query().Get("v"))
				if err != nil {
					http.Error(w, "want ?v=true|false", http.StatusBadRequest)
					return
				}
				ready.Store(v)
			}
			fmt.Fprintln(w, isReady())
		})
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		ln, err := net.Listen(tcpNet, net.JoinHostPort(*bind, strconv.Itoa(*httpPort)))
		if err != nil {
			return err
		}
		go func() { errc <- srv.Serve(ln) }()
	}
	if *tcpPort > 0 {
		ln, err := net.Listen(tcpNet, net.JoinHostPort(*bind, strconv.Itoa(*tcpPort)))
		if err != nil {
			return err
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					errc <- err
					return
				}
				go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
			}
		}()
	}
	if *udpPort > 0 {
		pc, err := net.ListenPacket(udpNet, net.JoinHostPort(*bind, strconv.Itoa(*udpPort)))
		if err != nil {
			return err
		}
		go func() {
			buf := make([]byte, 65535)
			for {
				n, addr, err := pc.ReadFrom(buf)
				if err != nil {
					errc <- err
					return
				}
				_, _ = pc.WriteTo(buf[:n], addr)
			}
		}()
	}
	if *stallPort > 0 {
		fd, err := stallListener(*stallPort)
		if err != nil {
			return fmt.Errorf("stall port %d: %w", *stallPort, err)
		}
		defer syscall.Close(fd)
	}
	fmt.Fprintf(os.Stderr, "echo: serving on %s http=%d tcp=%d udp=%d ready=%v\n", *bind, *httpPort, *tcpPort, *udpPort, ready.Load())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	select {
	case s := <-sigs:
		if *drain > 0 {
			fmt.Fprintln(os.Stderr, "echo: draining for", *drain, "on", s)
			select {
			case <-time.After(*drain):
			case s = <-sigs:
			}
		}
		fmt.Fprintln(os.Stderr, "echo: exiting on", s)
		return nil
	case err := <-errc:
		return err
	}
}

// stallListener listens on 0.0.0.0:port with a backlog of 1 and is never
// accepted from: net.Listen would use the kernel's somaxconn backlog, which no
// test fills.
func stallListener(port int) (int, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	if err := syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port}); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if err := syscall.Listen(fd, 1); err != nil {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func clientGet(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: echo get URL")
	}
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(args[0])
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(os.Stdout, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP %s", resp.Status)
	}
	return nil
}

func clientStream(network string, args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return fmt.Errorf("usage: echo %s HOST:PORT [MSG]", network)
	}
	msg := "svctrace-echo"
	if len(args) == 2 {
		msg = args[1]
	}
	c, err := net.DialTimeout(network, args[0], 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg + "\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	fmt.Print(line)
	if line != msg+"\n" {
		return fmt.Errorf("echo mismatch: got %q", line)
	}
	return nil
}

func clientDNS(args []string) error {
	if len(args) < 1 || len(args) > 2 {
		return errors.New("usage: echo dns NAME [SERVER:PORT]")
	}
	r := &net.Resolver{PreferGo: true}
	if len(args) == 2 {
		server := args[1]
		r.Dial = func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, server)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := r.LookupHost(ctx, args[0])
	if err != nil {
		return err
	}
	for _, a := range addrs {
		fmt.Println(a)
	}
	return nil
}
