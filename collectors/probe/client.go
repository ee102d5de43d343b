package probe

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/sockets"
)

// Reasons the client Pod's view was not probed.
const (
	SkipNotAsked = "not asked: the collector on the client's node runs without the netadmin+netns profile (pass --client-netns to probe from inside the Pod's network namespace)"
)

// hairpinAttempts bounds the connections to the ClusterIP an endpoint Pod
// makes to reach itself: with n endpoints picked at random each one misses
// with probability (1-1/n); 16 tries find the Pod among 4 endpoints 99% of
// the time, and each try is one short-lived connection.
const hairpinAttempts = 16

// ReadClient probes from inside the request's client Pod's network
// namespace. procRoot is /proc (the host's, the collector runs with hostPID).
func ReadClient(ctx context.Context, req *collectorapi.Request, procRoot string, timeout time.Duration) *collectorapi.ClientProbeObservation {
	c := req.Client
	out := &collectorapi.ClientProbeObservation{Namespace: c.Namespace, Name: c.Name}
	if !c.EnterNetns {
		out.Skipped = SkipNotAsked
		return out
	}
	pid, comm, scanned, err := sockets.FindPodProcess(ctx, procRoot, c.UID)
	if err != nil {
		out.Skipped = "cannot list processes: " + err.Error()
		return out
	}
	if pid == 0 {
		out.Skipped = fmt.Sprintf("no process of Pod %s/%s (UID %s) runs on this node (looked at %d processes)", c.Namespace, c.Name, c.UID, scanned)
		return out
	}
	out.PID, out.Command = pid, comm
	pidDir := filepath.Join(procRoot, strconv.Itoa(pid))
	out.NetNS, _ = os.Readlink(filepath.Join(pidDir, "ns", "net"))
	// The resolver configuration is the Pod's own file, read through the
	// process's root (mount namespace) before entering the network one.
	rc, rcErr := os.ReadFile(filepath.Join(pidDir, "root", "etc", "resolv.conf"))
	libc := DetectLibc(filepath.Join(pidDir, "root"))
	nsPath := filepath.Join(pidDir, "ns", "net")
	var hostIndex int
	out.Probes, err = probeInNetns(ctx, nsPath, clientTargets(req), timeout, DefaultConcurrency)
	if err != nil {
		out.Skipped = err.Error()
		out.Probes = nil
		return out
	}
	err = InNetns(nsPath, func() error {
		name := clientName(req)
		if rcErr != nil {
			out.Resolver = &collectorapi.ClientResolver{Name: name, Error: "cannot read the Pod's /etc/resolv.conf: " + rcErr.Error()}
		} else {
			out.Resolver = Resolve(ctx, string(rc), name, libc, queryType(c.IPs), timeout)
		}
		if c.Hairpin {
			out.Hairpin = hairpin(ctx, req, timeout)
			if out.Hairpin != nil {
				hostIndex = podLinkPeer(out.Hairpin.Self)
			}
		}
		return nil
	})
	if out.Hairpin != nil && hostIndex > 0 {
		// Back in the collector's (the node's) namespace, where /sys shows
		// the node's interfaces.
		if ifc, err := net.InterfaceByIndex(hostIndex); err == nil {
			out.Hairpin.HostInterface = ifc.Name
			out.Hairpin.BridgeHairpinMode = BridgeHairpinMode("/sys", ifc.Name)
		}
	}
	if err != nil {
		out.Skipped = err.Error()
		out.Probes, out.Resolver, out.Hairpin = nil, nil, nil
	}
	return out
}

// InNetns runs f on an OS thread that joined the network namespace at path.
// The thread stays locked and its goroutine ends, so the Go runtime discards
// it rather than hand a thread in the Pod's namespace to other goroutines
// (the vishvananda/netns documentation's advice). f must do its work on the
// calling goroutine: a goroutine it starts runs on another thread.
func InNetns(path string, f func() error) error {
	h, err := netns.GetFromPath(path)
	if err != nil {
		return fmt.Errorf("cannot open the Pod's network namespace %s: %w", path, err)
	}
	defer h.Close()
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := netns.Set(h); err != nil {
			// setns did not happen: the thread is still the collector's.
			runtime.UnlockOSThread()
			done <- fmt.Errorf("cannot enter the Pod's network namespace (setns needs CAP_SYS_ADMIN): %w", err)
			return
		}
		done <- f()
	}()
	return <-done
}

