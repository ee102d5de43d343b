package trace

import (
	"cmp"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/netpol"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// The collector probes from the node's host network namespace, so a probe is
// not the client: NetworkPolicies may keep the node out where they admit the
// client, internalTrafficPolicy Local drops the ClusterIP on a node without a
// local endpoint, and a frontend can only reach the endpoints kube-proxy uses
// for that frontend on that node. Each probe failure is therefore explained
// by the first of these that accounts for it before a route or the datapath
// is blamed.

// probePort names one Service port as the collector labels its probes.
type probePort struct{ name, protocol string }

func probePortOf(name, protocol string) probePort {
	return probePort{name: name, protocol: strings.ToUpper(orTCP(protocol))}
}

// probeScope is what one node's probes are judged against.
type probeScope struct {
	// known is false when kube-proxy's expectation could not be computed
	// (a Service kube-proxy ignores): every ready endpoint of a port then
	// counts as usable.
	known bool
	// internal and external are, per port, the endpoints (ip:port/PROTO)
	// ClusterIP traffic and externally-facing traffic may reach from this
	// node.
	internal, external, cluster map[probePort]map[string]bool
	// remote holds, per other node, the endpoints its NodePort sends
	// external traffic to (its external set), computed when probed.
	remote map[string]map[probePort]map[string]bool
	// droppedByDesign are ports whose ClusterIP traffic kube-proxy drops on
	// this node: internalTrafficPolicy Local without a local endpoint.
	droppedByDesign map[probePort]bool
	// blocked are the endpoints (ip:port/PROTO) the NetworkPolicies do not
	// admit this node's address to.
	blocked map[string]policyBlock
}

// policyBlock is the NetworkPolicies' answer, for one client, at one
// endpoint they isolate and do not admit it to: Denied (the policies keep it
// out) or Unknown (an input they need was not read). Unknown is never
// counted as kept out, nor as admitted.
type policyBlock struct {
	policies []string
	verdict  netpol.Verdict
	reason   string
}

// denied says the policies keep the client out: a drop there is theirs.
func (b policyBlock) denied() bool { return b.verdict == netpol.Denied }

func (nj *nodeJudge) probeScope(node string) *probeScope {
	ne := nj.expectation(node)
	// Keyed by the expectation's (interned) lists, so nodes whose lists
	// are equal share the sets even when their expectations are their own.
	var key strings.Builder
	for _, pe := range ne.expect {
		for _, l := range [][]expect.ExpectedEndpoint{pe.Internal, pe.External, pe.Cluster} {
			if len(l) > 0 {
				fmt.Fprintf(&key, "%p/%d,", &l[0], len(l))
			} else {
				key.WriteString("-,")
			}
		}
		fmt.Fprintf(&key, "%t;", pe.InternalPolicyLocal && pe.HasAnyEndpoints)
	}
	if ne.expect == nil {
		key.WriteString("unknown")
	}
	shared := nj.probeSets[key.String()]
	if shared == nil {
		// Derived from the expectation alone: nodes that share one share
		// these sets (read only from here on).
		shared = &probeScope{
			internal:        map[probePort]map[string]bool{},
			external:        map[probePort]map[string]bool{},
			cluster:         map[probePort]map[string]bool{},
			droppedByDesign: map[probePort]bool{},
		}
		ports := ne.expect
		shared.known = ports != nil
		add := func(m map[probePort]map[string]bool, k probePort, eps []expect.ExpectedEndpoint, proto string) {
			if m[k] == nil {
				m[k] = map[string]bool{}
			}
			for _, e := range eps {
				m[k][e.String()+"/"+proto] = true
			}
		}
		for _, pe := range ports {
			k := probePortOf(pe.PortName, pe.Protocol)
			add(shared.internal, k, pe.Internal, k.protocol)
			add(shared.external, k, pe.External, k.protocol)
			add(shared.cluster, k, pe.Cluster, k.protocol)
			if pe.InternalPolicyLocal && pe.HasAnyEndpoints && len(pe.Internal) == 0 {
				shared.droppedByDesign[k] = true
			}
		}
		if nj.probeSets == nil {
			nj.probeSets = map[string]*probeScope{}
		}
		nj.probeSets[key.String()] = shared
	}
	sc := *shared
	sc.remote = map[string]map[probePort]map[string]bool{}
	sc.blocked = nj.policyBlocks(node)
	return &sc
}

// policyBlocks evaluates the NetworkPolicies for this node as the client.
// Only isolation that does not admit the node counts: an endpoint no policy
// selects is open to it.
func (nj *nodeJudge) policyBlocks(node string) map[string]policyBlock {
	client := netpol.Client{Kind: netpol.ClientNode, Name: node}
	if n := nj.in.Nodes[node]; n != nil {
		client = netpol.ClientFromNode(n)
	}
	return nj.policyBlocksFor(client)
}

// policyBlocksFor is, for one client, the endpoints (ip:port/PROTO) the
// policies do not admit it to (Denied) or whose answer is undetermined
// (Unknown), with the policies that decide them. For a Pod client both
// sides count: the backend's ingress and the client's own egress.
func (nj *nodeJudge) policyBlocksFor(client netpol.Client) map[string]policyBlock {
	out := map[string]policyBlock{}
	if !nj.in.PoliciesMayDecide() || len(nj.in.Pods) == 0 || nj.in.Service == nil {
		return out
	}
	for _, a := range policyAnswers(nj.in, client, portsForPolicy(nj.in.Service, nj.t.Metadata.Port)) {
		if a.Verdict == netpol.Allowed || a.Port.Number == 0 {
			continue
		}
		for _, ip := range a.Pod.IPs {
			addr, err := netip.ParseAddr(ip)
			if err != nil {
				continue
			}
			out[endpointKey(addr, uint16(a.Port.Number), strings.ToUpper(orTCP(string(a.Port.Protocol))))] =
				policyBlock{policies: a.Policies, verdict: a.Verdict, reason: a.Reason}
		}
	}
	return out
}

// usable is the set of endpoints a frontend of kind on port k may reach
// from this node; probed supplies the ready endpoints seen answering when
// kube-proxy's expectation is unknown.
//
// Traffic the node itself sends to an externalIP, a load-balancer IP or its
// own NodePort is "local" to kube-proxy: the external chain short-circuits it
// to the cluster endpoints whatever the externalTrafficPolicy ("route LOCAL
// traffic" in iptables, "fib saddr type local" in nftables). A NodePort of
// another node is that node's: its kube-proxy sends it to its external set.
// Only endpoints of the frontend address's family count (sameFamily).
func (nj *nodeJudge) usable(sc *probeScope, node string, p collectorapi.Probe, k probePort, probed map[probePort]map[string]bool) map[string]bool {
	return sameFamily(p.Address, nj.usableAnyFamily(sc, node, p, k, probed))
}

// sameFamily keeps the endpoint keys of address's IP family: each family's
// proxier sends a frontend of its family to that family's endpoints only
// (one proxier per family, kube-proxy's MetaProxier), so an IPv4 endpoint
// that answers says nothing of a NodePort probed at an IPv6 node address.
func sameFamily(address string, eps map[string]bool) map[string]bool {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || len(eps) == 0 {
		return eps
	}
	six := ap.Addr().Unmap().Is6()
	out := make(map[string]bool, len(eps))
	for k := range eps {
		host, _, _ := strings.Cut(k, "/")
		if e, err := netip.ParseAddrPort(host); err != nil || e.Addr().Unmap().Is6() == six {
			out[k] = true
		}
	}
	return out
}

// usableAnyFamily is usable before the family filter.
func (nj *nodeJudge) usableAnyFamily(sc *probeScope, node string, p collectorapi.Probe, k probePort, probed map[probePort]map[string]bool) map[string]bool {
	if !sc.known {
		return probed[k]
	}
	switch {
	case p.Target == "clusterIP":
		return sc.internal[k]
	case p.Target == "nodePort" && p.Node != "" && p.Node != node:
		if sc.remote[p.Node] == nil {
			sc.remote[p.Node] = map[probePort]map[string]bool{}
			for _, pe := range nj.expectation(p.Node).expect {
				pk := probePortOf(pe.PortName, pe.Protocol)
				if sc.remote[p.Node][pk] == nil {
					sc.remote[p.Node][pk] = map[string]bool{}
				}
				for _, e := range pe.External {
					sc.remote[p.Node][pk][e.String()+"/"+pk.protocol] = true
				}
			}
		}
		return sc.remote[p.Node][k]
	}
	return sc.cluster[k]
}

// frontendFailure is one frontend probe that got no answer.
type frontendFailure struct {
	port  probePort
	probe collectorapi.Probe
}

func (f frontendFailure) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", f.probe.Target, f.probe.Address, f.probe.Protocol, f.probe.ErrorClass)
}

