// Package dns asks the cluster DNS what it says about one Service: A and
// AAAA for <svc>.<ns>.svc.<domain> and SRV for each named port, over UDP and
// over TCP, recording rcode, answers, truncation, latency and the error class.
package dns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	mdns "github.com/miekg/dns"
	"golang.org/x/sync/errgroup"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// Reader queries each of the request's ClusterDNS servers.
type Reader struct {
	// Port is the DNS port (0: 53).
	Port uint16
	// Timeout per query (0: the request's probe timeout).
	Timeout time.Duration
	// Concurrency bounds queries in flight (0: 8).
	Concurrency int
}

// Question is one name and type to ask.
type Question struct {
	Name string
	Type uint16
}

// Questions are the names the Service should have: A/AAAA on the Service name,
// SRV _<port>._<proto>.<name> for each named port. An ExternalName Service
// is a CNAME only: CoreDNS's kubernetes plugin answers its port names
// NXDOMAIN (a real ExternalName with ports, asked on the testbed), so none
// are asked.
func Questions(req *collectorapi.Request) []Question {
	fqdn := fmt.Sprintf("%s.%s.svc.%s.", req.Service.Name, req.Service.Namespace, req.Domain())
	qs := []Question{{fqdn, mdns.TypeA}, {fqdn, mdns.TypeAAAA}}
	if req.Service.Type == "ExternalName" {
		return qs
	}
	for _, p := range req.Service.Ports {
		if p.Name == "" {
			continue
		}
		qs = append(qs, Question{fmt.Sprintf("_%s._%s.%s", p.Name, strings.ToLower(p.Protocol), fqdn), mdns.TypeSRV})
	}
	return qs
}

// Read asks every server every question over UDP and TCP.
func Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.DNSObservation, error) {
	return (&Reader{}).Read(ctx, req)
}

// Read asks every server every question over UDP and TCP.
func (r *Reader) Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.DNSObservation, error) {
	obs := &collectorapi.DNSObservation{Servers: req.ClusterDNS, Queries: []collectorapi.DNSQuery{}}
	if len(req.ClusterDNS) == 0 {
		return obs, fmt.Errorf("request names no clusterDNS server")
	}
	timeout := r.Timeout
	if timeout == 0 {
		timeout = time.Duration(req.ProbeTimeoutMillis) * time.Millisecond
	}
	if timeout == 0 {
		timeout = collectorapi.DefaultProbeTimeoutMillis * time.Millisecond
	}
	port := r.Port
	if port == 0 {
		port = 53
	}
	type job struct {
		server, transport string
		q                 Question
	}
	var jobs []job
	for _, s := range req.ClusterDNS {
		for _, transport := range []string{"udp", "tcp"} {
			for _, q := range Questions(req) {
				jobs = append(jobs, job{s, transport, q})
			}
		}
	}
	limit := r.Concurrency
	if limit <= 0 {
		limit = 8
	}
	// ask returns the answers to jobs[which[k]] in order.
	ask := func(which []int, timeout time.Duration) []collectorapi.DNSQuery {
		out := make([]collectorapi.DNSQuery, len(which))
		var g errgroup.Group
		g.SetLimit(limit)
		for k, i := range which {
			j := jobs[i]
			g.Go(func() error {
				out[k] = Ask(ctx, j.server, port, j.transport, j.q, timeout)
				return nil
			})
		}
		_ = g.Wait()
		return out
	}
	all := make([]int, len(jobs))
	for i := range all {
		all[i] = i
	}
	obs.Queries = ask(all, timeout)
	// As a resolver does (resolv.conf attempts), a query that timed out is
	// asked once more, with twice the time: a loaded node's slow answer is
	// told from no answer. An answer slower than DNSSlowMillis is asked once
	// more too, with the same time: when every collector Pod of a trace
	// starts at once on a small node, one late answer says more about that
	// moment than about the server. The faster answer is kept, and the first
	// try's error or latency recorded.
	var timedOut, slow []int
	for i, q := range obs.Queries {
		switch {
		case q.ErrorClass == collectorapi.ErrClassTimeout:
			timedOut = append(timedOut, i)
		case q.Error == "" && q.LatencyMillis > collectorapi.DNSSlowMillis:
			slow = append(slow, i)
		}
	}
	if ctx.Err() == nil && len(timedOut) > 0 {
		for k, q := range ask(timedOut, 2*timeout) {
			i := timedOut[k]
			q.Attempts, q.FirstError = 2, obs.Queries[i].Error
			obs.Queries[i] = q
		}
	}
	if ctx.Err() == nil && len(slow) > 0 {
		for k, q := range ask(slow, timeout) {
			i := slow[k]
			first := obs.Queries[i]
			if q.Error != "" || q.LatencyMillis >= first.LatencyMillis {
				q = first
			}
			q.Attempts, q.FirstLatencyMillis = 2, first.LatencyMillis
			obs.Queries[i] = q
		}
	}
	return obs, ctx.Err()
}

// Ask sends one question to one server over one transport.
func Ask(ctx context.Context, server string, port uint16, transport string, q Question, timeout time.Duration) collectorapi.DNSQuery {
	res := collectorapi.DNSQuery{Server: server, Transport: transport, Name: q.Name, Type: mdns.TypeToString[q.Type]}
	addr, err := netip.ParseAddr(server)
	if err != nil {
		res.Error = err.Error()
		res.ErrorClass = collectorapi.ErrClassOther
		return res
	}
	m := new(mdns.Msg)
	m.SetQuestion(q.Name, q.Type)
	m.RecursionDesired = true
	c := &mdns.Client{Net: transport, Timeout: timeout}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	resp, _, err := c.ExchangeContext(ctx, m, net.JoinHostPort(addr.String(), strconv.Itoa(int(port))))
	res.LatencyMillis = collectors.Millis(time.Since(start))
	if err != nil {
		res.Error = err.Error()
		res.ErrorClass = collectors.ClassifyNetError(err)
		// A truncated UDP answer comes back as a message and an error.
		if resp == nil {
			return res
		}
	}
	res.Rcode = mdns.RcodeToString[resp.Rcode]
	res.Truncated = resp.Truncated
	res.Authoritative = resp.Authoritative
	for _, rr := range resp.Answer {
		res.Answers = append(res.Answers, AnswerString(rr))
	}
	return res
}

// AnswerString is the record's data without owner, TTL and class, prefixed by
// the type: "A 10.96.0.50", "SRV 0 100 80 web.default.svc.cluster.local.".
func AnswerString(rr mdns.RR) string {
	h := rr.Header()
	full := rr.String()
	// rr.String() is "<owner>\t<ttl>\t<class>\t<type>\t<data>".
	fields := strings.SplitN(full, "\t", 5)
	if len(fields) == 5 {
		return mdns.TypeToString[h.Rrtype] + " " + fields[4]
	}
	return full
}
