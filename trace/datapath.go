package trace

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// shareTolerance is how far, as a fraction of the fair share, an endpoint's
// share of new connections may be from 1/n. kube-proxy's iptables
// probabilities are rounded to 10 decimals (computeProbability) and again by
// the kernel (2^-31 steps), which puts shares up to about 1.4e-6 of the fair
// share off at 5,000 endpoints; nftables and IPVS shares are exact. 1% of
// the fair share leaves that far behind and still catches a doubled or a
// missing share at any size, which an absolute tolerance cannot once the
// fair share itself is below it.
const shareTolerance = 0.01

// judgeDatapath decides which datapath owns the Service on this node, turns
// what it programmed into programmedPorts and compares each with kube-proxy's
// expectation for this node.
func (nj *nodeJudge) judgeDatapath(node string, obs *collectorapi.Observation) {
	svc := nj.in.Service
	ne := nj.expectation(node)
	expect, choices := ne.expect, ne.choices
	nj.proxyHealth(node, obs)

	np := nj.programmed(node, obs)
	mode, owner := np.Mode, np.Owner
	if programmed.IsEBPF(mode) {
		nj.EmitNode(report.CodeDPEBPFOwner, node, report.Args{"owner": owner, "detail": "the collector reads the eBPF maps instead"}, nil)
		nj.judgeCilium(node, obs, expect, choices)
		return
	}
	for _, e := range np.Errors {
		nj.EmitNode(report.CodeDPSectionError, node, report.Args{"section": e.Section, "error": e.Error}, nil)
	}
	nj.EmitNode(report.CodeDPOwner, node, report.Args{"owner": owner}, nil)
	if programmed.IsIPVS(mode) {
		// cmd/kube-proxy/app/server_linux.go logs this and records an
		// IPVSDeprecation Event at every start in IPVS mode.
		nj.EmitNode(report.CodeDPIPVSDeprecated, node, nil, nil)
		nj.judgeIPVSNode(node, obs)
	}
	for _, lo := range np.Leftovers {
		nj.EmitNode(report.CodeDPLeftovers, node, report.Args{"datapath": lo.Active, "other": lo.Other, "evidence": lo.Evidence}, lo.Raw)
	}
	if _, ignored := svc.Labels[labelServiceProxyName]; ignored {
		nj.EmitNode(report.CodeDPIgnoredByProxy, node, nil, nil)
		return
	}
	if expect == nil {
		return
	}
	for i, pe := range expect {
		if !nj.portSelected(pe.PortName, pe.Port) || np.unreadFor(pe.Family) != "" {
			// DP021 above says what could not be read.
			continue
		}
		pp := findProgrammed(np.Ports, pe)
		if choices != nil {
			pe = fit(choices, i, pp)
		}
		nj.comparePort(node, obs, mode, pe, pp)
	}
}

// nodeExpectation is what kube-proxy should program on one node: the
// expectation for the node's zone and, when the slices can be read in more
// than one order or the zone is unknown, the other answers kube-proxy may
// have reached. It is computed once per node and shared by the datapath
// checks, the probes and the endpoint matrix, so they agree.
type nodeExpectation struct {
	zone    string
	expect  []expect.PortExpectation
	choices *expect.Choices
}