func (nj *nodeJudge) judgeProbes(node string, obs *collectorapi.Observation, readyIP, routeFailed map[string]bool, podOf map[string]string) {
	s := obs.Sections.Probe
	if s == nil || s.Data == nil {
		return
	}
	// Timeouts on a node whose collector ran late, or was out of time
	// before the retry, are not evidence (lateCollector): undetermined.
	var lateFrontends, lateEndpoints, changedEndpoints []string
	frontendWhy, endpointWhy := "", ""
	slowKey := map[string]string{} // ready endpoint → its address, when it answered only on its second try
	sc := nj.probeScope(node)
	var okEndpoints int
	var slow []string                           // answered only on the second, longer try
	answered := map[probePort]map[string]bool{} // ready endpoints that answered, per port
	failedClass := map[string]string{}          // endpoint key → error class of its direct probe
	var refused, timeouts, policyExplained []string
	var undetermined undeterminedDrops
	policies := map[string]bool{}
	refusedPods := map[string]string{} // pod → refused ip:port
	var refusedKeys []string
	var frontends []frontendFailure
	var raw []string
	changed, _ := nj.changedDuringRead("")
	for _, p := range s.Data.Probes {
		ip := p.Address
		key := p.Address + "/" + strings.ToUpper(orTCP(p.Protocol))
		if ap, err := netip.ParseAddrPort(p.Address); err == nil {
			ip = ap.Addr().Unmap().String()
			key = endpointKey(ap.Addr(), ap.Port(), strings.ToUpper(orTCP(p.Protocol)))
		}
		if p.Outcome == "skipped" || p.Outcome == "no-reply" {
			continue
		}
		ok := p.Outcome == "connected" || p.Outcome == "reply"
		pk := probePortOf(p.PortName, p.Protocol)
		raw = append(raw, fmt.Sprintf("%s %s/%s: %s %s (%.1f ms)", p.Target, p.Address, p.Protocol, p.Outcome, p.ErrorClass, p.LatencyMillis))
		if p.Target != "endpoint" {
			if !ok {
				frontends = append(frontends, frontendFailure{port: pk, probe: p})
			}
			continue
		}
		if ok {
			// A not-ready endpoint that answers says nothing about the
			// endpoints the datapath uses.
			if readyIP[ip] {
				okEndpoints++
				if p.Attempts > 1 {
					slow = append(slow, p.Address)
					slowKey[key] = p.Address
				}
				if answered[pk] == nil {
					answered[pk] = map[string]bool{}
				}
				answered[pk][key] = true
			}
			continue
		}
		failedClass[key] = p.ErrorClass
		if !readyIP[ip] {
			// A not-ready endpoint is expected not to answer; the endpoints
			// layer already says why it is not ready.
			continue
		}
		if changed[ip] {
			// Its slice changed while the nodes were read: in a rollout the
			// Pod was deleted after the API read and stopped answering
			// before the probe, which says nothing of the route to it.
			changedEndpoints = append(changedEndpoints, p.Address+" ("+p.ErrorClass+")")
			continue
		}
		if b, isBlocked := sc.blocked[key]; isBlocked {
			name := p.Address
			if pod := podOf[ip]; pod != "" {
				name = "pod " + pod + " (" + p.Address + ")"
			}
			if !b.denied() {
				// Neither the policy's drop nor a path fault: which one
				// is not known.
				undetermined.add(name+" "+p.ErrorClass, b)
				continue
			}
			policyExplained = append(policyExplained, name+" "+p.ErrorClass)
			for _, pol := range b.policies {
				policies[pol] = true
			}
			continue
		}
		switch p.ErrorClass {
		case "refused":
			if nj.sockets != nil && nj.sockets.explainsRefusal(key) {
				// The Pod's own sockets say why (EPS014/EPS015 on its node,
				// with this probe as evidence): one finding, not two.
				continue
			}
			refusedKeys = append(refusedKeys, key)
			name := p.Address
			if pod := podOf[ip]; pod != "" {
				name = "pod " + pod + " (" + p.Address + ")"
				refusedPods[pod] = p.Address
			}
			refused = append(refused, name)
		default:
			if routeFailed[ip] {
				break
			}
			if why := lateCollector(obs, p.Attempts, s.Error); p.ErrorClass == collectorapi.ErrClassTimeout && why != "" {
				lateEndpoints = append(lateEndpoints, p.Address)
				endpointWhy = cmp.Or(endpointWhy, why)
				break
			}
			timeouts = append(timeouts, p.Address+" ("+p.ErrorClass+")")
		}
	}

	// A frontend failure is the datapath's only when nothing else accounts
	// for it: the ClusterIP dropped by design here, an endpoint it may pick
	// kept from this node by a policy, or an endpoint it may pick failing the
	// same way when probed directly.
	var datapathFails []string
	okCount := 0
	nodePortFails, nodePortOK := map[string][]string{}, map[string]int{}
	for _, f := range frontends {
		if f.probe.Target == "clusterIP" && sc.droppedByDesign[f.port] {
			continue // DP027 on this node says why
		}
		usable := nj.usable(sc, node, f.probe, f.port, answered)
		blockedHere, sameFailure, ok := false, false, 0
		slowBehind := ""
		var unsure *policyBlock
		for ep := range usable {
			if b, isBlocked := sc.blocked[ep]; isBlocked && b.denied() {
				blockedHere = true
				for _, pol := range b.policies {
					policies[pol] = true
				}
			} else if isBlocked && unsure == nil {
				unsure = &b
			}
			if c, failed := failedClass[ep]; failed && c == f.probe.ErrorClass {
				sameFailure = true
			}
			if answered[f.port][ep] {
				ok++
				// The first slow one by address: the message does not
				// depend on the map's order.
				if a := slowKey[ep]; a != "" && (slowBehind == "" || a < slowBehind) {
					slowBehind = a
				}
			}
		}
		// A frontend that timed out is no worse than the node: the
		// collector ran late, or an endpoint behind it answered this node
		// only when given twice the time, and the frontend's path to it
		// is longer still.
		why := ""
		if f.probe.ErrorClass == collectorapi.ErrClassTimeout {
			why = lateCollector(obs, f.probe.Attempts, s.Error)
			if why == "" && slowBehind != "" {
				why = "the endpoint " + slowBehind + " behind it answered this node only when probed again with twice the timeout: the node answers slowly"
			}
		}
		switch {
		case blockedHere:
			policyExplained = append(policyExplained, fmt.Sprintf("%s %s %s", f.probe.Target, f.probe.Address, f.probe.ErrorClass))
		case unsure != nil:
			undetermined.add(fmt.Sprintf("%s %s %s", f.probe.Target, f.probe.Address, f.probe.ErrorClass), *unsure)
		case sameFailure || ok == 0:
			// The endpoint findings carry it, or no endpoint the frontend
			// may use answered directly: nothing to compare with.
		case why != "":
			lateFrontends = append(lateFrontends, f.String())
			frontendWhy = cmp.Or(frontendWhy, why)
		case f.probe.Target == "nodePort":
			// The datapath at fault is that of the node owning the address.
			owner := f.probe.Node
			if owner == "" {
				owner = node
			}
			nodePortFails[owner] = append(nodePortFails[owner], f.String())
			nodePortOK[owner] = max(nodePortOK[owner], ok)
		default:
			datapathFails = append(datapathFails, f.String())
			okCount = max(okCount, ok)
		}
	}

	if len(refused) > 0 && !nj.skipped(report.LayerEndpoints) {
		hint := nj.declaredPortsHint(refusedPods)
		if nj.sockets != nil {
			hint += nj.sockets.refusalHint(refusedKeys)
		}
		nj.EmitNode(report.CodeEpsRefused, node, report.Args{"targets": listNames(refused), "hint": hint}, raw)
	}
	if len(timeouts) > 0 && !nj.skipped(report.LayerRoute) {
		nj.EmitNode(report.CodeRTPodTimeout, node, report.Args{"targets": listNames(timeouts)}, raw)
	}
	if len(policyExplained) > 0 && !nj.skipped(report.LayerRoute) {
		pols := sortedKeys(policies)
		nj.EmitNode(report.CodeRTPolicyExplains, node, report.Args{"targets": listNames(policyExplained), "policies": listOrNone(pols)}, raw,
			fieldItems("policies", pols))
	}
	if len(undetermined.targets) > 0 && !nj.skipped(report.LayerRoute) {
		c := nj.EmitNode(report.CodeRTPolicyUndetermined, node, undetermined.args(), raw, fieldItems("policies", undetermined.policyList()))
		c.Status = report.StatusUnknown
	}
	if len(datapathFails) > 0 && !nj.skipped(report.LayerDatapath) {
		nj.EmitNode(report.CodeDPClusterIPFails, node, report.Args{"frontend": listNames(datapathFails), "error": "see evidence",
			"okCount": strconv.Itoa(okCount)}, raw)
	}
	if len(changedEndpoints) > 0 && !nj.skipped(report.LayerRoute) {
		nj.EmitNode(report.CodeRTEndpointChanged, node, report.Args{"targets": listNames(changedEndpoints),
			"why": "their EndpointSlice entries changed while the nodes were read (a Pod going away stops answering before the API read says so)"}, raw)
	}
	if len(lateFrontends) > 0 && !nj.skipped(report.LayerDatapath) {
		c := nj.EmitNode(report.CodeDPProbeInconclusive, node, report.Args{"frontend": listNames(lateFrontends), "why": frontendWhy}, raw)
		c.Status = report.StatusUnknown
	}
	if len(lateEndpoints) > 0 && !nj.skipped(report.LayerRoute) {
		c := nj.EmitNode(report.CodeRTProbeInconclusive, node, report.Args{"targets": listNames(lateEndpoints), "why": endpointWhy}, raw)
		c.Status = report.StatusUnknown
	}
	for _, owner := range sortedKeys(boolKeys(nodePortFails)) {
		if nj.skipped(report.LayerDatapath) {
			break
		}
		nj.EmitNode(report.CodeDPNodePortFails, owner, report.Args{"frontend": listNames(nodePortFails[owner]), "from": node,
			"okCount": strconv.Itoa(nodePortOK[owner])}, raw)
	}
	hcs := s.Data.HealthChecks
	if len(hcs) == 0 && s.Data.HealthCheck != nil {
		hcs = []collectorapi.HealthCheckProbe{*s.Data.HealthCheck}
	}
	for i := range hcs {
		nj.judgeHealthCheck(node, obs, &hcs[i])
	}
	if okEndpoints > 0 && len(timeouts) == 0 && !nj.skipped(report.LayerRoute) {
		sample := ""
		if d := s.Data; d.EndpointsProbed < d.EndpointsTotal {
			sample = fmt.Sprintf(" (probed %d of %d endpoints: this node's first, then ready ones)", d.EndpointsProbed, d.EndpointsTotal)
		}
		if len(slow) > 0 {
			sample += fmt.Sprintf("; %s answered only when probed again with twice the timeout: slow, not unreachable", listNames(slow))
		}
		nj.EmitNode(report.CodeRTPodsReached, node, report.Args{"count": strconv.Itoa(okEndpoints), "sample": sample}, nil)
	}
}