// clientTargets are the ClusterIP frontends and the endpoints, as the node
// probes them; NodePorts and external addresses are the outside's view.
func clientTargets(req *collectorapi.Request) []Target {
	all, _ := Targets(req)
	var out []Target
	for _, t := range all {
		if t.Kind == "clusterIP" || t.Kind == "endpoint" {
			out = append(out, t)
		}
	}
	return out
}

// probeInNetns probes the targets from the namespace at nsPath with up to
// concurrency workers, each on its own thread in that namespace: a denied
// client's probes all time out, and one after the other they would outlast
// the collector's deadline.
func probeInNetns(ctx context.Context, nsPath string, targets []Target, timeout time.Duration, concurrency int) ([]collectorapi.Probe, error) {
	out := make([]collectorapi.Probe, len(targets))
	next := make(chan int, len(targets))
	for i := range targets {
		next <- i
	}
	close(next)
	workers := min(concurrency, len(targets))
	errs := make(chan error, workers)
	for range workers {
		go func() {
			errs <- InNetns(nsPath, func() error {
				for i := range next {
					if ctx.Err() == nil {
						out[i] = probeOne(ctx, targets[i], timeout)
					}
				}
				return nil
			})
		}()
	}
	var first error
	for range workers {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		return nil, first
	}
	// Targets left when the context ended were not probed.
	return slices.DeleteFunc(out, func(p collectorapi.Probe) bool { return p.Address == "" }), nil
}

// probeOne is One with the node probes' second, longer try for a timeout:
// slow, not unreachable, when that one answers.
func probeOne(ctx context.Context, t Target, timeout time.Duration) collectorapi.Probe {
	p := One(ctx, t, timeout)
	if p.Outcome == OutcomeFailed && p.ErrorClass == collectorapi.ErrClassTimeout && ctx.Err() == nil {
		first := p.Error
		p = One(ctx, t, 2*timeout)
		p.Attempts, p.FirstError = 2, first
	}
	return p
}

// clientName is the name the client would write: the bare Service name in
// its own namespace, name.namespace from another one.
func clientName(req *collectorapi.Request) string {
	if req.Client.Namespace == req.Service.Namespace {
		return req.Service.Name
	}
	return req.Service.Name + "." + req.Service.Namespace
}

func queryType(ips []string) string {
	for _, ip := range ips {
		if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().Is4() {
			return "A"
		}
	}
	if len(ips) > 0 {
		return "AAAA"
	}
	return "A"
}

// hairpin connects to the first ClusterIP port whose endpoints include this
// Pod until a connection lands on the Pod itself.
func hairpin(ctx context.Context, req *collectorapi.Request, timeout time.Duration) *collectorapi.HairpinProbe {
	fe, self, ok := hairpinTarget(req)
	if !ok {
		return nil
	}
	hp := &collectorapi.HairpinProbe{Frontend: fe.String(), Self: self.String()}
	// Four failures and no connection at all say enough (a lone endpoint
	// that cannot reach itself), without waiting out every try.
	for hp.Attempts < hairpinAttempts && hp.SelfHits == 0 && ctx.Err() == nil && (hp.Connected > 0 || hp.Failed < 4) {
		hp.Attempts++
		peer, hit, err := connectOnce(ctx, fe, self, timeout)
		switch {
		case err != nil:
			hp.Failed++
			hp.Error = err.Error()
			hp.ErrorClass = collectors.ClassifyNetError(err)
		case hit:
			hp.Connected++
			hp.SelfHits++
			hp.PeerAddress = peer
		default:
			hp.Connected++
		}
	}
	return hp
}