// expectation returns the node's expectation, computing it the first time.
func (nj *nodeJudge) expectation(node string) *nodeExpectation {
	if ne, ok := nj.expectations[node]; ok {
		return ne
	}
	svc := nj.in.Service
	zone, zoneKnown := nodeZone(nj.in, node)
	if nj.expectations == nil {
		nj.expectations = map[string]*nodeExpectation{}
		nj.byZone = map[string]*nodeExpectation{}
		nj.nodeIndependent = expect.NodeIndependent(svc, nj.in.Slices)
	}
	// Where the node's name changes nothing, the nodes of a zone share one
	// expectation: computed once, and the same object, so that what is
	// derived from it (the endpoint sets the checks and the grid compare
	// against) is derived once too.
	rules := programmed.RulesOf(nj.modes[node])
	zoneKey := fmt.Sprintf("%t/%s/%v", zoneKnown, zone, rules)
	if nj.nodeIndependent {
		if ne := nj.byZone[zoneKey]; ne != nil {
			nj.expectations[node] = ne
			return ne
		}
	}
	ne := &nodeExpectation{zone: zone,
		expect: expect.ExpectForProgrammer(svc, nj.in.Slices, node, map[string]string{corev1.LabelTopologyZone: zone}, rules)}
	// Judging against an empty zone would expect every endpoint where
	// kube-proxy, knowing its zone, programs only that zone's; judging one
	// slice order would call kube-proxy's pick of a duplicate wrong.
	if nj.readOrders == nil {
		nj.readOrders = expect.NewReadOrders(nj.in.Slices)
	}
	ne.choices = expect.ChoicesForProgrammer(svc, nj.readOrders, node, zone, zoneKnown, rules)
	nj.internLists(ne.expect)
	if ne.choices != nil {
		for _, set := range ne.choices.Sets {
			nj.internLists(set)
		}
	}
	nj.expectations[node] = ne
	if nj.nodeIndependent {
		nj.byZone[zoneKey] = ne
	}
	return ne
}

// nodeZone is the zone kube-proxy on node matches zone hints against: its
// Node's topology.kubernetes.io/zone label (NodeTopologyConfig feeds the
// proxier the node's labels). When the Node was not read, the EndpointSlice
// controller's copy of that label on the node's own endpoints (endpoint
// zone) stands in, if they agree. known is false when neither says.
func nodeZone(in *input.Input, node string) (zone string, known bool) {
	if n := in.Nodes[node]; n != nil {
		return n.Labels[corev1.LabelTopologyZone], true
	}
	zones := map[string]bool{}
	for _, sls := range [][]discoveryv1.EndpointSlice{in.Slices, in.DNSSlices} {
		for i := range sls {
			for _, e := range sls[i].Endpoints {
				if e.NodeName != nil && *e.NodeName == node && e.Zone != nil && *e.Zone != "" {
					zones[*e.Zone] = true
				}
			}
		}
	}
	if len(zones) == 1 {
		for z := range zones {
			return z, true
		}
	}
	return "", false
}

// fit picks, for the i-th port expectation, the choice the programmed
// endpoints match best: kube-proxy programs one of them, so rules that
// match one are healthy and rules that match none are a real fault. Ties go
// to the first (the slices as listed, no zone filtering).
func fit(c *expect.Choices, i int, pp *programmed.Port) expect.PortExpectation {
	var best expect.PortExpectation
	bestScore := -1
	for _, set := range c.Sets {
		cand := set[i]
		want := map[string]bool{}
		for _, e := range cand.Internal {
			want[e.String()] = true
		}
		score := 0
		if pp != nil {
			for _, e := range pp.Endpoints {
				if want[e.Endpoint] {
					delete(want, e.Endpoint)
				} else {
					score++
				}
			}
		}
		score += len(want)
		if bestScore < 0 || score < bestScore {
			best, bestScore = cand, score
		}
	}
	best.ZoneAssumed = c.ZoneAssumed
	best.OrderDependent = c.OrderDependent
	return best
}

// nodeProgrammed is what a node's datapath programmed for the Service, read
// once per node from its observation (programmed.Read), and per IP family
// why its rules may be behind the API.
type nodeProgrammed struct {
	*programmed.Node
	// pending holds, per IP family, why the rules may be behind the API
	// (syncPending); "" when nothing says so.
	pending map[corev1.IPFamily]string
}

// pendingFor says why family f's rules may only be behind the API, "" when
// nothing says so. A port of no known family takes IPv4's reason first.
func (np *nodeProgrammed) pendingFor(f corev1.IPFamily) string {
	if np == nil {
		return ""
	}
	if f == "" {
		return cmp.Or(np.pending[corev1.IPv4Protocol], np.pending[corev1.IPv6Protocol])
	}
	return np.pending[f]
}

