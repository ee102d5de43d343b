// Package probe connects from the node to each of a Service's frontends
// (ClusterIP, externalIPs, LB IPs) and to each endpoint, and reports what
// happened: connected, refused, timeout, unreachable or reset, with latency.
// TCP connects and closes; UDP sends one datagram (a DNS query on DNS ports,
// else an empty datagram) and waits for a reply or an ICMP error.
package probe

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sync/errgroup"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// DefaultConcurrency bounds probes in flight.
const DefaultConcurrency = 8

// Outcomes of a probe.
const (
	OutcomeConnected = "connected" // TCP handshake completed
	OutcomeReply     = "reply"     // UDP datagram answered
	OutcomeNoReply   = "no-reply"  // UDP: nothing came back (open and silent, or filtered)
	OutcomeFailed    = "failed"    // see ErrorClass
	OutcomeSkipped   = "skipped"   // protocol not probed (SCTP)
)

// Target is one address to probe.
type Target struct {
	Kind     string // clusterIP, externalIP, loadBalancerIP, nodePort, endpoint
	PortName string
	Node     string // the node a nodePort target's address belongs to
	Addr     netip.AddrPort
	Protocol string
}

// Targets lists the frontends and endpoints of the request, without
// duplicates, and how many endpoint targets there were in all. Endpoints
// are limited to the request's EndpointProbeLimit per port, this node's
// first (the ones its datapath must reach locally), then ready ones, each
// group in request order.
func Targets(req *collectorapi.Request) (targets []Target, endpointsTotal int) {
	seen := map[string]bool{}
	add := func(t Target) bool {
		k := t.Addr.String() + "/" + t.Protocol
		if seen[k] {
			return false
		}
		seen[k] = true
		targets = append(targets, t)
		return true
	}
	for _, fe := range req.Service.Frontends() {
		add(Target{Kind: fe.Kind, PortName: fe.PortName, Addr: fe.Addr, Protocol: fe.Protocol})
	}
	for _, na := range req.NodeAddresses {
		a, err := netip.ParseAddr(na.IP)
		if err != nil {
			continue
		}
		for _, p := range req.Service.Ports {
			if p.NodePort > 0 {
				add(Target{Kind: "nodePort", PortName: p.Name, Node: na.Node, Addr: netip.AddrPortFrom(a.Unmap(), uint16(p.NodePort)), Protocol: p.Protocol})
			}
		}
	}
	limit := req.EndpointProbeLimit
	if limit <= 0 {
		limit = collectorapi.DefaultEndpointProbeLimit
	}
	eps := slices.Clone(req.Endpoints)
	rank := func(e collectorapi.Endpoint) int {
		r := 2
		if req.NodeName != "" && e.NodeName == req.NodeName {
			r = 0
		} else if e.Ready {
			r = 1
		}
		return r
	}
	slices.SortStableFunc(eps, func(a, b collectorapi.Endpoint) int { return rank(a) - rank(b) })
	for _, p := range req.Service.Ports {
		taken := 0
		counted := map[netip.AddrPort]bool{}
		for _, ep := range eps {
			port, ok := ep.Ports[p.Name]
			a, err := netip.ParseAddr(ep.IP)
			if !ok || err != nil {
				continue
			}
			ap := netip.AddrPortFrom(a.Unmap(), uint16(port))
			if counted[ap] {
				continue
			}
			counted[ap] = true
			endpointsTotal++
			if taken < limit && add(Target{Kind: "endpoint", PortName: p.Name, Addr: ap, Protocol: p.Protocol}) {
				taken++
			}
		}
	}
	return targets, endpointsTotal
}

