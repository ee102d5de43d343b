package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// SmallProbeSize is the IPv4 packet size every path carries (RFC 791's
// minimum reassembly buffer): the probe that shows the endpoint answers at all.
const SmallProbeSize = 576

// icmpHeaders is the IPv4 header (20) and ICMP echo header (8) of a probe.
const icmpHeaders = 28

var echoSeq atomic.Uint32

// PathMTUTargets are the distinct IPv4 endpoint addresses among the
// targets the TCP/UDP probes use.
func PathMTUTargets(targets []Target) []netip.Addr {
	var out []netip.Addr
	for _, t := range targets {
		a := t.Addr.Addr().Unmap()
		if t.Kind == "endpoint" && a.Is4() && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// PathMTU sends each address two ICMP echo requests with don't-fragment set
// (IP_PMTUDISC_DO): SmallProbeSize bytes, then the MTU of the route to it.
// A small answer and no large one is what a path that drops big packets
// without sending "fragmentation needed" looks like. It needs CAP_NET_RAW.
// At most maxPathMTUTargets addresses are probed, concurrency at a time.
// Routes are looked up and sockets opened on the calling goroutine, so they
// belong to its network namespace; only the echoes run concurrently.
func PathMTU(ctx context.Context, addrs []netip.Addr, timeout time.Duration, concurrency int) []collectorapi.PathMTUProbe {
	if len(addrs) > maxPathMTUTargets {
		addrs = addrs[:maxPathMTUTargets]
	}
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	out := make([]collectorapi.PathMTUProbe, len(addrs))
	conns := make([]*net.IPConn, len(addrs))
	for i, a := range addrs {
		out[i] = collectorapi.PathMTUProbe{Address: a.String(), SmallSize: SmallProbeSize}
		dev, mtu, err := routeMTU(a)
		if err != nil {
			out[i].Error = err.Error()
			continue
		}
		out[i].Device, out[i].RouteMTU, out[i].LargeSize = dev, mtu, mtu
		if conns[i], err = dialDF(a); err != nil {
			out[i].Error = err.Error()
		}
	}
	var g errgroup.Group
	g.SetLimit(concurrency)
	for i, c := range conns {
		if c == nil {
			continue
		}
		g.Go(func() error {
			defer c.Close()
			if ctx.Err() != nil {
				out[i].Error = ctx.Err().Error()
				return nil
			}
			echoPair(c, &out[i], timeout)
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// maxPathMTUTargets bounds the addresses probed: a blackhole is a property
// of a path, and the endpoints share a handful of them.
const maxPathMTUTargets = 32

// echoPair sends the small probe, then, if it was answered, the large one.
func echoPair(conn *net.IPConn, p *collectorapi.PathMTUProbe, timeout time.Duration) {
	if err := echo(conn, SmallProbeSize, timeout); err != nil {
		// No answer at all (ICMP filtered, Pod gone): the large probe
		// would say nothing more.
		p.Error = "small probe: " + err.Error()
		return
	}
	p.SmallOK = true
	if p.LargeSize <= SmallProbeSize {
		p.LargeOK = true
		return
	}
	err := echo(conn, p.LargeSize, timeout)
	if err == nil {
		p.LargeOK = true
		return
	}
	p.LargeError = err.Error()
	// A "fragmentation needed" that came back lowered the kernel's path MTU
	// for the address: the connected socket reports it.
	if learnt, err := socketMTU(conn); err == nil && learnt < p.LargeSize {
		p.FragNeededMTU = learnt
	}
}

// routeMTU is the MTU of the route to addr: its own mtu metric, or its device's.
func routeMTU(addr netip.Addr) (string, int, error) {
	rts, err := netlink.RouteGet(addr.AsSlice())
	if err != nil {
		return "", 0, fmt.Errorf("route to %s: %w", addr, err)
	}
	if len(rts) == 0 {
		return "", 0, fmt.Errorf("no route to %s", addr)
	}
	link, err := netlink.LinkByIndex(rts[0].LinkIndex)
	if err != nil {
		return "", 0, fmt.Errorf("link of the route to %s: %w", addr, err)
	}
	mtu := link.Attrs().MTU
	if rts[0].MTU > 0 {
		mtu = rts[0].MTU
	}
	return link.Attrs().Name, mtu, nil
}

// dialDF opens a raw ICMP socket connected to addr with don't-fragment and
// no local fragmentation: a send above the known path MTU fails with
// EMSGSIZE instead of leaving in pieces.
func dialDF(addr netip.Addr) (*net.IPConn, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.IPPROTO_ICMP)
	if err != nil {
		return nil, fmt.Errorf("raw ICMP socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "icmp")
	defer f.Close()
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO); err != nil {
		return nil, fmt.Errorf("IP_MTU_DISCOVER: %w", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: addr.As4()}); err != nil {
		return nil, fmt.Errorf("connect %s: %w", addr, err)
	}
	pc, err := net.FilePacketConn(f)
	if err != nil {
		return nil, err
	}
	c, ok := pc.(*net.IPConn)
	if !ok {
		pc.Close()
		return nil, errors.New("raw socket is not an IPConn")
	}
	return c, nil
}

// echo sends one echo request making a size-byte IPv4 packet and waits for its reply.
func echo(c *net.IPConn, size int, timeout time.Duration) error {
	id, seq := os.Getpid()&0xffff, int(echoSeq.Add(1)&0xffff)
	msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: make([]byte, size-icmpHeaders)}}
	b, err := msg.Marshal(nil)
	if err != nil {
		return err
	}
	if _, err := c.Write(b); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	buf := make([]byte, size+64)
	for {
		if err := c.SetReadDeadline(deadline); err != nil {
			return err
		}
		n, err := c.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return fmt.Errorf("no echo reply to %d bytes within %v", size, timeout)
			}
			return err
		}
		pkt := buf[:n]
		// A raw IPv4 socket delivers the IP header too.
		if len(pkt) > 0 && pkt[0]>>4 == 4 {
			pkt = pkt[int(pkt[0]&0x0f)*4:]
		}
		m, err := icmp.ParseMessage(1, pkt)
		if err != nil {
			continue
		}
		if e, ok := m.Body.(*icmp.Echo); ok && m.Type == ipv4.ICMPTypeEchoReply && e.ID == id && e.Seq == seq {
			return nil
		}
	}
}

// socketMTU is the path MTU the kernel holds for the connected socket's
// destination (IP_MTU).
func socketMTU(c *net.IPConn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	var mtu int
	var serr error
	if err := rc.Control(func(fd uintptr) { mtu, serr = unix.GetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU) }); err != nil {
		return 0, err
	}
	return mtu, serr
}
