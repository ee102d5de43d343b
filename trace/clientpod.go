package trace

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/netpol"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Probes made from inside the --from Pod's network namespace are the
// client's own view: the NetworkPolicies that matter are the ones judged for
// that Pod, and a failure they do not explain is the path's. A pass there
// clears the node probes that policies kept out.

// judgeClient judges the client Pod's probes, resolver lookup and hairpin.
func (nj *nodeJudge) judgeClient(v *plan.NodeView, c *collectorapi.ClientProbeObservation) {
	node := v.Node
	base := report.Args{"client": c.Name, "clientNamespace": c.Namespace}
	args := func(extra report.Args) report.Args {
		out := report.Args{}
		for k, val := range base {
			out[k] = val
		}
		for k, val := range extra {
			out[k] = val
		}
		return out
	}
	if c.Skipped != "" {
		if !nj.skipped(report.LayerRoute) {
			nj.EmitNode(report.CodeRTClientSkipped, node, args(report.Args{"reason": c.Skipped}), nil)
		}
		return
	}

	eps := nj.endpointIndex()
	blocked := map[string]policyBlock{}
	if nj.from != nil && nj.from.Pod != nil {
		blocked = nj.policyBlocksFor(netpol.ClientFromPod(nj.from.Pod))
	}
	var raw []string
	answered := map[probePort]map[string]bool{}
	reached := map[string]bool{}
	var policyFails, unexplained, notEnforced []string
	var undetermined undeterminedDrops
	policies, bypassed := map[string]bool{}, map[string]bool{}
	var frontends []collectorapi.Probe
	// Timeouts from a collector that ran late are not evidence
	// (lateCollector): undetermined, as the node's own probes' are.
	late := func(p collectorapi.Probe) string {
		if p.ErrorClass != collectorapi.ErrClassTimeout || v.Observation == nil {
			return ""
		}
		sectionErr := ""
		if s := v.Observation.Sections.Probe; s != nil {
			sectionErr = s.Error
		}
		return lateCollector(v.Observation, p.Attempts, sectionErr)
	}
	var lateEndpoints, lateFrontends []string
	lateWhy := ""
	ok, total := 0, 0
	for _, p := range c.Probes {
		if p.Outcome == "skipped" || p.Outcome == "no-reply" {
			continue
		}
		total++
		raw = append(raw, fmt.Sprintf("from pod %s/%s: %s %s/%s: %s %s (%.1f ms)", c.Namespace, c.Name, p.Target, p.Address, p.Protocol, p.Outcome, p.ErrorClass, p.LatencyMillis))
		success := p.Outcome == "connected" || p.Outcome == "reply"
		if success {
			ok++
		}
		if p.Target != "endpoint" {
			frontends = append(frontends, p)
			continue
		}
		ap, err := netip.ParseAddrPort(p.Address)
		if err != nil {
			continue
		}
		key := endpointKey(ap.Addr(), ap.Port(), strings.ToUpper(orTCP(p.Protocol)))
		ip := ap.Addr().Unmap().String()
		name := p.Address
		if pod := eps.pod[ip]; pod != "" {
			name = "pod " + pod + " (" + p.Address + ")"
		}
		b, isBlocked := blocked[key]
		if isBlocked && !b.denied() {
			// The policies' answer for this client is undetermined: a
			// connection proves nothing about enforcement, a failure
			// nothing about the policy.
			switch {
			case success:
				reached[key] = true
			case eps.ready[ip]:
				undetermined.add(name+" "+p.ErrorClass, b)
			}
			continue
		}
		switch {
		case success && isBlocked:
			notEnforced = append(notEnforced, name)
			for _, pol := range b.policies {
				bypassed[pol] = true
			}
		case success:
			reached[key] = true
			pk := probePortOf(p.PortName, p.Protocol)
			if answered[pk] == nil {
				answered[pk] = map[string]bool{}
			}
			answered[pk][key] = true
		case !eps.ready[ip]:
			// Not ready: the endpoints layer says why.
		case isBlocked:
			policyFails = append(policyFails, name+" "+p.ErrorClass)
			for _, pol := range b.policies {
				policies[pol] = true
			}
		case p.ErrorClass == collectorapi.ErrClassRefused:
			// The node's probes and the Pod's sockets judge a refusal.
		case late(p) != "":
			lateEndpoints, lateWhy = append(lateEndpoints, p.Address), late(p)
		default:
			unexplained = append(unexplained, p.Address+" ("+p.ErrorClass+")")
		}
	}

	// A ClusterIP failure is a policy drop when an endpoint it may pick
	// denies the client, the datapath's when endpoints it may pick answer
	// the client directly.
	sc := nj.probeScope(node)
	var dpFails []string
	okCount := 0
	for _, p := range frontends {
		if p.Outcome == "connected" || p.Outcome == "reply" {
			continue
		}
		pk := probePortOf(p.PortName, p.Protocol)
		if sc.droppedByDesign[pk] {
			continue
		}
		usable := nj.usable(sc, node, p, pk, answered)
		blockedHere, n := false, 0
		var unsure *policyBlock
		for ep := range usable {
			if b, isBlocked := blocked[ep]; isBlocked && b.denied() {
				blockedHere = true
				for _, pol := range b.policies {
					policies[pol] = true
				}
			} else if isBlocked && unsure == nil {
				unsure = &b
			}
			if answered[pk][ep] {
				n++
			}
		}
		switch {
		case blockedHere:
			policyFails = append(policyFails, fmt.Sprintf("%s %s %s", p.Target, p.Address, p.ErrorClass))
		case unsure != nil:
			undetermined.add(fmt.Sprintf("%s %s %s", p.Target, p.Address, p.ErrorClass), *unsure)
		case n > 0 && late(p) != "":
			lateFrontends, lateWhy = append(lateFrontends, fmt.Sprintf("%s %s/%s (%s) from pod %s/%s", p.Target, p.Address, p.Protocol, p.ErrorClass, c.Namespace, c.Name)), late(p)
		case n > 0:
			dpFails = append(dpFails, fmt.Sprintf("%s %s/%s (%s)", p.Target, p.Address, p.Protocol, p.ErrorClass))
			okCount = max(okCount, n)
		}
	}

	if !nj.skipped(report.LayerRoute) {
		summary := fmt.Sprintf("%d of %d target(s) answered", ok, total)
		if total == 0 {
			summary = "no TCP or UDP target to probe"
		}
		nj.EmitNode(report.CodeRTClientProbed, node, args(report.Args{"netns": orNone(c.NetNS), "pid": strconv.Itoa(c.PID),
			"command": orNone(c.Command), "profile": orNone(v.Profile), "summary": summary}), raw)
		if len(unexplained) > 0 {
			nj.EmitNode(report.CodeRTClientTimeout, node, args(report.Args{"targets": listNames(unexplained)}), raw)
		}
		if len(lateEndpoints) > 0 {
			ck := nj.EmitNode(report.CodeRTProbeInconclusive, node, report.Args{"targets": listNames(lateEndpoints) + " from pod " + c.Namespace + "/" + c.Name, "why": lateWhy}, raw)
			ck.Status = report.StatusUnknown
		}
		if len(undetermined.targets) > 0 {
			nj.EmitNode(report.CodeRTClientPolicyUndetermined, node, args(undetermined.args()), raw, fieldItems("policies", undetermined.policyList()))
		}
		var cleared []string
		for key, b := range nj.policyBlocks(node) {
			if b.denied() && reached[key] {
				cleared = append(cleared, key)
			}
		}
		if len(cleared) > 0 {
			slices.Sort(cleared)
			nj.EmitNode(report.CodeRTClientClearsNode, node, args(report.Args{"targets": listNames(cleared)}), nil)
		}
	}
	if len(dpFails) > 0 && !nj.skipped(report.LayerDatapath) {
		nj.EmitNode(report.CodeDPClientClusterIPFails, node, args(report.Args{"frontend": listNames(dpFails), "okCount": strconv.Itoa(okCount)}), raw)
	}
	if len(lateFrontends) > 0 && !nj.skipped(report.LayerDatapath) {
		ck := nj.EmitNode(report.CodeDPProbeInconclusive, node, report.Args{"frontend": listNames(lateFrontends), "why": lateWhy}, raw)
		ck.Status = report.StatusUnknown
	}
	if !nj.skipped(report.LayerPolicy) {
		if len(policyFails) > 0 {
			pols := sortedKeys(policies)
			nj.t.Layer(report.LayerPolicy).Add(nj.NewNodeCheck(report.CodeNPClientDropSeen, node,
				args(report.Args{"targets": listNames(policyFails), "policies": listOrNone(pols)}), raw, fieldItems("policies", pols)))
		}
		if len(notEnforced) > 0 {
			pols := sortedKeys(bypassed)
			nj.t.Layer(report.LayerPolicy).Add(nj.NewNodeCheck(report.CodeNPClientNotEnforced, node,
				args(report.Args{"targets": listNames(notEnforced), "policies": listOrNone(pols)}), raw, fieldItems("policies", pols)))
		}
	}
	if c.Hairpin != nil && !nj.skipped(report.LayerDatapath) {
		nj.judgeHairpin(node, c.Hairpin, nj.hairpinRules(v.Observation, c.Hairpin.Self), args)
	}
	if c.Resolver != nil && !nj.skipped(report.LayerDNS) {
		nj.judgeClientResolver(node, c.Resolver, args)
	}
}

