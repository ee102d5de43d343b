package netpol

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Evaluate decides, for every backend Pod and Service port of in, whether
// the NetworkPolicies admit in.Client. It does no I/O and does not modify
// in; problems in the input (an unknown namespace, an invalid selector)
// become Unknown answers and notes, never errors. Policies are compiled
// per call, so concurrent calls are safe.
func Evaluate(in *Input) *Result {
	e := &evaluator{
		in:     in,
		nsSets: make(map[string]nsInfo),
		unread: make(map[string]bool, len(in.UnreadNamespaces)),
	}
	for _, ns := range in.UnreadNamespaces {
		e.unread[ns] = true
	}
	e.clientName = in.Client.String()
	res := &Result{Client: e.clientName, Notes: []string{EnforcementNote, OutOfScopeNote}}

	byNS := make(map[string][]*policy)
	for i := range in.Policies {
		p, err := compilePolicy(&in.Policies[i])
		if err != nil {
			res.Notes = append(res.Notes, err.Error())
			continue
		}
		byNS[p.ns] = append(byNS[p.ns], p)
	}

	var adminNotes []string
	e.admin, e.baseline, adminNotes = compileAdminPolicies(in.AdminNetworkPolicies, in.BaselineAdminNetworkPolicies)
	res.Notes = append(res.Notes, adminNotes...)

	client := in.Client
	kind := client.kind()
	clientEP := endpoint{
		pod:    kind == ClientPod,
		ns:     client.Namespace,
		labels: labels.Set(client.Labels),
		ips:    client.IPs,
		what:   client.String(),
	}
	e.clientEP = &clientEP
	if kind == ClientNode {
		res.Notes = append(res.Notes, NodeClientNote)
	}
	// The ingress peer side depends only on the client: decide it once.
	if kind != ClientAny {
		for _, ps := range byNS {
			for _, p := range ps {
				for _, r := range p.in {
					r.client = e.matchPeers(r, &clientEP)
				}
			}
		}
	}
	var cside *clientSide
	if kind == ClientPod {
		cside = e.clientEgress(byNS[client.Namespace], &clientEP)
	}

	ports := in.Ports
	res.Decisions = make([]Decision, 0, len(in.Backends)*len(ports))
	var matches []PolicyMatch
	var isolating []*policy
	var egressOnly []string
	for i := range in.Backends {
		pod := &in.Backends[i]
		ref := PodRef{Namespace: pod.Namespace, Name: pod.Name, Node: pod.Spec.NodeName}
		ips := PodIPs(pod)
		for _, ip := range ips {
			ref.IPs = append(ref.IPs, ip.String())
		}
		podLabels := labels.Set(pod.Labels)
		matches, isolating, egressOnly = nil, isolating[:0], egressOnly[:0]
		for _, p := range byNS[pod.Namespace] {
			if !p.sel.Matches(podLabels) {
				continue
			}
			matches = append(matches, PolicyMatch{Policy: p.key, PolicyTypes: p.types})
			if p.hasIn {
				isolating = append(isolating, p)
			} else {
				egressOnly = append(egressOnly, p.key)
			}
		}
		dst := endpoint{pod: true, ns: pod.Namespace, labels: podLabels, ips: ips, what: "pod " + ref.String()}
		pc := podCtx{pod: pod, dst: &dst, ref: ref, matches: matches, isolating: isolating, egressOnly: egressOnly}
		for _, tp := range ports {
			res.Decisions = append(res.Decisions, Decision{})
			e.decide(&res.Decisions[len(res.Decisions)-1], &pc, tp, cside)
		}
	}
	if kind == ClientPod && in.DNS != nil {
		res.DNS = e.dns(cside, in.DNS)
	}
	if in.Unevaluated != "" {
		// Policies not evaluated here may allow what these deny, or deny
		// what they allow: no answer stands.
		for i := range res.Decisions {
			d := &res.Decisions[i]
			if d.Allowed != Unknown {
				d.Allowed, d.AnySourceAdmitted = Unknown, false
				d.Reason += "; but " + in.Unevaluated
			}
		}
		if res.DNS != nil && (res.DNS.UDP != Unknown || res.DNS.TCP != Unknown) {
			res.DNS.UDP, res.DNS.TCP = Unknown, Unknown
			res.DNS.Reason += "; but " + in.Unevaluated
		}
		res.Notes = append(res.Notes, in.Unevaluated)
	}
	res.Summary = summarize(res, kind, len(ports))
	for _, note := range []string{IPBlockPodNote, HostNetworkBackendNote} {
		for i := range res.Decisions {
			if slices.Contains(res.Decisions[i].Caveats, note) {
				res.Notes = append(res.Notes, note)
				break
			}
		}
	}
	return res
}

