package trace

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// dnsChecks states the name that should resolve and what it should return,
// and whether the cluster DNS Service can answer at all. The live query is
// node-side (a NodeInspector).
func (j *judge) dnsChecks() {
	s := &j.t.Service
	var answer string
	var fields []report.Field
	switch {
	case s.Type == string(corev1.ServiceTypeExternalName):
		answer = "CNAME " + s.ExternalName
		fields = append(fields, fieldValue("CNAME", s.ExternalName))
		if net.ParseIP(s.ExternalName) != nil {
			j.Emit(report.CodeDNSExternalIP, report.Args{"externalName": s.ExternalName})
		}
	case s.Headless:
		var v4, v6 []string
		for _, ep := range j.endpoints {
			if !ep.Ready && !s.PublishNotReadyAddresses {
				continue
			}
			if strings.Contains(ep.IP, ":") {
				v6 = append(v6, ep.IP)
			} else {
				v4 = append(v4, ep.IP)
			}
		}
		v4, v6 = dedupe(v4), dedupe(v6)
		if len(v4)+len(v6) == 0 && !j.slicesGap {
			answer = "no records (headless, no ready endpoint)"
			j.Emit(report.CodeDNSHeadlessEmpty, nil)
		} else if j.slicesGap {
			answer = "the ready Pod IPs (EndpointSlices not readable)"
		} else {
			answer = recordList(v4, v6)
			if len(v4) > 0 {
				fields = append(fields, fieldItems("A", v4))
			}
			if len(v6) > 0 {
				fields = append(fields, fieldItems("AAAA", v6))
			}
		}
	default:
		var v4, v6 []string
		for _, ip := range s.ClusterIPs {
			if strings.Contains(ip, ":") {
				v6 = append(v6, ip)
			} else {
				v4 = append(v4, ip)
			}
		}
		answer = recordList(v4, v6)
		if len(v4) > 0 {
			fields = append(fields, fieldItems("A", v4))
		}
		if len(v6) > 0 {
			fields = append(fields, fieldItems("AAAA", v6))
		}
	}
	fields = append([]report.Field{fieldValue("name", j.fqdn)}, fields...)
	// The expected answer goes first in the layer.
	l := j.t.Layer(report.LayerDNS)
	c := j.NewCheck(report.CodeDNSExpected, report.Args{"answer": answer}, fields...)
	l.Checks = append([]report.Check{c}, l.Checks...)

	switch {
	case j.in.DNSNotFound:
		j.Emit(report.CodeDNSNoClusterDNS, nil)
	case j.in.DNSService != nil && !j.in.HasGap(report.LayerDNS, input.ResourceEndpointSlices):
		ready, total := 0, 0
		for _, sl := range j.in.DNSSlices {
			for _, ep := range sl.Endpoints {
				total++
				if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
					ready++
				}
			}
		}
		ips := j.in.DNSService.Spec.ClusterIPs
		if len(ips) == 0 {
			ips = []string{j.in.DNSService.Spec.ClusterIP}
		}
		if ready == 0 {
			j.Emit(report.CodeDNSNoEndpoints, report.Args{"total": strconv.Itoa(total)}, fieldItems("clusterIPs", ips))
		} else {
			j.Emit(report.CodeDNSClusterDNSOK, report.Args{"clusterIPs": strings.Join(ips, ", "), "ready": strconv.Itoa(ready)},
				fieldItems("clusterIPs", ips), fieldValue("readyEndpoints", strconv.Itoa(ready)))
		}
	}
}

