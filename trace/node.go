package trace

import (
	"fmt"
	"hash/maphash"
	"math"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// NodeView is what svctrace learnt about one node: the collector's
// observation, or why there is none.
type NodeView struct {
	Node string
	// Roles say why the node was inspected: "endpoints", "client", "selected".
	Roles []string
	// Profile is the privilege profile the collector Pod ran with.
	Profile string
	// Observation is nil when Failure is set.
	Observation *collectorapi.Observation
	Failure     string
}

// judgeNodes compares each node's observation with what the Service and its
// EndpointSlices say should be there, and fills the dns, datapath, conntrack
// and route layers with checks and per-node results. Layers the API side
// already skipped (datapath of a headless Service, say) are left alone. The
// returned judge holds each node's expectation for the endpoint matrix.
func judgeNodes(in *Input, t *report.ServiceTrace, views []NodeView, from *report.PolicyClient) *nodeJudge {
	sort.SliceStable(views, func(i, j int) bool { return views[i].Node < views[j].Node })
	fqdn := serviceFQDN(in.Name, in.Namespace, t.Metadata.ClusterDomain)
	nj := &nodeJudge{Emitter: report.NewEmitter(t, templateArgs(in, fqdn)), in: in, t: t, fqdn: fqdn, from: from,
		nodeCount: len(views), listSeed: maphash.MakeSeed()}
	nj.sockets = nj.buildSocketIndex(views)
	nj.modes = make(map[string]collectorapi.DatapathMode, len(views))
	for _, v := range views {
		if v.Observation != nil {
			nj.modes[v.Node], _ = programmed.Owner(v.Observation)
		}
	}
	if c := t.Metadata.Collector; c != nil {
		for _, v := range views {
			if o := v.Observation; o != nil && o.Sections.Sockets != nil && o.Sections.Sockets.Data != nil && o.Sections.Sockets.Data.HostPID {
				c.HostPID = true
			}
		}
	}
	for i := range views {
		nj.judge(&views[i])
	}
	nj.judgeDNS(views)
	nj.judgeClientDroppedByDesign()
	nj.explainCauses()
	return nj
}

type nodeJudge struct {
	*report.Emitter
	in   *Input
	t    *report.ServiceTrace
	fqdn string
	// shares are the ports comparePort judged, per node, for the share table.
	shares map[string][]recordedShares
	// from is the --from client, nil without one.
	from       *report.PolicyClient
	eps        *endpointIndex
	sockets    *socketIndex
	readOrders *expect.ReadOrders
	// expectations and programmedPorts hold each node's expectation and
	// programmed ports, computed once (expectation, programmed).
	expectations map[string]*nodeExpectation
	// modes are the datapath owning the Service on each node observed
	// (programmed.Owner): its programmer's rules decide the expectation.
	modes           map[string]collectorapi.DatapathMode
	programmedPorts map[string]*nodeProgrammed
	// changedAt is when the Service last changed (serviceChangedAt).
	changedAt     time.Time
	changedAtDone bool
	// nodeIndependent: the expectation depends on a node's zone only
	// (expect.NodeIndependent); byZone then holds one per zone.
	nodeIndependent bool
	byZone          map[string]*nodeExpectation
	// endpointSets are the sets derived from a shared expectation's
	// endpoint lists, by the list (endpointSetOf).
	endpointSets map[endpointListKey]*endpointSet
	// lists are the distinct endpoint lists of the expectations, by hash
	// (internLists).
	lists    map[uint64][][]expect.ExpectedEndpoint
	listSeed maphash.Seed
	// probeSets are the probe scopes' expectation-derived sets, per
	// expectation (probeScope).
	probeSets map[string]*probeScope
	// nodeCount is the number of nodes judged.
	nodeCount int
}

func (nj *nodeJudge) skipped(layer report.LayerName) bool {
	return nj.t.Layer(layer).Status == report.StatusSkipped
}

// nodeResult records a node's status in a layer from the checks emitted for it.
func (nj *nodeJudge) nodeResult(layer report.LayerName, node string, forced report.Status, reason string) {
	l := nj.t.Layer(layer)
	if l.Status == report.StatusSkipped {
		return
	}
	st := forced
	if st == "" {
		st = report.StatusPass
		for _, c := range l.Checks {
			if c.Node == node && statusRank[c.Status] > statusRank[st] {
				st = c.Status
				reason = c.Title
			}
		}
		if st == report.StatusPass {
			reason = ""
		}
	}
	l.Nodes = append(l.Nodes, report.NodeResult{Node: node, Status: st, Reason: reason})
}

func (nj *nodeJudge) judge(v *NodeView) {
	if v.Observation == nil {
		reason := v.Failure
		if reason == "" {
			reason = "no observation"
		}
		if !nj.skipped(report.LayerDatapath) {
			nj.EmitNode(report.CodeNodeCollectorFailed, v.Node, report.Args{"reason": reason}, nil)
		} else if !nj.skipped(report.LayerRoute) {
			c := nj.NewNodeCheck(report.CodeNodeCollectorFailed, v.Node, report.Args{"reason": reason}, nil)
			nj.t.Layer(report.LayerRoute).Add(c)
		}
		for _, l := range report.NodeLayers {
			nj.nodeResult(l, v.Node, report.StatusUnknown, reason)
		}
		return
	}
	obs := v.Observation
	if !nj.skipped(report.LayerDatapath) {
		nj.judgeDatapath(v.Node, obs)
		nj.judgeMasquerade(v.Node, obs)
	}
	if !nj.skipped(report.LayerConntrack) {
		nj.judgeConntrack(v.Node, obs)
	}
	if !nj.skipped(report.LayerRoute) || !nj.skipped(report.LayerEndpoints) {
		nj.judgeRouteAndProbes(v.Node, obs)
	}
	if !nj.skipped(report.LayerEndpoints) {
		nj.judgeSockets(v.Node)
	}
	if s := obs.Sections.Probe; s != nil && s.Data != nil && s.Data.Client != nil {
		nj.judgeClient(v, s.Data.Client)
	}
	for _, l := range report.NodeLayers {
		nj.nodeResult(l, v.Node, "", "")
	}
}

// ---- conntrack ----

func (nj *nodeJudge) judgeConntrack(node string, obs *collectorapi.Observation) {
	s := obs.Sections.Conntrack
	if s == nil || s.Data == nil {
		msg := "section not collected"
		if s != nil && s.Error != "" {
			msg = s.Error
		}
		nj.EmitNode(report.CodeCTUnreadable, node, report.Args{"error": msg}, nil)
		return
	}
	ct := s.Data
	interval := strconv.Itoa(ct.SampleIntervalMillis)
	problems := 0
	if ct.StatsError != "" && ct.ProcStatError != "" {
		nj.EmitNode(report.CodeCTUnreadable, node, report.Args{"error": ct.StatsError}, nil)
		problems++
	}
	if d := ct.StatsDelta; d != nil {
		// Where the node's DNS flows explain insert_failed, the DNS race
		// checks (CT010/CT011) carry the counter alone.
		if d.InsertFailed > 0 && !dnsRaceExplains(ct) {
			clash := clashResolve(ct)
			total := uint64(0)
			if ct.Stats != nil {
				total = ct.Stats.InsertFailed
			}
			nj.EmitNode(report.CodeCTInsertFailed, node, report.Args{"delta": u64(d.InsertFailed), "interval": interval, "total": u64(total), "clash": clash}, nil,
				fieldValue("insertFailedDelta", u64(d.InsertFailed)))
			problems++
		}
		if d.Drop > 0 || d.EarlyDrop > 0 {
			nj.EmitNode(report.CodeCTDrops, node, report.Args{"delta": u64(d.Drop), "early": u64(d.EarlyDrop), "interval": interval}, nil,
				fieldValue("dropDelta", u64(d.Drop)), fieldValue("earlyDropDelta", u64(d.EarlyDrop)))
			problems++
		}
	}
	if ct.Max > 0 {
		pct := float64(ct.Count) * 100 / float64(ct.Max)
		if pct >= 80 {
			nj.EmitNode(report.CodeCTTableFull, node, report.Args{"percent": fmt.Sprintf("%.0f", pct), "count": i64(ct.Count), "max": i64(ct.Max)}, nil)
			problems++
		}
	}
	flows := 0
	if f := ct.Flows; f != nil {
		var gone, pinnedUDP []string
		goneCount, pinnedCount := 0, 0
		unNATed := map[string]bool{}
		for _, fe := range f.Frontends {
			flows += fe.Total
			frontend, _, _ := strings.Cut(fe.Frontend, "/")
			for _, b := range fe.Backends {
				switch {
				case b.Expected:
				case b.Backend == frontend:
					// The reply comes from the frontend itself: the flow was
					// never NATed (it was tried before kube-proxy programmed
					// the Service, or rejected). No backend pins it.
					unNATed[b.Backend] = true
					if strings.HasSuffix(fe.Frontend, "/UDP") && b.States["UNREPLIED"] > 0 {
						pinnedUDP = append(pinnedUDP, fmt.Sprintf("%s (%d flows)", fe.Frontend, b.States["UNREPLIED"]))
						pinnedCount += b.States["UNREPLIED"]
					}
				default:
					// A closed connection (TIME_WAIT, CLOSE) carries nothing
					// more: after a rollout, and after svctrace's own
					// probes, those linger to replaced Pods and hang nothing.
					live := b.Count - b.States["TIME_WAIT"] - b.States["CLOSE"]
					if live <= 0 {
						continue
					}
					gone = append(gone, fmt.Sprintf("%s (%d flows via %s)", b.Backend, live, fe.Frontend))
					goneCount += live
				}
			}
			nj.skew(node, fe, f.ExpectedBackends)
		}
		if goneCount > 0 {
			var raw []string
			for _, fl := range f.Unexpected {
				if !unNATed[fl.Backend] && fl.TCPState != "TIME_WAIT" && fl.TCPState != "CLOSE" {
					raw = append(raw, fmt.Sprintf("%s %s | reply %s %s", fl.Protocol, fl.Original, fl.Reply, fl.TCPState))
				}
			}
			nj.EmitNode(report.CodeCTStaleFlows, node, report.Args{"count": strconv.Itoa(goneCount), "backends": listNames(gone)}, raw,
				fieldItems("goneBackends", gone))
			problems++
		}
		// A UDP flow created while the Service had no rules (or no
		// endpoint) is never NATed, and every later datagram with the same
		// addresses and ports matches it and skips the nat table: the
		// client's packets go nowhere until the entry expires, which it
		// never does while the client keeps sending. kube-proxy deletes such
		// entries when a UDP Service gains endpoints (conntrack cleanup in
		// pkg/proxy/conntrack); one that survives is the blackhole.
		if len(pinnedUDP) > 0 && len(nj.endpointIndex().ready) > 0 {
			var raw []string
			for _, fl := range f.Unexpected {
				if strings.EqualFold(fl.Protocol, "udp") && unNATed[fl.Backend] {
					raw = append(raw, fmt.Sprintf("%s %s | reply %s %s", fl.Protocol, fl.Original, fl.Reply, strings.Join(fl.Status, ",")))
				}
			}
			nj.EmitNode(report.CodeCTUnNATedUDP, node, report.Args{"count": strconv.Itoa(pinnedCount), "frontends": listNames(pinnedUDP)}, raw,
				fieldItems("frontends", pinnedUDP))
			problems++
		}
	}
	problems += nj.judgeConntrackFailModes(node, obs, ct)
	if problems == 0 {
		nj.EmitNode(report.CodeCTHealthy, node, report.Args{"count": i64(ct.Count), "max": i64(ct.Max), "interval": interval, "flows": strconv.Itoa(flows)}, nil)
	}
}

// skew explains an uneven spread of existing connections: iptables and
// nftables balance new connections, so a few long-lived ones stay put.
func (nj *nodeJudge) skew(node string, fe collectorapi.FrontendFlows, expectedBackends []string) {
	var top *collectorapi.BackendFlows
	for i, b := range fe.Backends {
		if b.Expected && (top == nil || b.Count > top.Count) {
			top = &fe.Backends[i]
		}
	}
	if fe.Total < 10 || top == nil {
		return
	}
	// The backends this frontend can reach: the expected ones on the same
	// target port (a backend with no flow at all is absent from fe.Backends).
	_, port, _ := net.SplitHostPort(top.Backend)
	candidates := 0
	for _, b := range expectedBackends {
		if _, p, _ := net.SplitHostPort(b); p == port {
			candidates++
		}
	}
	if candidates < 2 {
		return
	}
	share := float64(top.Count) / float64(fe.Total)
	// Skewed: one backend holds well over its fair share (80% of two, 67%
	// of three, half or more of four and up).
	threshold := math.Max(0.5, math.Min(0.8, 2.0/float64(candidates)))
	if share > threshold {
		nj.EmitNode(report.CodeCTSkew, node, report.Args{"share": fmt.Sprintf("%.0f", share*100), "total": strconv.Itoa(fe.Total),
			"frontend": fe.Frontend, "backend": top.Backend}, nil)
	}
}

// ---- route and probes ----

func (nj *nodeJudge) judgeRouteAndProbes(node string, obs *collectorapi.Observation) {
	eps := nj.endpointIndex()
	routeFailed := map[string]bool{}
	if !nj.skipped(report.LayerRoute) {
		routeFailed = nj.judgeRoutes(node, obs, eps.node)
	}
	nj.judgeProbes(node, obs, eps.ready, routeFailed, eps.pod)
}

// endpointIndex maps endpoint IPs to their node, readiness and Pod. It does
// not depend on the node being judged, so it is built once per trace.
type endpointIndex struct {
	node  map[string]string
	ready map[string]bool
	pod   map[string]string
}

func (nj *nodeJudge) endpointIndex() *endpointIndex {
	if nj.eps != nil {
		return nj.eps
	}
	idx := &endpointIndex{node: map[string]string{}, ready: map[string]bool{}, pod: map[string]string{}}
	for _, sl := range nj.in.Slices {
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip := e.Addresses[0]
			if e.NodeName != nil {
				idx.node[ip] = *e.NodeName
			}
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				idx.ready[ip] = true
			}
			if e.TargetRef != nil {
				idx.pod[ip] = e.TargetRef.Name
			}
		}
	}
	nj.eps = idx
	return idx
}