// unreadFor says why the rules of family f could not be read, "" when they
// were.
func (np *nodeProgrammed) unreadFor(f corev1.IPFamily) string {
	if np == nil {
		return ""
	}
	return np.UnreadFor(f)
}

// programmed returns what obs says node programmed, reading it the first time.
func (nj *nodeJudge) programmed(node string, obs *collectorapi.Observation) *nodeProgrammed {
	if np, ok := nj.programmedPorts[node]; ok {
		return np
	}
	np := &nodeProgrammed{Node: programmed.Read(obs)}
	for _, f := range programmed.Families {
		if why := syncPending(obs, np.Mode, f, nj.serviceChangedAt()); why != "" {
			if np.pending == nil {
				np.pending = map[corev1.IPFamily]string{}
			}
			np.pending[f] = why
		}
	}
	if nj.programmedPorts == nil {
		nj.programmedPorts = map[string]*nodeProgrammed{}
	}
	nj.programmedPorts[node] = np
	return np
}

// findProgrammed is the programmed port for pe.
func findProgrammed(ports []programmed.Port, pe expect.PortExpectation) *programmed.Port {
	return programmed.Find(ports, pe.PortName, pe.Protocol, pe.Port, pe.Family)
}

// portSelected applies --port.
func (nj *nodeJudge) portSelected(name string, port int32) bool {
	p := nj.t.Metadata.Port
	return p == "" || p == name || p == strconv.Itoa(int(port))
}