type evaluator struct {
	in         *Input
	clientName string
	clientEP   *endpoint
	admin      []*adminPolicy // in the order they are matched
	baseline   *adminPolicy
	nsSets     map[string]nsInfo
	unread     map[string]bool
}

type nsInfo struct {
	set   labels.Set
	known bool
}

// nsLabels returns a namespace's labels with kubernetes.io/metadata.name,
// which the API server sets on every namespace; known is false when only
// that label is known.
func (e *evaluator) nsLabels(ns string) (labels.Set, bool) {
	if info, ok := e.nsSets[ns]; ok {
		return info.set, info.known
	}
	src, known := e.in.NamespaceLabels[ns]
	set := make(labels.Set, len(src)+1)
	for k, v := range src {
		set[k] = v
	}
	set[corev1.LabelMetadataName] = ns
	e.nsSets[ns] = nsInfo{set: set, known: known}
	return set, known
}

// endpoint is one side of a connection as policy peers see it.
type endpoint struct {
	pod    bool // on the Pod network (selectors can match it)
	ns     string
	labels labels.Set
	ips    []netip.Addr
	what   string // for messages: "pod shop/web-1"
}

// peerResult is a rule's peer side for one endpoint.
type peerResult struct {
	v        Verdict
	why      string
	viaBlock bool // admitted only through an ipBlock
}

func (e *evaluator) matchPeers(r *rule, ep *endpoint) peerResult {
	if r.allPeers {
		return peerResult{v: Allowed}
	}
	var block, unknown *peerResult
	var whys []string
	for _, pe := range r.peers {
		pr := e.matchPeer(pe, ep)
		switch pr.v {
		case Allowed:
			if !pr.viaBlock {
				return pr
			}
			if block == nil {
				block = &pr
			}
		case Unknown:
			if unknown == nil {
				unknown = &pr
			}
		default:
			whys = append(whys, pr.why)
		}
	}
	switch {
	case block != nil:
		return *block
	case unknown != nil:
		return *unknown
	}
	return peerResult{v: Denied, why: strings.Join(whys, "; ")}
}

func (e *evaluator) matchPeer(pe *peer, ep *endpoint) peerResult {
	if pe.err != nil {
		return peerResult{v: Unknown, why: pe.err.Error()}
	}
	if pe.block != nil {
		if len(ep.ips) == 0 {
			return peerResult{v: Unknown, why: "the IP of " + ep.what + " is not known, needed for " + pe.desc}
		}
		var excepted netip.Prefix
		for _, ip := range ep.ips {
			ok, ex := pe.block.contains(ip)
			if ok {
				return peerResult{v: Allowed, viaBlock: true}
			}
			if ex.IsValid() {
				excepted = ex
			}
		}
		if excepted.IsValid() {
			return peerResult{v: Denied, why: fmt.Sprintf("%s is in the excepted %s of %s", ep.what, excepted, pe.block.cidr)}
		}
		return peerResult{v: Denied, why: fmt.Sprintf("%s is outside %s", ep.what, pe.block.cidr)}
	}
	if !ep.pod {
		return peerResult{v: Denied, why: ep.what + " is not a Pod on the Pod network, so " + pe.desc + " does not match it"}
	}
	nsV, why := Allowed, ""
	switch {
	case pe.ns == nil:
		if ep.ns != pe.policyNS {
			nsV, why = Denied, ep.what+" is not in namespace "+pe.policyNS
		}
	case !pe.ns.Empty():
		set, known := e.nsLabels(ep.ns)
		switch {
		case !known && !pe.nsNameOnly:
			nsV, why = Unknown, "the labels of namespace "+ep.ns+" were not given, needed for namespaceSelector "+pe.ns.String()
			if e.in.NamespaceLabelsUnread != "" {
				why = "the labels of namespace " + ep.ns + " could not be read (" + e.in.NamespaceLabelsUnread + "), needed for namespaceSelector " + pe.ns.String()
			}
		case !pe.ns.Matches(set):
			nsV, why = Denied, "namespace "+ep.ns+" does not match namespaceSelector "+pe.ns.String()
		}
	}
	if pe.pod != nil && !pe.pod.Matches(ep.labels) {
		return peerResult{v: Denied, why: "the labels of " + ep.what + " do not match podSelector " + pe.pod.String()}
	}
	return peerResult{v: nsV, why: why}
}

