package framework

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/vishvananda/netns"
)

// DialInNode opens a connection from inside a node's network namespace. The
// socket is created on an OS thread switched into that namespace and stays
// there for its lifetime, so the test process itself (in the root namespace)
// can hold long-lived connections through the node's datapath.
func DialInNode(ctx context.Context, node, network, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer orig.Close()
		target, err := netns.GetFromPath("/var/run/netns/" + node)
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("netns %s: %w", node, err)}
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		// The dialer creates the socket synchronously on this thread.
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, network, addr)
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		} // else: leave the thread locked; the runtime discards it when this goroutine ends.
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

// HTTPClientInNode returns an HTTP client whose connections start in the node's
// network namespace (no keep-alive, so each request takes a fresh path through
// kube-proxy's rules).
func HTTPClientInNode(node string) *http.Client {
	return &http.Client{
		Timeout: 5 * time.Second,
		Transport: &http.Transport{
			DisableKeepAlives: true,
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				return DialInNode(ctx, node, network, addr)
			},
		},
	}
}
