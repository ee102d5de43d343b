// Command fileserve serves one directory over HTTP on a loopback address, so
// that krew's own validator, which downloads every platform's archive, can
// install the snapshot archives without any network. It writes its base URL
// to -url-file once it listens and stops by itself after -timeout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	dir := flag.String("dir", ".", "directory to serve")
	addr := flag.String("addr", "127.0.0.1:0", "loopback address to listen on")
	urlFile := flag.String("url-file", "", "file to write the base URL to once listening")
	timeout := flag.Duration("timeout", 10*time.Minute, "stop after this long")
	flag.Parse()
	if err := serve(*dir, *addr, *urlFile, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func serve(dir, addr, urlFile string, timeout time.Duration) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("address %q: only loopback addresses are served", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	base := "http://" + ln.Addr().String()
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()

	if urlFile != "" {
		if err := os.WriteFile(urlFile, []byte(base+"\n"), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", urlFile, err)
		}
	}
	fmt.Fprintf(os.Stderr, "fileserve: serving %s at %s for at most %s\n", dir, base, timeout)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