func (nj *nodeJudge) judgeRoutes(node string, obs *collectorapi.Observation, epNode map[string]string) map[string]bool {
	failed := map[string]bool{}
	s := obs.Sections.Route
	if s == nil || s.Data == nil {
		msg := "section not collected"
		if s != nil && s.Error != "" {
			msg = s.Error
		}
		nj.EmitNode(report.CodeRTUnreadable, node, report.Args{"error": msg}, nil)
		return failed
	}
	r := s.Data
	problems := 0
	if r.IPv4Forward == "0" {
		var local []string
		for ip, n := range epNode {
			if n == node {
				local = append(local, ip)
			}
		}
		sort.Strings(local)
		pods := ""
		if len(local) > 0 {
			pods = "; endpoints on this node (" + strings.Join(local, ", ") + ") are unreachable from other nodes and from outside"
		}
		nj.EmitNode(report.CodeRTForwardOff, node, report.Args{"forward": r.IPv4Forward, "pods": pods}, []string{"net.ipv4.ip_forward = " + r.IPv4Forward})
		problems++
	}
	var noRoute, raw []string
	down := map[string][]string{}
	devices := map[string]bool{}
	strict, strictDev := "", ""
	for _, rt := range r.Routes {
		line := fmt.Sprintf("%s dev %s via %s type %s", rt.Destination, orNone(rt.Device), orNone(rt.Gateway), orNone(rt.Type))
		switch {
		case rt.Error != "":
			noRoute = append(noRoute, rt.Destination)
			raw = append(raw, rt.Destination+": "+rt.Error)
			failed[rt.Destination] = true
		case rt.Type != "" && rt.Type != "unicast" && rt.Type != "local":
			noRoute = append(noRoute, rt.Destination)
			raw = append(raw, line)
			failed[rt.Destination] = true
		case rt.Link != nil && (!rt.Link.AdminUp || rt.Link.OperState == "down"):
			key := rt.Link.Name + " (admin " + upDown(rt.Link.AdminUp) + ", oper " + rt.Link.OperState + ")"
			down[key] = append(down[key], rt.Destination)
			failed[rt.Destination] = true
		default:
			if rt.Device != "" {
				devices[rt.Device] = true
			}
			if strict == "" && effectiveRPFilter(r.RPFilterAll, rt.RPFilterDevice) == 1 {
				strict, strictDev = rt.Device, rt.RPFilterDevice
			}
		}
	}
	if len(noRoute) > 0 {
		nj.EmitNode(report.CodeRTNoRoute, node, report.Args{"ips": listNames(noRoute), "detail": strings.Join(capLines(raw, maxListed), "; ")}, raw)
		problems++
	}
	for link, ips := range down {
		nj.EmitNode(report.CodeRTDeviceDown, node, report.Args{"ips": listNames(ips), "device": strings.SplitN(link, " ", 2)[0], "state": link}, nil)
		problems++
	}
	if strict != "" {
		// Strict rp_filter is only a problem with asymmetric paths; keep it
		// visible as a warning so it is on the list when Pods time out.
		nj.EmitNode(report.CodeRTRPFilter, node, report.Args{"device": strict, "all": r.RPFilterAll, "deviceValue": strictDev}, nil)
		problems++
	}
	problems += nj.judgeRouteFailModes(node, obs, r)
	if problems == 0 {
		nj.EmitNode(report.CodeRTHealthy, node, report.Args{"count": strconv.Itoa(len(r.Routes)), "devices": strings.Join(sortedKeys(devices), ", "), "forward": r.IPv4Forward}, nil)
	}
	return failed
}