// judgeHairpin: an endpoint Pod reaching itself through the ClusterIP needs
// the datapath to masquerade it (kube-proxy's iptables endpoint chain marks
// traffic from the endpoint's own address, KUBE-POSTROUTING masquerades the
// mark; its nftables proxier matches a hairpin-connections set instead), and
// on a bridge CNI the bridge port to send a frame back where it came from.
// Connections that fail while others connect, and none lands on the Pod, are
// the ones sent back to it.
func (nj *nodeJudge) judgeHairpin(node string, h *collectorapi.HairpinProbe, rules string, args func(report.Args) report.Args) {
	switch {
	case h.BridgeHairpinMode == "0":
		rules += "; the Pod's bridge port " + h.HostInterface + " has hairpin_mode 0: the bridge does not send a frame back out the port it came in on (the kubelet's or CNI's hairpin setting)"
	case h.BridgeHairpinMode != "":
		rules += "; the Pod's bridge port " + h.HostInterface + " has hairpin_mode " + h.BridgeHairpinMode
	case h.HostInterface != "":
		rules += "; the Pod's node-side interface " + h.HostInterface + " is no bridge port (a routed CNI: no hairpin_mode to need)"
	}
	a := args(report.Args{"frontend": h.Frontend, "self": h.Self, "attempts": strconv.Itoa(h.Attempts),
		"failed": strconv.Itoa(h.Failed), "error": orNone(h.Error), "peer": orNone(h.PeerAddress), "rules": rules})
	raw := []string{fmt.Sprintf("hairpin %s to %s: %d attempt(s), %d reached itself, %d connected, %d failed (%s)",
		h.Frontend, h.Self, h.Attempts, h.SelfHits, h.Connected, h.Failed, h.Error)}
	switch {
	case h.SelfHits > 0:
		nj.EmitNode(report.CodeDPHairpinOK, node, a, raw)
	case h.Failed > 0:
		nj.EmitNode(report.CodeDPHairpinFails, node, a, raw)
	case h.Connected > 0:
		nj.EmitNode(report.CodeDPHairpinNotSelected, node, a, raw)
	}
}