// Read probes every target with the request's timeout and the given concurrency.
func Read(ctx context.Context, req *collectorapi.Request, concurrency int) (*collectorapi.ProbeObservation, error) {
	timeout := time.Duration(req.ProbeTimeoutMillis) * time.Millisecond
	if timeout == 0 {
		timeout = collectorapi.DefaultProbeTimeoutMillis * time.Millisecond
	}
	if concurrency <= 0 {
		concurrency = DefaultConcurrency
	}
	targets, total := Targets(req)
	obs := &collectorapi.ProbeObservation{
		TimeoutMillis:  int(timeout / time.Millisecond),
		Concurrency:    concurrency,
		EndpointsTotal: total,
		Probes:         make([]collectorapi.Probe, len(targets)),
	}
	for _, t := range targets {
		if t.Kind == "endpoint" {
			obs.EndpointsProbed++
		}
	}
	probeTargets(ctx, targets, obs.Probes, timeout, concurrency, One)
	for _, hc := range healthCheckAddrs(req) {
		if ctx.Err() != nil {
			break
		}
		obs.HealthChecks = append(obs.HealthChecks, *HealthCheck(ctx, hc, 2*timeout))
	}
	if len(obs.HealthChecks) > 0 {
		obs.HealthCheck = &obs.HealthChecks[0]
	}
	obs.PathMTU = PathMTU(ctx, PathMTUTargets(targets), timeout, concurrency)
	if req.Client != nil && ctx.Err() == nil {
		obs.Client = ReadClient(ctx, req, "/proc", timeout)
	}
	return obs, ctx.Err()
}

// healthCheckAddrs are this node's addresses with the Service's
// health-check node port, one per IP family of the Service (its
// ClusterIPs'), in that order; none when there is no port to ask. Each
// family's proxier serves its own health check (tcp4 and tcp6 listeners),
// so a dual-stack Service is asked in both.
func healthCheckAddrs(req *collectorapi.Request) []netip.AddrPort {
	port := req.Service.HealthCheckNodePort
	if port <= 0 {
		return nil
	}
	var families []bool // Is6, in the Service's order
	seen := map[bool]bool{}
	for _, ip := range req.Service.ClusterIPs {
		if a, err := netip.ParseAddr(ip); err == nil && !seen[a.Unmap().Is6()] {
			seen[a.Unmap().Is6()] = true
			families = append(families, a.Unmap().Is6())
		}
	}
	if len(families) == 0 {
		families = []bool{false}
	}
	var out []netip.AddrPort
	for _, six := range families {
		// kube-proxy serves the health check on every node address by
		// default (nodePortAddresses unset), loopback included.
		addr := netip.MustParseAddr("127.0.0.1")
		if six {
			addr = netip.IPv6Loopback()
		}
		for _, na := range req.NodeAddresses {
			if a, err := netip.ParseAddr(na.IP); err == nil && na.Node == req.NodeName && a.Unmap().Is6() == six {
				addr = a.Unmap()
				break
			}
		}
		out = append(out, netip.AddrPortFrom(addr, uint16(port)))
	}
	return out
}