// effectiveRPFilter is the reverse-path filter mode the kernel applies on a
// device: IN_DEV_RPFILTER is IN_DEV_MAXCONF(idev, RP_FILTER), the larger of
// net.ipv4.conf.all.rp_filter and net.ipv4.conf.<dev>.rp_filter, which
// __fib_validate_source (net/ipv4/fib_frontend.c) checks; 1 is strict, 2
// loose, 0 off. It is -1 when either value is unknown, since the other
// alone cannot rule out loose mode.
func effectiveRPFilter(all, dev string) int {
	a, errA := strconv.Atoi(strings.TrimSpace(all))
	d, errD := strconv.Atoi(strings.TrimSpace(dev))
	if errA != nil || errD != nil {
		return -1
	}
	return max(a, d)
}

// ---- dns ----

// judgeDNS compares the live answers with the expected ones. Every node asks
// the same servers, so identical results are reported once.
func (nj *nodeJudge) judgeDNS(views []NodeView) {
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

// ---- helpers ----

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
		if m[x] < 0 {
			return false
		}
	}
	return true
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "nothing"
	}
	return strings.Join(l, ", ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boolKeys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func capLines(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	out := append([]string{}, l[:n]...)
	return append(out, fmt.Sprintf("… %d more", len(l)-n))
}

func upDown(b bool) string {
	if b {
		return "up"
	}
	return "down"
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }
func i64(v int64) string  { return strconv.FormatInt(v, 10) }

func orTCP(p string) string {
	if p == "" {
		return "TCP"
	}
	return p
}