// hairpinRules says what the node's datapath programs for traffic from the
// endpoint to itself, from the iptables or nftables reading.
func (nj *nodeJudge) hairpinRules(obs *collectorapi.Observation, self string) string {
	ap, err := netip.ParseAddrPort(self)
	if err != nil || obs == nil {
		return "the datapath's hairpin rules were not read"
	}
	ip := ap.Addr().String()
	if s := obs.Sections.IPTables; s != nil && s.Data != nil {
		for _, b := range s.Data.Backends {
			if !b.KubeProxyChains {
				continue
			}
			for _, p := range b.Ports {
				for _, ep := range p.Endpoints {
					if !strings.HasPrefix(ep.Endpoint, ip+":") && ep.DNAT != self {
						continue
					}
					if ep.Hairpin == "" {
						return fmt.Sprintf("%s (%s) has no \"-s %s -j KUBE-MARK-MASQ\" rule: the Pod's reply to itself is not masqueraded", ep.Name, b.Backend, ip)
					}
					masq := "KUBE-MARK-MASQ sets " + orNone(b.MasqMark)
					if len(b.MarkMasq) == 0 {
						masq = "no KUBE-MARK-MASQ rule was read"
					}
					return fmt.Sprintf("%s (%s) marks traffic from %s for masquerade (-s %s -j KUBE-MARK-MASQ); %s", ep.Name, b.Backend, ep.Hairpin, ep.Hairpin, masq)
				}
			}
		}
	}
	if s := obs.Sections.NFTables; s != nil && s.Data != nil && len(s.Data.Tables) > 0 {
		// kube-proxy's nftables proxier does not mark per endpoint: it adds
		// each local endpoint to the hairpin-connections set (ip . ip .
		// proto . port) and its masquerading chain masquerades "ct status
		// dnat" traffic matching the set. The set is not read.
		return fmt.Sprintf("kube-proxy (nftables) masquerades hairpin traffic through its hairpin-connections set (%s . %s . %s . %d), which the collector does not read",
			ip, ip, "tcp", ap.Port())
	}
	return "no endpoint chain for " + ip + " was read on this node"
}