// hairpinTarget is a TCP ClusterIP frontend and the client's own endpoint
// address behind it.
func hairpinTarget(req *collectorapi.Request) (netip.AddrPort, netip.AddrPort, bool) {
	for _, fe := range req.Service.Frontends() {
		if fe.Kind != "clusterIP" || fe.Protocol != "TCP" {
			continue
		}
		for _, ep := range req.Endpoints {
			port, has := ep.Ports[fe.PortName]
			if !has {
				continue
			}
			for _, ip := range req.Client.IPs {
				a, err := netip.ParseAddr(ip)
				if err != nil || ep.IP != ip || a.Unmap().Is4() != fe.Addr.Addr().Is4() {
					continue
				}
				return fe.Addr, netip.AddrPortFrom(a.Unmap(), uint16(port)), true
			}
		}
	}
	return netip.AddrPort{}, netip.AddrPort{}, false
}

// connectOnce connects to the frontend and looks, in this namespace's TCP
// table, for the Pod's accepted side of the same connection: an established
// socket on self that was not there before the connect. Its peer port is
// the connection's source port unless the masquerade rewrote it
// (--random-fully); a new socket on self is the evidence either way.
func connectOnce(ctx context.Context, fe, self netip.AddrPort, timeout time.Duration) (peer string, hit bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	before := map[netip.AddrPort]bool{}
	for _, c := range acceptedOn(self) {
		before[c.Remote] = true
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", fe.String())
	if err != nil {
		return "", false, err
	}
	defer c.Close()
	local, _ := netip.ParseAddrPort(c.LocalAddr().String())
	for _, a := range acceptedOn(self) {
		if before[a.Remote] {
			continue
		}
		if !hit || a.Remote.Port() == local.Port() {
			peer, hit = a.Remote.Addr().String(), true
		}
	}
	return peer, hit, nil
}

// acceptedOn lists the established sockets on self in
// /proc/thread-self/net/tcp{,6}: the thread's network namespace, which
// /proc/self/net is not for a thread that changed it.
func acceptedOn(self netip.AddrPort) []sockets.Connection {
	var out []sockets.Connection
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open("/proc/thread-self/net/" + table)
		if err != nil {
			continue
		}
		conns, _ := sockets.ParseConnections(f)
		f.Close()
		for _, c := range conns {
			if c.Local == self {
				out = append(out, c)
			}
		}
	}
	return out
}

// podLinkPeer is, for the Pod's interface holding self's address, the
// ifindex of its peer in the node's namespace (a veth's IFLA_LINK); 0 when
// unknown. It runs in the Pod's namespace.
func podLinkPeer(self string) int {
	ap, err := netip.ParseAddrPort(self)
	if err != nil {
		return 0
	}
	links, err := netlink.LinkList()
	if err != nil {
		return 0
	}
	for _, l := range links {
		addrs, err := netlink.AddrList(l, netlink.FAMILY_ALL)
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if ip, ok := netip.AddrFromSlice(a.IP); ok && ip.Unmap() == ap.Addr() {
				return l.Attrs().ParentIndex
			}
		}
	}
	return 0
}

// BridgeHairpinMode reads sysRoot/class/net/<ifname>/brport/hairpin_mode:
// "1" lets the bridge send a frame back out the port it arrived on (what a
// Pod reaching itself through a Service needs on a bridge CNI), "0" does
// not; "" when the interface is no bridge port.
func BridgeHairpinMode(sysRoot, ifname string) string {
	b, err := os.ReadFile(filepath.Join(sysRoot, "class", "net", ifname, "brport", "hairpin_mode"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// DetectLibc says which C library the Pod's image resolves names with: musl
// when its dynamic loader is there, else glibc (the more common one, and
// the behaviour of Go's own resolver).
func DetectLibc(root string) string {
	for _, dir := range []string{"lib", "usr/lib"} {
		if m, _ := filepath.Glob(filepath.Join(root, dir, "ld-musl-*.so.1")); len(m) > 0 {
			return LibcMusl
		}
	}
	return LibcGlibc
}
