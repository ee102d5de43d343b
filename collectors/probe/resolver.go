package probe

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	clusterdns "github.com/svctrace/kubectl-svctrace/collectors/dns"
)

// C libraries whose search-list behaviour Candidates reproduces.
const (
	LibcGlibc = "glibc"
	LibcMusl  = "musl"
)

// Candidates lists the names a stub resolver tries for name, in order.
//
// glibc (res_nsearch): a name ending in a dot is tried as-is only; a name
// with at least ndots dots is tried as-is first, then with each search
// domain; one with fewer dots is tried with each search domain first and
// as-is last. musl differs in one way: a name with at least ndots dots is
// tried as-is only, never with the search domains.
func Candidates(cfg *dns.ClientConfig, name, libc string) []string {
	if dns.IsFqdn(name) {
		return []string{name}
	}
	if libc == LibcMusl && strings.Count(name, ".") >= cfg.Ndots {
		return []string{dns.Fqdn(name)}
	}
	// miekg/dns's NameList is glibc's order (labels > ndots is dots >= ndots).
	return cfg.NameList(name)
}

// Resolve looks name up as the Pod's resolver would: each candidate in
// order, to the first nameserver that answers (the next ones only when one
// does not), stopping at the first answer with records. An NXDOMAIN or an
// empty answer moves to the next candidate; so does a SERVFAIL or timeout
// with glibc, while musl stops there. Every query sent is recorded.
func Resolve(ctx context.Context, resolvConf, name, libc, qtype string, timeout time.Duration) *collectorapi.ClientResolver {
	return resolve(ctx, resolvConf, name, libc, qtype, timeout, "")
}

// resolve is Resolve with the nameservers' port replaced when port is set.
func resolve(ctx context.Context, resolvConf, name, libc, qtype string, timeout time.Duration, port string) *collectorapi.ClientResolver {
	out := &collectorapi.ClientResolver{Name: name}
	cfg, err := dns.ClientConfigFromReader(strings.NewReader(resolvConf))
	if err != nil {
		out.Error = "cannot parse the Pod's /etc/resolv.conf: " + err.Error()
		return out
	}
	if port != "" {
		cfg.Port = port
	}
	out.Nameservers, out.Search, out.Ndots = cfg.Servers, cfg.Search, cfg.Ndots
	if len(cfg.Servers) == 0 {
		out.Error = "the Pod's /etc/resolv.conf names no nameserver"
		return out
	}
	t := dns.TypeA
	if qtype == "AAAA" {
		t = dns.TypeAAAA
	}
	for _, cand := range Candidates(cfg, name, libc) {
		var last collectorapi.ClientQuery
		for _, server := range cfg.Servers {
			if ctx.Err() != nil {
				return out
			}
			last = query(ctx, net.JoinHostPort(server, cfg.Port), cand, t, timeout)
			out.Queries = append(out.Queries, last)
			if last.Error == "" {
				break
			}
		}
		if len(last.Answers) > 0 && last.Rcode == dns.RcodeToString[dns.RcodeSuccess] {
			out.Answered = cand
			for _, a := range last.Answers {
				if typ, data, ok := strings.Cut(a, " "); ok && (typ == "A" || typ == "AAAA") {
					out.Addrs = append(out.Addrs, data)
				}
			}
			return out
		}
		nxOrEmpty := last.Error == "" && (last.Rcode == dns.RcodeToString[dns.RcodeNameError] || last.Rcode == dns.RcodeToString[dns.RcodeSuccess])
		if !nxOrEmpty && libc == LibcMusl {
			return out
		}
	}
	return out
}

// query sends one question over UDP, retrying over TCP when the answer is
// truncated, as a stub resolver does.
func query(ctx context.Context, server, name string, qtype uint16, timeout time.Duration) collectorapi.ClientQuery {
	q := collectorapi.ClientQuery{Name: name, Type: dns.TypeToString[qtype], Server: server}
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = true
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &dns.Client{Net: "udp", Timeout: timeout}
	start := time.Now()
	r, _, err := c.ExchangeContext(ctx, m, server)
	if err == nil && r.Truncated {
		c.Net = "tcp"
		r, _, err = c.ExchangeContext(ctx, m, server)
	}
	q.LatencyMillis = collectors.Millis(time.Since(start))
	if err != nil {
		q.Error = err.Error()
		return q
	}
	q.Rcode = dns.RcodeToString[r.Rcode]
	// "TYPE data", as the dns section records answers.
	for _, rr := range r.Answer {
		q.Answers = append(q.Answers, clusterdns.AnswerString(rr))
	}
	return q
}