// judgeClientResolver judges the lookup the Pod's own resolver made.
func (nj *nodeJudge) judgeClientResolver(node string, r *collectorapi.ClientResolver, args func(report.Args) report.Args) {
	if r.Error != "" {
		nj.EmitNode(report.CodeDNSClientUnreadable, node, args(report.Args{"error": r.Error}), nil)
		return
	}
	var queries, raw []string
	for _, q := range r.Queries {
		res := q.Rcode
		if q.Error != "" {
			res = q.Error
		}
		line := fmt.Sprintf("%s %s @%s: %s", q.Name, q.Type, q.Server, res)
		if len(q.Answers) > 0 {
			line += " " + strings.Join(answerData(q.Answers, q.Type, true), ",")
		}
		queries = append(queries, line)
		raw = append(raw, line+fmt.Sprintf(" (%.1f ms)", q.LatencyMillis))
	}
	a := args(report.Args{"name": r.Name, "answered": orNone(r.Answered), "addrs": "[" + strings.Join(r.Addrs, ", ") + "]",
		"servers": listOrNone(r.Nameservers), "search": listOrNone(r.Search), "ndots": strconv.Itoa(r.Ndots),
		"queries": strings.Join(queries, "; "), "libcNote": ""})
	fields := []report.Field{fieldItems("queries", queries)}
	switch {
	case r.Answered == "":
		nj.EmitNode(report.CodeDNSClientNoAnswer, node, a, raw, fields...)
	case !strings.EqualFold(strings.TrimSuffix(r.Answered, "."), nj.fqdn) || !nj.addrsAreService(r.Addrs):
		nj.EmitNode(report.CodeDNSClientElsewhere, node, a, raw, fields...)
	default:
		nj.EmitNode(report.CodeDNSClientResolves, node, a, raw, fields...)
	}
}

// addrsAreService: the addresses are the Service's ClusterIPs, or for a
// headless Service its endpoints'.
func (nj *nodeJudge) addrsAreService(addrs []string) bool {
	svc := nj.in.Service
	if svc == nil {
		return true
	}
	want := map[string]bool{}
	for _, ip := range svc.Spec.ClusterIPs {
		if ip != "None" && ip != "" {
			want[ip] = true
		}
	}
	if len(want) == 0 {
		return true
	}
	for _, a := range addrs {
		if !want[a] {
			return false
		}
	}
	return true
}

// judgeClientDroppedByDesign: internalTrafficPolicy Local drops ClusterIP
// traffic on a node without a usable local endpoint (DP027 there), which is a
// warning for a node, since other clients elsewhere are served. For the
// client named with --from, running on such a node, it is the failure: every
// connection it makes to the ClusterIP is dropped, whatever its probes show.
func (nj *nodeJudge) judgeClientDroppedByDesign() {
	if nj.from == nil || nj.skipped(report.LayerDatapath) {
		return
	}
	node, client := nj.from.NodeName, "node "+nj.from.NodeName
	if p := nj.from.Pod; p != nil {
		node, client = p.Spec.NodeName, "pod "+p.Namespace+"/"+p.Name
	}
	if node == "" {
		return
	}
	l := nj.t.Layer(report.LayerDatapath)
	if !slices.ContainsFunc(l.Checks, func(c report.Check) bool { return c.Code == report.CodeDPDroppedByDesign && c.Node == node }) {
		return
	}
	var endpointNodes []string
	for i := range nj.in.Slices {
		for _, e := range nj.in.Slices[i].Endpoints {
			if e.NodeName != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) && !slices.Contains(endpointNodes, *e.NodeName) {
				endpointNodes = append(endpointNodes, *e.NodeName)
			}
		}
	}
	slices.Sort(endpointNodes)
	c := nj.EmitNode(report.CodeDPClientDroppedByDesign, node, report.Args{"client": client, "endpointNodes": listOrNone(endpointNodes)}, nil)
	// The node's result was taken before: it now has this failure.
	for i := range l.Nodes {
		if r := &l.Nodes[i]; r.Node == node && statusRank[c.Status] > statusRank[r.Status] {
			r.Status, r.Reason = c.Status, c.Title
		}
	}
}