func (r *rule) matchPorts(target PortRef, dst *corev1.Pod) Verdict {
	if r.allPorts {
		return Allowed
	}
	v := Denied
	for _, pt := range r.ports {
		switch pt.match(target, dst) {
		case Allowed:
			return Allowed
		case Unknown:
			v = Unknown
		}
	}
	return v
}

// outcome is the OR of the rules of some policies in one direction.
type outcome struct {
	v            Verdict
	allowing     *RuleRef
	viaBlockOnly bool
	unknownWhy   string
	evidence     []RuleEvidence
}

func evalRules(pols []*policy, dir Direction, peerOf func(*rule) peerResult, dst *corev1.Pod, target PortRef, targetText string) outcome {
	o := outcome{v: Denied}
	n := 0
	for _, p := range pols {
		n += max(1, len(p.in), len(p.eg))
	}
	o.evidence = make([]RuleEvidence, 0, n)
	for _, p := range pols {
		rules := p.in
		if dir == Egress {
			rules = p.eg
		}
		if len(rules) == 0 {
			o.evidence = append(o.evidence, RuleEvidence{
				RuleRef: RuleRef{Policy: p.key, Direction: dir, Index: -1},
				Summary: "no " + dir.lower() + " rules", Admits: Denied,
				Why: "a policy without " + dir.lower() + " rules admits nothing",
			})
			continue
		}
		for _, r := range rules {
			pr := peerOf(r)
			pv := r.matchPorts(target, dst)
			ev := RuleEvidence{RuleRef: r.ref, Summary: r.summary, Admits: and(pr.v, pv)}
			switch {
			case pv == Denied && pr.v != Allowed:
				ev.Why = pr.why + "; ports " + r.portText + " do not include " + targetText
			case pv == Denied:
				ev.Why = "ports " + r.portText + " do not include " + targetText
			case pr.v != Allowed:
				ev.Why = pr.why
			case pv == Unknown:
				ev.Why = "a named port in " + r.portText + " cannot be resolved without the destination Pod"
			}
			o.evidence = append(o.evidence, ev)
			switch ev.Admits {
			case Allowed:
				if o.v != Allowed || (o.viaBlockOnly && !pr.viaBlock) {
					ref := r.ref
					o.allowing = &ref
					o.viaBlockOnly = pr.viaBlock
				}
				o.v = Allowed
			case Unknown:
				if o.v == Denied {
					o.v = Unknown
					o.unknownWhy = ev.Why
				}
			}
		}
	}
	return o
}

func and(a, b Verdict) Verdict {
	switch {
	case a == Denied || b == Denied:
		return Denied
	case a == Unknown || b == Unknown:
		return Unknown
	}
	return Allowed
}

func policyKeys(pols []*policy) []string {
	out := make([]string, len(pols))
	for i, p := range pols {
		out[i] = p.key
	}
	return out
}

// selectPhrase is "policy a/x selects" or "policies a/x, a/y select".
func selectPhrase(keys []string, singular, plural string) string {
	if len(keys) == 1 {
		return "policy " + keys[0] + " " + singular
	}
	return "policies " + strings.Join(keys, ", ") + " " + plural
}

// podCtx is what the decisions for one backend Pod share.
type podCtx struct {
	pod        *corev1.Pod
	dst        *endpoint
	ref        PodRef
	matches    []PolicyMatch
	isolating  []*policy
	egressOnly []string
	keys       []string // policyKeys(isolating), built on first use
}

func (pc *podCtx) phrase(singular, plural string) string {
	if pc.keys == nil {
		pc.keys = policyKeys(pc.isolating)
	}
	return selectPhrase(pc.keys, singular, plural)
}