func recordList(v4, v6 []string) string {
	var parts []string
	if len(v4) > 0 {
		parts = append(parts, "A "+listNames(v4))
	}
	if len(v6) > 0 {
		parts = append(parts, "AAAA "+listNames(v6))
	}
	return orNone(strings.Join(parts, " and "))
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// judgeDNS compares the live answers with the expected ones. Every node asks
// the same servers, so identical results are reported once.
func (nj *nodeJudge) judgeDNS(views []plan.NodeView) {
	svc := nj.in.Service
	if svc == nil {
		return
	}
	expectA, expectAAAA, cname := nj.expectedDNS()
	type key struct{ code, msg string }
	seen := map[key]bool{}
	asked := false
	type dnsOK struct {
		args              report.Args
		q                 collectorapi.DNSQuery
		nodes, transports map[string]bool
	}
	okByQuery := map[string]*dnsOK{}
	var okOrder []string
	failedByQuery := map[string]bool{}
	askers := 0
	// ExternalName: per node, the A/AAAA answers that came back whole
	// (NOERROR) and the addresses they held for the CNAME's target.
	type targetAnswers struct {
		q       collectorapi.DNSQuery
		queries []string
		addrs   int
	}
	target := map[string]*targetAnswers{}
	for _, v := range views {
		if v.Observation == nil || v.Observation.Sections.DNS == nil || v.Observation.Sections.DNS.Data == nil {
			continue
		}
		if len(v.Observation.Sections.DNS.Data.Queries) > 0 {
			askers++
		}
		byQ := map[string]map[string]collectorapi.DNSQuery{} // server|name|type → transport → query
		for _, q := range v.Observation.Sections.DNS.Data.Queries {
			k := q.Server + "|" + q.Name + "|" + q.Type
			if byQ[k] == nil {
				byQ[k] = map[string]collectorapi.DNSQuery{}
			}
			byQ[k][q.Transport] = q
		}
		keys := sortedKeys(boolKeys(byQ))
		for _, k := range keys {
			asked = true
			qs := byQ[k]
			for _, tr := range []string{"udp", "tcp"} {
				q, ok := qs[tr]
				if !ok {
					continue
				}
				var code string
				a := report.Args{"server": q.Server, "name": q.Name, "type": q.Type, "transport": tr,
					"latency": fmt.Sprintf("%.1f", q.LatencyMillis), "rcode": q.Rcode}
				var want []string
				switch q.Type {
				case "A":
					want = expectA
				case "AAAA":
					want = expectAAAA
				}
				got := answerData(q.Answers, q.Type, cname != "")
				if cname != "" && q.Error == "" && q.Rcode == "NOERROR" && (q.Type == "A" || q.Type == "AAAA") {
					ta := target[v.Node]
					if ta == nil {
						ta = &targetAnswers{q: q}
						target[v.Node] = ta
					}
					ta.addrs += len(answerData(q.Answers, q.Type, false))
					ta.queries = append(ta.queries, fmt.Sprintf("%s over %s: %s", q.Type, tr, listOrNone(got)))
				}
				switch {
				case q.ErrorClass == collectorapi.ErrClassTimeout && lateCollector(v.Observation, q.Attempts, v.Observation.Sections.DNS.Error) != "":
					code = report.CodeDNSLiveInconclusive
					a["error"], a["why"] = q.Error, lateCollector(v.Observation, q.Attempts, v.Observation.Sections.DNS.Error)
				case q.Error != "":
					code = report.CodeDNSLiveFailed
					a["error"] = q.Error
				case q.Type == "SRV" && q.Rcode == "NOERROR":
					continue // named-port SRV records present: evidence enough
				case q.Type == "SRV":
					code = report.CodeDNSLiveNXDomain
				case q.Rcode == "NXDOMAIN" && (len(want) > 0 || cname != ""):
					code = report.CodeDNSLiveNXDomain
				case q.Rcode != "NOERROR" && q.Rcode != "NXDOMAIN":
					code = report.CodeDNSLiveNXDomain
				case cname != "" && !containsFold(got, cname):
					if q.Type != "A" {
						continue
					}
					code = report.CodeDNSLiveWrong
					a["answers"], a["expected"] = listOrNone(got), "CNAME "+cname
				case cname == "" && !sameSet(got, want):
					code = report.CodeDNSLiveWrong
					a["answers"], a["expected"] = listOrNone(got), listOrNone(want)
				case q.LatencyMillis > collectorapi.DNSSlowMillis:
					code = report.CodeDNSLiveSlow
				default:
					if len(got) == 0 {
						continue // no AAAA for an IPv4 Service, and none expected
					}
					k := q.Name + "|" + q.Type
					r := okByQuery[k]
					if r == nil {
						a["answers"] = strings.Join(got, ", ")
						r = &dnsOK{args: a, q: q, nodes: map[string]bool{}, transports: map[string]bool{}}
						okByQuery[k] = r
						okOrder = append(okOrder, k)
					}
					r.nodes[v.Node] = true
					r.transports[tr] = true
					continue
				}
				if code != report.CodeDNSLiveSlow && code != report.CodeDNSLiveInconclusive {
					failedByQuery[q.Name+"|"+q.Type] = true
				}
				c := key{code, v.Node + k + tr}
				if !seen[c] {
					seen[c] = true
					if ck := nj.emitDNS(code, v.Node, a, q); code == report.CodeDNSLiveInconclusive {
						ck.Status = report.StatusUnknown
					}
				}
			}
			if u, ok1 := qs["udp"]; ok1 {
				if tc, ok2 := qs["tcp"]; ok2 && u.Error == "" && tc.Error == "" && !sameSet(u.Answers, tc.Answers) && u.Type != "SRV" {
					nj.emitDNS(report.CodeDNSLiveTCPDiff, v.Node, report.Args{"server": u.Server, "name": u.Name, "type": u.Type,
						"udp": listOrNone(u.Answers), "tcp": listOrNone(tc.Answers)}, u)
				}
			}
		}
	}
	// CoreDNS keeps an ExternalName's CNAME in the answer when the lookup of
	// its target returns no address (plugin/backend_lookup.go, A and AAAA),
	// so a CNAME alone is not an answer a client can connect with.
	for _, node := range sortedKeys(boolKeys(target)) {
		ta := target[node]
		if ta.addrs > 0 || !containsFold(answerData(ta.q.Answers, ta.q.Type, true), cname) {
			continue
		}
		nj.emitDNS(report.CodeDNSExternalUnresolved, node, report.Args{"server": ta.q.Server, "name": ta.q.Name,
			"target": strings.TrimSuffix(cname, "."), "queries": strings.Join(ta.queries, "; ")}, ta.q)
	}
	// A name answered correctly is reported once, with the nodes it was
	// answered from: "every inspected node" only when no node's query for it
	// failed.
	for _, k := range okOrder {
		r := okByQuery[k]
		r.args["transports"] = strings.Join(sortedKeys(r.transports), "+")
		r.args["nodes"] = "every inspected node"
		if failedByQuery[k] || len(r.nodes) < askers {
			r.args["nodes"] = "node(s) " + strings.Join(sortedKeys(r.nodes), ", ") + " only"
		}
		nj.emitDNS(report.CodeDNSLiveOK, "", r.args, r.q)
	}
	if asked {
		// The live query ran: drop the "runs on a node" placeholder.
		l := nj.t.Layer(report.LayerDNS)
		kept := l.Checks[:0]
		for _, c := range l.Checks {
			if c.Code != report.CodeDNSLiveQuery {
				kept = append(kept, c)
			}
		}
		l.Checks = kept
	}
}

func (nj *nodeJudge) emitDNS(code, node string, a report.Args, q collectorapi.DNSQuery) *report.Check {
	raw := []string{fmt.Sprintf("%s %s @%s (%s): rcode=%s answers=[%s] %.1fms %s", q.Name, q.Type, q.Server, q.Transport,
		orNone(q.Rcode), strings.Join(q.Answers, "; "), q.LatencyMillis, q.Error)}
	if q.FirstLatencyMillis > 0 {
		raw = append(raw, fmt.Sprintf("asked twice: the first answer took %.1fms", q.FirstLatencyMillis))
	}
	return nj.EmitNode(code, node, a, raw)
}

// expectedDNS is what the cluster DNS should answer: ClusterIPs; ready (or,
// with publishNotReadyAddresses, all) endpoint IPs for a headless Service; a
// CNAME for ExternalName.
func (nj *nodeJudge) expectedDNS() (a, aaaa []string, cname string) {
	svc := nj.in.Service
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil, nil, strings.TrimSuffix(svc.Spec.ExternalName, ".") + "."
	}
	var ips []string
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		seen := map[string]bool{}
		for _, sl := range nj.in.Slices {
			for _, e := range sl.Endpoints {
				ready := e.Conditions.Ready == nil || *e.Conditions.Ready
				if len(e.Addresses) > 0 && (ready || svc.Spec.PublishNotReadyAddresses) && !seen[e.Addresses[0]] {
					seen[e.Addresses[0]] = true
					ips = append(ips, e.Addresses[0])
				}
			}
		}
	} else {
		ips = svc.Spec.ClusterIPs
	}
	for _, ip := range ips {
		if ad, err := netip.ParseAddr(ip); err == nil {
			if ad.Is4() {
				a = append(a, ad.String())
			} else {
				aaaa = append(aaaa, ad.String())
			}
		}
	}
	return a, aaaa, ""
}

// answerData strips the record type prefix ("A 10.96.0.10" → "10.96.0.10");
// with keepCNAME, CNAME records are kept as "CNAME target".
func answerData(answers []string, typ string, keepCNAME bool) []string {
	var out []string
	for _, a := range answers {
		f := strings.SplitN(a, " ", 2)
		if len(f) != 2 {
			continue
		}
		switch {
		case f[0] == typ:
			out = append(out, f[1])
		case keepCNAME && f[0] == "CNAME":
			out = append(out, f[1])
		}
	}
	return out
}

// skipLiveDNS says the live DNS query, which a node makes, was skipped with
// the node layers.
func skipLiveDNS(t *report.ServiceTrace, reason string) {
	fqdn := serviceFQDN(t.Service.Name, t.Service.Namespace, t.Metadata.ClusterDomain)
	c := report.NewCheck(report.CodeDNSLiveQuery, report.Args{"fqdn": fqdn, "reason": "skipped, " + reason})
	c.Status = report.StatusSkipped
	t.Layer(report.LayerDNS).Add(c)
}