func (nj *nodeJudge) comparePort(node string, obs *collectorapi.Observation, mode collectorapi.DatapathMode, pe expect.PortExpectation, pp *programmed.Port) {
	nj.recordShares(node, pe, pp)
	svc := nj.in.Service
	portName := servicePortLabel(nj.in.Namespace, nj.in.Name, pe)
	datapath := string(mode)
	if pp != nil {
		datapath = pp.Datapath
	}
	base := report.Args{"port": portName, "datapath": datapath, report.ArgFamily: string(pe.Family)}
	with := func(extra report.Args) report.Args {
		out := report.Args{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	want := pe.Internal
	if !pe.HasAnyEndpoints {
		if pp != nil && pp.Rejected {
			nj.EmitNode(report.CodeDPRejectNoEndpoints, node, base, pp.Evidence)
		}
		return
	}
	if len(want) == 0 && !pe.InternalPolicyLocal {
		return
	}
	// Rules that are behind the API only because kube-proxy has not
	// applied the Service's latest change yet, or ahead of the API read
	// because an endpoint changed while the node was read, are a warning,
	// not a fault.
	lag := nj.lagOf(node, obs, pe.Family)
	if len(want) == 0 && (pp == nil || len(pp.Endpoints) == 0) {
		// internalTrafficPolicy Local with no local endpoint: kube-proxy
		// drops ClusterIP traffic here (a filter-table DROP "has no local
		// endpoints" in iptables mode, the no-endpoint drop in nftables
		// mode; no real server in IPVS mode). Rules that still send it to
		// endpoints fall through to the comparison below as stale.
		how := "no endpoint is programmed for it on this node"
		if pp != nil && pp.DroppedNoLocal {
			how = "the drop rule for it is programmed"
		}
		nj.EmitNode(report.CodeDPDroppedByDesign, node, with(report.Args{"how": how}), programmed.EvidenceOf(pp))
		// The external entries do not depend on the ClusterIP's policy.
		nj.compareFrontends(node, lag, pe, pp, with)
		return
	}
	pending, rc := lag.pending, lag.changes
	behind := func(why, what string, raw []string, fields ...report.Field) {
		nj.EmitNode(report.CodeDPSyncPending, node, with(report.Args{"what": what, "why": why, "programmer": programmed.ProgrammerOf(mode)}), raw, fields...)
	}
	if pp == nil || (!pp.Captured && !pp.Rejected) {
		var raw []string
		if pp != nil {
			raw = pp.Evidence
		}
		if why := lag.whole(); why != "" {
			behind(why, "no rules for it yet", raw)
			return
		}
		nj.EmitNode(report.CodeDPNoRules, node, with(report.Args{"why": nj.noRulesReason(obs, mode)}), raw)
		return
	}
	switch {
	case pp.RejectShadowed:
		why := "Another program rewrote the filter table after kube-proxy's last sync; kube-proxy writes it whole again at its next sync."
		if pp.FilterRestorer != "" {
			why = pp.FilterRestorer + " restores the whole filter table from its own earlier save, putting back what kube-proxy removed in between; kube-proxy writes it whole again at its next sync, and until then other filter rules kube-proxy changed may be stale too."
		}
		nj.EmitNode(report.CodeDPRejectShadowed, node, with(report.Args{"count": strconv.Itoa(len(pp.Endpoints)), "why": why}), pp.Evidence)
	case pp.Rejected:
		nj.faultOrLag(node, lag, report.CodeDPRejectWithEPs, base, "its REJECT for a Service without endpoints is still in place", pp.Evidence)
		return
	}
	wantSet := nj.endpointSetOf(want)
	gotSet := make(map[string]bool, len(pp.Endpoints))
	gotByIP := make(map[string]string, len(pp.Endpoints))
	for _, e := range pp.Endpoints {
		gotSet[e.Endpoint] = true
		if h, _, err := net.SplitHostPort(e.Endpoint); err == nil {
			gotByIP[h] = e.Endpoint
		}
	}
	var missing, stale []string
	problems := 0
	for _, ep := range wantSet.strings {
		if gotSet[ep] {
			continue
		}
		h, _, _ := net.SplitHostPort(ep)
		if got, ok := gotByIP[h]; ok {
			nj.faultOrLag(node, lag, report.CodeDPWrongDNATPort, with(report.Args{"got": got, "want": ep}), "it still DNATs to "+got+" instead of "+ep, pp.Evidence)
			problems++
			continue
		}
		missing = append(missing, ep)
	}
	for ep := range gotSet {
		if wantSet.has[ep] {
			continue
		}
		h, _, _ := net.SplitHostPort(ep)
		if _, ok := wantSet.byIP[h]; ok {
			continue // reported as a wrong port
		}
		stale = append(stale, ep)
	}
	sort.Strings(stale)
	// disagree reports endpoints the rules and the API read disagree on:
	// the ones a pending sync or a change during the read explains as
	// DP059 (what describes them), the rest as code.
	disagree := func(eps []string, listed func([]string) report.Field, what string, code string, args report.Args) {
		excused, faulty, why := rc.split(eps, pending)
		fields := func(eps []string) []report.Field {
			return append([]report.Field{listed(eps), nj.endpointsField("expected", wantSet)}, zoneFields(pe)...)
		}
		if len(excused) > 0 {
			behind(why, fmt.Sprintf(what, len(excused), listNames(excused)), pp.Evidence, fields(excused)...)
		}
		if len(faulty) > 0 {
			args["count"], args["endpoints"] = strconv.Itoa(len(faulty)), listNames(faulty)
			nj.EmitNode(code, node, with(args), pp.Evidence, fields(faulty)...)
		}
		problems++
	}
	if len(missing) > 0 {
		disagree(missing, func(eps []string) report.Field { return nj.missingField(wantSet, eps) },
			"%d endpoint(s) not programmed yet (%s)", report.CodeDPMissingEndpoints, report.Args{})
	}
	if len(stale) > 0 {
		disagree(stale, func(eps []string) report.Field { return fieldItems("stale", eps) },
			"%d endpoint(s) no longer listed still programmed (%s)", report.CodeDPStaleEndpoints, report.Args{"programmer": programmed.ProgrammerOf(mode)})
	}
	if n := len(pp.Endpoints); n > 0 {
		fair := 1.0 / float64(n)
		tolerance := shareTolerance * fair
		var off []string
		for _, e := range pp.Endpoints {
			if math.Abs(e.Share-fair) > tolerance {
				off = append(off, fmt.Sprintf("%s %.4g%%", e.Endpoint, e.Share*100))
			}
		}
		if pp.Unmatched > tolerance {
			off = append(off, fmt.Sprintf("unmatched %.4g%%", pp.Unmatched*100))
		}
		if len(off) > 0 {
			shares := fmt.Sprintf("%s (fair share %.4g%% each of %d)", listNames(off), fair*100, n)
			nj.EmitNode(report.CodeDPUnequalShares, node, with(report.Args{"shares": shares}), pp.Evidence,
				fieldItems("offShares", off), fieldValue("fairShare", fmt.Sprintf("%.6g", fair)))
			problems++
		}
	}
	affinity := svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP
	timeout := int(corev1.DefaultClientIPServiceAffinitySeconds)
	if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil {
		timeout = int(*c.ClientIP.TimeoutSeconds)
	}
	switch {
	case affinity && pp.AffinitySeconds == 0:
		nj.EmitNode(report.CodeDPAffinityMissing, node, with(report.Args{"timeout": strconv.Itoa(timeout)}), pp.Evidence)
		problems++
	case !affinity && pp.AffinitySeconds > 0:
		nj.EmitNode(report.CodeDPAffinityExtra, node, with(report.Args{"detail": fmt.Sprintf("timeout %ds", pp.AffinitySeconds)}), pp.Evidence)
		problems++
	case affinity && len(pp.AffinityTimeouts) > 0:
		// kube-proxy writes the Service's timeoutSeconds into every
		// affinity rule (iptables recent --seconds, the nftables set
		// timeout, the IPVS persistence timeout).
		if len(pp.AffinityTimeouts) == 1 && pp.AffinityTimeouts[0] == timeout {
			nj.EmitNode(report.CodeDPAffinityOK, node, with(report.Args{"timeout": strconv.Itoa(timeout)}), nil,
				fieldValue("programmedTimeoutSeconds", strconv.Itoa(timeout)))
			break
		}
		var got []string
		for _, s := range pp.AffinityTimeouts {
			got = append(got, strconv.Itoa(s))
		}
		nj.EmitNode(report.CodeDPAffinityTimeout, node, with(report.Args{"programmed": strings.Join(got, "s, "), "timeout": strconv.Itoa(timeout)}), pp.Evidence,
			fieldItems("programmedTimeoutSeconds", got), fieldValue("serviceTimeoutSeconds", strconv.Itoa(timeout)))
		problems++
	}
	problems += nj.compareFrontends(node, lag, pe, pp, with)
	problems += nj.judgeIPVSPort(node, obs, pe, pp, with)
	if pe.NodePort != 0 {
		if !pp.NodePortFound && len(pe.External) > 0 {
			nj.faultOrLag(node, lag, report.CodeDPNodePortMissing, with(report.Args{"nodePort": strconv.Itoa(int(pe.NodePort))}), "no rule for NodePort "+strconv.Itoa(int(pe.NodePort))+" yet", pp.Evidence)
			problems++
		}
		if pe.ExternalPolicyLocal && len(pe.Local) == 0 {
			if len(pe.External) > 0 {
				// IPVS does not drop: its NodePort virtual servers fall
				// back to the cluster endpoints (syncEndpoint, PR 97081;
				// expect.IPVSRules).
				nj.EmitNode(report.CodeDPIPVSETPLocalFallback, node, with(report.Args{"nodePort": strconv.Itoa(int(pe.NodePort))}), nil)
			} else {
				nj.EmitNode(report.CodeDPETPLocalNoLocal, node, with(report.Args{"nodePort": strconv.Itoa(int(pe.NodePort))}), nil)
			}
		}
	}
	if pe.InternalPolicyLocal && len(pe.Local) == 0 && len(pe.Internal) > 0 {
		// expect.IPVSRules: syncEndpoint gives the ClusterIP virtual server
		// the cluster endpoints; the comparison above judged those.
		nj.EmitNode(report.CodeDPIPVSITPLocalFallback, node, base, nil)
	}
	if problems == 0 {
		nj.EmitNode(report.CodeDPRulesMatch, node, with(report.Args{"count": strconv.Itoa(len(want))}), pp.Evidence,
			append([]report.Field{nj.endpointsField("endpoints", wantSet)}, zoneFields(pe)...)...)
	}
}

// zoneFields says which zone the topology hints were judged against when
// the node's zone was not known.
func zoneFields(pe expect.PortExpectation) []report.Field {
	var out []report.Field
	if pe.ZoneAssumed {
		z := "none (no hint for the node's zone: hints ignored)"
		if pe.TopologyMode == corev1.ServiceTrafficDistributionPreferSameZone {
			z = pe.Zone
		}
		out = append(out, fieldValue("assumedZone", z+"; the node's zone is not readable, so the rules were matched against each hinted zone"))
	}
	if len(pe.OrderDependent) > 0 {
		out = append(out, fieldItems("duplicateEndpoints", pe.OrderDependent),
			fieldValue("duplicateNote", "these IP:ports are in several EndpointSlices with different conditions; kube-proxy keeps the copy of the slice it reads last (first for terminating copies), in no fixed order, so the rules were matched against each order"))
	}
	return out
}

func servicePortLabel(ns, name string, pe expect.PortExpectation) string {
	spn := ns + "/" + name
	if pe.PortName != "" {
		spn += ":" + pe.PortName
	}
	s := fmt.Sprintf("%s (%d/%s", spn, pe.Port, pe.Protocol)
	if pe.Family == corev1.IPv6Protocol {
		s += ", IPv6"
	}
	return s + ")"
}

// noRulesReason explains an empty datapath with what the node told.
func (nj *nodeJudge) noRulesReason(obs *collectorapi.Observation, mode collectorapi.DatapathMode) string {
	if programmed.IsEBPF(mode) {
		return "its load-balancer maps have no frontend for this ClusterIP and port (the agent has not synced the Service, or does not manage it)"
	}
	var why []string
	if p := obs.Sections.Proxy; p != nil && p.Data != nil && p.Data.Mode == "" {
		why = append(why, "kube-proxy does not answer on its metrics port (stopped or crashed?)")
	}
	if mode == "" {
		why = append(why, "no kube-proxy datapath found on the node at all")
	}
	if len(why) == 0 {
		why = append(why, "kube-proxy has not programmed this Service (not synced since it was created or changed, or its rules were removed)")
	}
	return strings.Join(why, "; ")
}

// proxyHealth judges kube-proxy's own signals.
func (nj *nodeJudge) proxyHealth(node string, obs *collectorapi.Observation) {
	s := obs.Sections.Proxy
	if s == nil || s.Data == nil {
		return
	}
	p := s.Data
	if p.Mode == "" {
		if owner, _ := programmed.Owner(obs); programmed.IsEBPF(owner) {
			return // no kube-proxy expected
		}
		nj.EmitNode(report.CodeDPProxyUnreachable, node, report.Args{"address": p.ProxyMode.URL, "error": orNone(p.ProxyMode.Error)}, nil)
		return
	}
	if h := p.Healthz; h != nil && h.Healthy != nil && !*h.Healthy {
		nj.EmitNode(report.CodeDPProxyUnhealthy, node, report.Args{"lastUpdated": orNone(h.LastUpdated), "currentTime": orNone(h.CurrentTime)}, []string{h.Fetch.Body})
	}
	if ps, ok := proxySyncOf(obs, ""); ok {
		last, queued := ps.last, ps.queued
		now := float64(obs.CollectedAt.Unix())
		// A change queued more than a minute before the last sync means
		// kube-proxy is failing to apply it.
		if queued > 0 && last > 0 && queued > last && now-queued > 60 {
			nj.EmitNode(report.CodeDPProxyStaleSync, node, report.Args{"age": (time.Duration(now-last) * time.Second).String(),
				"queuedAge": (time.Duration(now-queued) * time.Second).String()}, nil)
		}
	}
}