// nodeCaveats is shared by the decisions of a node client; its capacity
// equals its length so that an append by a caller copies it.
var nodeCaveats = []string{NodeClientNote}

// decide fills d for one backend Pod and one Service port.
func (e *evaluator) decide(d *Decision, pc *podCtx, tp TargetPort, cside *clientSide) {
	pod, dst := pc.pod, pc.dst
	target := resolveTarget(pod, tp)
	*d = Decision{Pod: pc.ref, Port: target, Isolated: len(pc.isolating) > 0, MatchingPolicies: pc.matches}
	if e.in.Client.kind() == ClientNode {
		d.CNIDependent = true
		d.Caveats = nodeCaveats[:1:1]
	}
	if pod.Spec.HostNetwork {
		d.CNIDependent = true
		d.Caveats = append(d.Caveats, HostNetworkBackendNote)
	}
	targetText := target.String()
	decided, pass := e.adminIngress(d, pc, target, targetText)
	if !decided {
		e.ingressNP(d, pc, target, targetText)
		if d.IngressAllowed == Allowed && !d.Isolated && target.Number != 0 {
			e.baselineIngress(d, pc, target, targetText)
		}
		if pass != nil {
			d.Reason = pass.rule + " passes the traffic on; " + d.Reason
			d.Evidence = append([]RuleEvidence{pass.evidence}, d.Evidence...)
		}
	}
	d.Allowed = d.IngressAllowed
	if cside == nil {
		return
	}
	eg := e.egressTiers(cside, pod, dst, target, targetText)
	e.combineEgress(d, eg)
}

// ingressNP is the NetworkPolicy tier of the backend's ingress.
func (e *evaluator) ingressNP(d *Decision, pc *podCtx, target PortRef, targetText string) {
	pod, isolating, egressOnly := pc.pod, pc.isolating, pc.egressOnly
	kind := e.in.Client.kind()
	client := e.clientName
	switch {
	case e.unread[pod.Namespace]:
		d.IngressAllowed = Unknown
		d.Isolated = false
		d.Reason = "the NetworkPolicies of namespace " + pod.Namespace + " could not be read"
	case target.Number == 0:
		d.IngressAllowed = Unknown
		d.Reason = "targetPort " + targetText + " is not a container port of the Pod, so no port can be decided"
	case !d.Isolated:
		d.IngressAllowed = Allowed
		d.Reason = "no NetworkPolicy selects the Pod for ingress: every source is admitted on " + targetText
		if len(egressOnly) > 0 {
			d.Reason += " (" + selectPhrase(egressOnly, "selects", "select") + " it for Egress only)"
		}
		if kind == ClientAny {
			d.AnySourceAdmitted = true
			d.AdmittedSources = []string{"any source"}
		}
	case kind == ClientAny:
		e.decideAny(d, pc, target, targetText)
	default:
		o := evalRules(isolating, Ingress, func(r *rule) peerResult { return r.client }, pod, target, targetText)
		d.IngressAllowed, d.AllowingRule, d.Evidence = o.v, o.allowing, o.evidence
		switch o.v {
		case Allowed:
			d.Reason = o.allowing.String() + " admits " + client + " on " + targetText
			if o.viaBlockOnly && kind == ClientPod {
				d.CNIDependent = true
				d.Caveats = append(d.Caveats, IPBlockPodNote)
			}
		case Denied:
			d.Reason = pc.phrase("selects", "select") + " the Pod and no ingress rule admits " + client + " on " + targetText
		default:
			d.Reason = pc.phrase("selects", "select") + " the Pod; whether an ingress rule admits " + client + " on " + targetText + " is unknown: " + o.unknownWhy
		}
	}
}

// combineEgress folds the client's egress answer into the decision.
func (e *evaluator) combineEgress(d *Decision, eg *EgressDecision) {
	d.ClientEgress = eg
	if eg.Allowed == Allowed && d.IngressAllowed == Allowed && eg.Isolated {
		d.Reason += "; " + eg.Reason
	}
	switch {
	case d.IngressAllowed == Denied || eg.Allowed == Denied:
		d.Allowed = Denied
		var rs []string
		if d.IngressAllowed == Denied {
			rs = append(rs, d.Reason)
		}
		if eg.Allowed == Denied {
			rs = append(rs, eg.Reason)
		}
		d.Reason = strings.Join(rs, "; ")
	case eg.Allowed == Unknown:
		d.Allowed = Unknown
		if d.IngressAllowed == Unknown {
			d.Reason += "; " + eg.Reason
		} else {
			d.Reason = eg.Reason
		}
	}
}