// HealthCheck asks kube-proxy's health-check server for the Service.
func HealthCheck(ctx context.Context, addr netip.AddrPort, timeout time.Duration) *collectorapi.HealthCheckProbe {
	out := &collectorapi.HealthCheckProbe{Address: addr.String()}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr.String()+"/", nil)
	if err != nil {
		out.Error, out.ErrorClass = err.Error(), collectorapi.ErrClassOther
		return out
	}
	// No proxy from the environment: the address is this node's own.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	out.LatencyMillis = collectors.Millis(time.Since(start))
	if err != nil {
		out.Error, out.ErrorClass = err.Error(), collectors.ClassifyNetError(err)
		return out
	}
	defer resp.Body.Close()
	out.StatusCode = resp.StatusCode
	var body struct {
		LocalEndpoints      *int  `json:"localEndpoints"`
		ServiceProxyHealthy *bool `json:"serviceProxyHealthy"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&body); err == nil {
		out.LocalEndpoints, out.ServiceProxyHealthy = body.LocalEndpoints, body.ServiceProxyHealthy
	}
	return out
}

// probeTargets probes every target into out[i] with one, and then once
// more, with twice the time, each that timed out, frontends and endpoints
// alike. A timeout on a loaded node (many collectors, two cores, a starved
// guest) is often a slow answer, not a lost one: a ClusterIP judged on one
// late SYN-ACK while the endpoint behind it got a second chance would be
// blamed for the node's slowness. Refusals and unreachables are answers
// and are not retried.
func probeTargets(ctx context.Context, targets []Target, out []collectorapi.Probe, timeout time.Duration, concurrency int, one prober) {
	all := make([]int, len(targets))
	for i := range all {
		all[i] = i
	}
	probeAll(ctx, targets, all, out, timeout, concurrency, one)
	var again []int
	for i, p := range out {
		if p.Outcome == OutcomeFailed && p.ErrorClass == collectorapi.ErrClassTimeout {
			again = append(again, i)
		}
	}
	if len(again) == 0 || ctx.Err() != nil {
		return
	}
	first := make(map[int]collectorapi.Probe, len(again))
	for _, i := range again {
		first[i] = out[i]
	}
	probeAll(ctx, targets, again, out, 2*timeout, concurrency, one)
	for _, i := range again {
		out[i].Attempts = 2
		out[i].FirstError = first[i].Error
	}
}

// prober probes one target; One, or a fake in tests.
type prober func(ctx context.Context, t Target, timeout time.Duration) collectorapi.Probe

// probeAll probes targets[i] for each i in which into out[i].
func probeAll(ctx context.Context, targets []Target, which []int, out []collectorapi.Probe, timeout time.Duration, concurrency int, one prober) {
	var g errgroup.Group
	g.SetLimit(concurrency)
	var mu sync.Mutex
	for _, i := range which {
		g.Go(func() error {
			p := one(ctx, targets[i], timeout)
			mu.Lock()
			out[i] = p
			mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
}

// One probes one target.
func One(ctx context.Context, t Target, timeout time.Duration) collectorapi.Probe {
	p := collectorapi.Probe{Target: t.Kind, PortName: t.PortName, Node: t.Node, Address: t.Addr.String(), Protocol: t.Protocol}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var err error
	switch strings.ToUpper(t.Protocol) {
	case "TCP":
		err = probeTCP(ctx, t.Addr)
		p.Outcome = OutcomeConnected
	case "UDP":
		var replied bool
		replied, err = probeUDP(ctx, t)
		p.Outcome = OutcomeReply
		if err == nil && !replied {
			p.Outcome = OutcomeNoReply
			p.ErrorClass = collectorapi.ErrClassTimeout
			p.Error = "no reply within " + timeout.String() + " (open and silent, or filtered)"
		}
	default:
		p.Outcome = OutcomeSkipped
		p.Error = t.Protocol + " is not probed"
		return p
	}
	p.LatencyMillis = collectors.Millis(time.Since(start))
	if err != nil {
		p.Outcome = OutcomeFailed
		p.Error = err.Error()
		p.ErrorClass = collectors.ClassifyNetError(err)
	}
	return p
}

func probeTCP(ctx context.Context, addr netip.AddrPort) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return err
	}
	return c.Close()
}

// probeUDP sends one datagram on a connected socket, so that an ICMP
// port-unreachable comes back as ECONNREFUSED on read.
func probeUDP(ctx context.Context, t Target) (replied bool, err error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "udp", t.Addr.String())
	if err != nil {
		return false, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if _, err := c.Write(udpPayload(t)); err != nil {
		return false, err
	}
	buf := make([]byte, 2048)
	_, err = c.Read(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false, nil
	}
	return err == nil, err
}

// udpPayload is a DNS query for DNS-looking ports (so a DNS server answers),
// else an empty datagram.
func udpPayload(t Target) []byte {
	if t.Addr.Port() == 53 || t.Addr.Port() == 5353 || strings.Contains(strings.ToLower(t.PortName), "dns") {
		m := new(dns.Msg)
		m.SetQuestion(".", dns.TypeNS)
		m.Id = 0x5356
		if b, err := m.Pack(); err == nil {
			return b
		}
	}
	return []byte{}
}