// declaredPortsHint points at the likely mistake when endpoints refuse: the
// port they were probed on is not one the Pod declares, but others are (a
// Service targetPort that does not match the container). A declaration is
// not required, so this is a hint, not a finding of its own.
func (nj *nodeJudge) declaredPortsHint(refusedPods map[string]string) string {
	for i := range nj.in.Pods {
		p := &nj.in.Pods[i]
		addr, ok := refusedPods[p.Name]
		if !ok {
			continue
		}
		_, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		var declared []string
		match := false
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if strconv.Itoa(int(cp.ContainerPort)) == port {
					match = true
				}
				d := fmt.Sprintf("%d/%s", cp.ContainerPort, orTCP(string(cp.Protocol)))
				if cp.Name != "" {
					d = cp.Name + "=" + d
				}
				declared = append(declared, d)
			}
		}
		if !match && len(declared) > 0 {
			return fmt.Sprintf("; the Pods declare container port(s) %s, not %s: check the Service's targetPort", strings.Join(declared, ", "), port)
		}
	}
	return ""
}

// judgeHealthCheck compares kube-proxy's health-check answer with the
// EndpointSlices: it counts this node's ready endpoints by IP
// (LocalReadyEndpoints in pkg/proxy/endpointschangetracker.go) and answers
// 200 only while that count is above zero and kube-proxy is healthy. Load
// balancers send traffic only to nodes that answer 200. Each family's
// proxier runs its own health server (healthcheck.newServiceHealthServer
// listens on tcp4 or tcp6) over its own family's endpoints, so the address
// asked decides which family's endpoints count.
func (nj *nodeJudge) judgeHealthCheck(node string, obs *collectorapi.Observation, hc *collectorapi.HealthCheckProbe) {
	if hc == nil || nj.skipped(report.LayerDatapath) {
		return
	}
	family := corev1.IPv4Protocol
	if host, _, err := net.SplitHostPort(hc.Address); err == nil {
		family = programmed.AddressFamily(host)
	}
	want := map[string]bool{}
	for i := range nj.in.Slices {
		if input.SliceFamily(nj.in.Slices[i].AddressType) != family {
			continue
		}
		for _, e := range nj.in.Slices[i].Endpoints {
			if e.NodeName != nil && *e.NodeName == node && (e.Conditions.Ready == nil || *e.Conditions.Ready) && len(e.Addresses) > 0 {
				want[e.Addresses[0]] = true
			}
		}
	}
	a := report.Args{"address": hc.Address, "want": strconv.Itoa(len(want)), report.ArgFamily: string(family)}
	raw := []string{fmt.Sprintf("GET http://%s/: status %d localEndpoints %s %s", hc.Address, hc.StatusCode, intOrNone(hc.LocalEndpoints), hc.Error)}
	// A health server that counts other endpoints than the slices may only
	// be behind a change kube-proxy has not applied yet; one that does not
	// answer is not explained by that.
	lag := nj.lagOf(node, obs, family)
	lagArgs := func() report.Args {
		out := report.Args{"port": fmt.Sprintf("%s/%s (health check node port, %s)", nj.in.Namespace, nj.in.Name, family), "datapath": "kube-proxy"}
		for k, v := range a {
			out[k] = v
		}
		return out
	}
	what := "its health check on " + hc.Address + " still counts the endpoints before the change"
	switch {
	case hc.Error != "":
		a["detail"] = "does not answer (" + hc.ErrorClass + ")"
		nj.EmitNode(report.CodeDPHealthCheck, node, a, raw)
	case hc.LocalEndpoints != nil && *hc.LocalEndpoints != len(want):
		a["detail"] = fmt.Sprintf("reports %d local endpoint(s) (HTTP %d)", *hc.LocalEndpoints, hc.StatusCode)
		nj.faultOrLag(node, lag, report.CodeDPHealthCheck, lagArgs(), what, raw)
	case (hc.StatusCode == 200) != (len(want) > 0):
		a["detail"] = fmt.Sprintf("answers HTTP %d", hc.StatusCode)
		if hc.ServiceProxyHealthy != nil && !*hc.ServiceProxyHealthy {
			a["detail"] += ", kube-proxy itself unhealthy"
			nj.EmitNode(report.CodeDPHealthCheck, node, a, raw)
			break
		}
		nj.faultOrLag(node, lag, report.CodeDPHealthCheck, lagArgs(), what, raw)
	default:
		nj.EmitNode(report.CodeDPHealthCheckOK, node, report.Args{"address": hc.Address, "want": strconv.Itoa(len(want)), "status": strconv.Itoa(hc.StatusCode), report.ArgFamily: string(family)}, nil)
	}
}

func intOrNone(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

// undeterminedDrops are failed probes to endpoints where the policies'
// answer for the prober is undetermined: a policy drop and a path fault are
// equally possible, so they are neither explained nor blamed.
type undeterminedDrops struct {
	targets  []string
	policies map[string]bool
	reason   string
}

func (u *undeterminedDrops) add(target string, b policyBlock) {
	u.targets = append(u.targets, target)
	if u.policies == nil {
		u.policies = map[string]bool{}
	}
	for _, p := range b.policies {
		u.policies[p] = true
	}
	if u.reason == "" {
		u.reason = b.reason
	}
}

func (u *undeterminedDrops) policyList() []string { return sortedKeys(u.policies) }

func (u *undeterminedDrops) args() report.Args {
	return report.Args{"targets": listNames(u.targets), "policies": listOrNone(u.policyList()), "reason": u.reason}
}