// decideAny answers "who is admitted" for AnyClient on an isolated Pod.
func (e *evaluator) decideAny(d *Decision, pc *podCtx, target PortRef, targetText string) {
	pod, isolating := pc.pod, pc.isolating
	all := false
	var allRule *RuleRef
	for _, p := range isolating {
		if len(p.in) == 0 {
			d.Evidence = append(d.Evidence, RuleEvidence{
				RuleRef: RuleRef{Policy: p.key, Direction: Ingress, Index: -1},
				Summary: "no ingress rules", Admits: Denied, Why: "a policy without ingress rules admits nothing",
			})
			continue
		}
		for _, r := range p.in {
			ev := RuleEvidence{RuleRef: r.ref, Summary: r.summary}
			pv := r.matchPorts(target, pod)
			switch {
			case pv != Allowed:
				ev.Admits = Denied
				ev.Why = "ports " + r.portText + " do not include " + targetText
			case r.allPeers:
				ev.Admits = Allowed
				if !all {
					ref := r.ref
					allRule = &ref
				}
				all = true
			default:
				ev.Admits = Unknown
				ev.Why = "admits only some sources"
				for _, pe := range r.peers {
					if desc := e.anyDesc(pe); !slices.Contains(d.AdmittedSources, desc) {
						d.AdmittedSources = append(d.AdmittedSources, desc)
					}
				}
			}
			d.Evidence = append(d.Evidence, ev)
		}
	}
	switch {
	case all:
		d.IngressAllowed, d.AllowingRule, d.AnySourceAdmitted = Allowed, allRule, true
		d.AdmittedSources = []string{"any source"}
		d.Reason = allRule.String() + " admits every source on " + targetText
	case len(d.AdmittedSources) > 0:
		d.IngressAllowed, d.AnySourceAdmitted = Unknown, true
		d.Reason = pc.phrase("isolates", "isolate") + " the Pod; on " + targetText + " only " + strings.Join(d.AdmittedSources, " or ") + " are admitted"
	default:
		d.IngressAllowed = Denied
		d.Reason = pc.phrase("isolates", "isolate") + " the Pod and no ingress rule admits any source on " + targetText
	}
}

// anyDesc describes a peer for AnyClient, naming the known namespaces a
// namespaceSelector picks.
func (e *evaluator) anyDesc(pe *peer) string {
	if pe.anyDesc == "" {
		pe.anyDesc = e.describeForAny(pe)
	}
	return pe.anyDesc
}

func (e *evaluator) describeForAny(pe *peer) string {
	if pe.err != nil || pe.ns == nil || pe.ns.Empty() || len(e.in.NamespaceLabels) == 0 {
		return pe.desc
	}
	var names []string
	for ns := range e.in.NamespaceLabels {
		set, _ := e.nsLabels(ns)
		if pe.ns.Matches(set) {
			names = append(names, ns)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return pe.desc + " (none of the known namespaces)"
	}
	const max = 5
	if len(names) > max {
		names = append(names[:max], fmt.Sprintf("and %d more", len(names)-max))
	}
	return pe.desc + " (" + strings.Join(names, ", ") + ")"
}

// clientSide is the client Pod's egress isolation, computed once.
type clientSide struct {
	ep       *endpoint
	pols     []*policy // select the client and have the Egress type
	unread   bool
	matches  []PolicyMatch
	polNames []string
	// selPhrase and notIsolated are reason fragments shared by every decision.
	selPhrase   string
	notIsolated string
}

func (e *evaluator) clientEgress(pols []*policy, ep *endpoint) *clientSide {
	cs := &clientSide{ep: ep, unread: e.unread[ep.ns]}
	for _, p := range pols {
		if !p.hasEg || !p.sel.Matches(ep.labels) {
			continue
		}
		cs.pols = append(cs.pols, p)
		cs.matches = append(cs.matches, PolicyMatch{Policy: p.key, PolicyTypes: p.types})
	}
	cs.polNames = policyKeys(cs.pols)
	cs.selPhrase = selectPhrase(cs.polNames, "selects", "select")
	cs.notIsolated = "no NetworkPolicy selects " + ep.what + " for egress"
	return cs
}

// egressTo decides the client Pod's egress to one backend Pod on target.
func (e *evaluator) egressTo(cs *clientSide, pod *corev1.Pod, dst *endpoint, target PortRef, targetText string) *EgressDecision {
	eg := &EgressDecision{Isolated: len(cs.pols) > 0, MatchingPolicies: cs.matches}
	switch {
	case cs.unread:
		eg.Isolated = false
		eg.Allowed = Unknown
		eg.Reason = "the NetworkPolicies of the client's namespace " + cs.ep.ns + " could not be read"
		return eg
	case !eg.Isolated:
		eg.Allowed = Allowed
		eg.Reason = cs.notIsolated
		return eg
	case target.Number == 0:
		eg.Allowed = Unknown
		eg.Reason = "targetPort " + targetText + " is not a container port of " + dst.what + ", so the client's egress cannot be decided"
		return eg
	}
	o := evalRules(cs.pols, Egress, func(r *rule) peerResult { return e.matchPeers(r, dst) }, pod, target, targetText)
	eg.Allowed, eg.AllowingRule, eg.Evidence = o.v, o.allowing, o.evidence
	sel := cs.selPhrase
	what := dst.what
	if len(dst.ips) > 0 {
		what += " (" + joinAddrs(dst.ips) + ")"
	}
	switch o.v {
	case Allowed:
		eg.Reason = o.allowing.String() + " admits egress from " + cs.ep.what + " to " + what + " on " + targetText
	case Denied:
		eg.Reason = sel + " " + cs.ep.what + " for egress and no egress rule admits " + what + " on " + targetText
	default:
		eg.Reason = sel + " " + cs.ep.what + " for egress; whether an egress rule admits " + what + " on " + targetText + " is unknown: " + o.unknownWhy
	}
	return eg
}

// dns decides the client Pod's egress to the cluster DNS on UDP and TCP.
func (e *evaluator) dns(cs *clientSide, t *DNSTarget) *DNSDecision {
	d := &DNSDecision{Isolated: len(cs.pols) > 0}
	switch {
	case cs.unread:
		d.Isolated = false
		d.UDP, d.TCP = Unknown, Unknown
		d.Reason = "the NetworkPolicies of the client's namespace " + cs.ep.ns + " could not be read"
		return d
	case !d.Isolated:
		d.UDP, d.TCP = Allowed, Allowed
		d.Reason = "no NetworkPolicy selects " + cs.ep.what + " for egress: DNS is admitted"
		return d
	}
	ports := t.Ports
	if ports == nil {
		ports = []TargetPort{
			{Name: "dns", Port: intstr.FromInt32(53), Protocol: corev1.ProtocolUDP},
			{Name: "dns-tcp", Port: intstr.FromInt32(53), Protocol: corev1.ProtocolTCP},
		}
	}
	var parts []string
	for _, proto := range []corev1.Protocol{corev1.ProtocolUDP, corev1.ProtocolTCP} {
		v, why, ev, allowing, cni := e.dnsProto(cs, t, ports, proto)
		if len(t.Resolvers) > 0 {
			v, why, ev, allowing, cni = e.resolverProto(cs, t, proto)
		}
		if proto == corev1.ProtocolUDP {
			d.UDP = v
		} else {
			d.TCP = v
		}
		if d.AllowingRule == nil && allowing != nil {
			d.AllowingRule = allowing
		}
		d.CNIDependent = d.CNIDependent || cni
		d.Evidence = append(d.Evidence, ev...)
		parts = append(parts, string(proto)+" "+strings.ToLower(string(v))+why)
	}
	to := "kube-dns"
	if len(t.Resolvers) > 0 {
		to = "the client's resolver " + joinAddrs(t.Resolvers)
	}
	d.Reason = cs.selPhrase + " " + cs.ep.what + " for egress; DNS to " + to + ": " + strings.Join(parts, ", ")
	return d
}

// resolverProto decides the client's egress to its own nameservers on
// port 53 over proto: admitted when any of them is.
func (e *evaluator) resolverProto(cs *clientSide, t *DNSTarget, proto corev1.Protocol) (Verdict, string, []RuleEvidence, *RuleRef, bool) {
	target := PortRef{Number: 53, Protocol: proto}
	v, why := Denied, ""
	var evidence []RuleEvidence
	for _, r := range t.Resolvers {
		dst := &endpoint{ips: []netip.Addr{r}, what: "resolver " + r.String()}
		o := evalRules(cs.pols, Egress, func(ru *rule) peerResult { return e.matchPeers(ru, dst) }, nil, target, target.String())
		if evidence == nil || o.v == Allowed {
			evidence = o.evidence
		}
		switch o.v {
		case Allowed:
			return Allowed, " (" + o.allowing.String() + " to " + dst.what + ")", o.evidence, o.allowing, o.viaBlockOnly
		case Unknown:
			v, why = Unknown, " ("+o.unknownWhy+")"
		}
	}
	return v, why, evidence, nil, false
}

func (e *evaluator) dnsProto(cs *clientSide, t *DNSTarget, ports []TargetPort, proto corev1.Protocol) (Verdict, string, []RuleEvidence, *RuleRef, bool) {
	var tps []TargetPort
	for _, tp := range ports {
		p := tp.Protocol
		if p == "" {
			p = corev1.ProtocolTCP
		}
		if p == proto {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return Unknown, " (the DNS Service has no " + string(proto) + " port)", nil, nil, false
	}
	v := Denied
	var evidence []RuleEvidence
	why := ""
	for _, tp := range tps {
		for i := range t.Pods {
			pod := &t.Pods[i]
			target := resolveTarget(pod, tp)
			if target.Number == 0 {
				continue
			}
			dst := &endpoint{pod: true, ns: pod.Namespace, labels: labels.Set(pod.Labels), ips: PodIPs(pod), what: "pod " + pod.Namespace + "/" + pod.Name}
			o := evalRules(cs.pols, Egress, func(r *rule) peerResult { return e.matchPeers(r, dst) }, pod, target, target.String())
			if evidence == nil || o.v == Allowed {
				evidence = o.evidence
			}
			switch o.v {
			case Allowed:
				return Allowed, " (" + o.allowing.String() + " to " + dst.what + ")", o.evidence, o.allowing, o.viaBlockOnly
			case Unknown:
				v, why = Unknown, " ("+o.unknownWhy+")"
			}
		}
		// Without an admitted DNS Pod: a rule that admits only the
		// ClusterIP works where egress is evaluated before DNAT.
		if len(t.ClusterIPs) > 0 && tp.Port.Type == intstr.Int {
			target := resolveTarget(nil, tp)
			dst := &endpoint{ips: t.ClusterIPs, what: "ClusterIP " + joinAddrs(t.ClusterIPs)}
			o := evalRules(cs.pols, Egress, func(r *rule) peerResult { return e.matchPeers(r, dst) }, nil, target, target.String())
			if evidence == nil {
				evidence = o.evidence
			}
			if o.v == Allowed && !o.viaBlockOnly {
				// A rule without "to" peers admits every destination.
				return Allowed, " (" + o.allowing.String() + ")", o.evidence, o.allowing, false
			}
			if o.v == Allowed {
				return Unknown, " (only the ClusterIP is admitted, by " + o.allowing.String() +
					"; kube-proxy and eBPF datapaths evaluate egress after DNAT, so this depends on the CNI)", o.evidence, nil, true
			}
		}
	}
	if len(t.Pods) == 0 && v == Denied && portPossible(cs.pols, tps) {
		// Selector peers can only be matched against the DNS Pods.
		return Unknown, " (the DNS Pods were not given, so selector peers cannot be matched)", evidence, nil, false
	}
	return v, why, evidence, nil, false
}

// portPossible says whether some egress rule could admit one of tps, not
// knowing the destination Pod (a named port might resolve to it).
func portPossible(pols []*policy, tps []TargetPort) bool {
	for _, tp := range tps {
		target := resolveTarget(nil, tp)
		for _, p := range pols {
			for _, r := range p.eg {
				if r.allPorts {
					return true
				}
				for _, pt := range r.ports {
					if pt.proto != target.Protocol {
						continue
					}
					if pt.all || pt.name != "" || target.Number == 0 || pt.match(target, nil) == Allowed {
						return true
					}
				}
			}
		}
	}
	return false
}
