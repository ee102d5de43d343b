package netpol

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// The admin tiers (policy.networking.k8s.io v1alpha1): every
// AdminNetworkPolicy, lowest priority value first, is matched before the
// NetworkPolicies; within one, the first rule that matches the peer and the
// port decides: Allow and Deny are final, Pass hands the traffic to the
// NetworkPolicies. Traffic no AdminNetworkPolicy decides and no NetworkPolicy
// isolates goes to the BaselineAdminNetworkPolicy, whose first matching rule
// (Allow or Deny) decides; without one it is admitted.

// Admin tier names, used as the policy part of a rule reference.
const (
	anpKind  = "AdminNetworkPolicy"
	banpKind = "BaselineAdminNetworkPolicy"
)

// AdminNote accompanies decisions that an admin tier took.
const AdminNote = "an AdminNetworkPolicy or BaselineAdminNetworkPolicy decided: AdminNetworkPolicies " +
	"override NetworkPolicies unless their rule passes; the baseline applies only where no NetworkPolicy isolates"

// adminPolicy is one AdminNetworkPolicy or the BaselineAdminNetworkPolicy,
// compiled.
type adminPolicy struct {
	key      string // "AdminNetworkPolicy/name"
	priority int32
	subject  adminSelector
	in, eg   []*adminRule
}

// adminSelector selects Pods by namespace labels and, for a Pods selector,
// Pod labels; nodes and networks are egress peers only.
type adminSelector struct {
	ns     labels.Selector // nil: not set
	pod    labels.Selector // nil: any Pod of the selected namespaces
	nets   []netip.Prefix
	nodes  bool // a nodes peer: never a Pod on the Pod network
	domain bool // a domainNames peer: a name, never matched by an address
	err    error
	desc   string
}

type adminRule struct {
	ref      string
	action   string
	peers    []adminSelector
	allPorts bool
	ports    []port
	summary  string
}

func compileAdmin(kind, name string, priority int32, subject anpv1alpha1.AdminNetworkPolicySubject) *adminPolicy {
	p := &adminPolicy{key: kind + "/" + name, priority: priority}
	p.subject = compileAdminSelector(subject.Namespaces, subject.Pods)
	return p
}

func compileAdminSelector(ns *metav1.LabelSelector, pods *anpv1alpha1.NamespacedPod) adminSelector {
	var s adminSelector
	var err error
	switch {
	case ns != nil:
		s.ns, err = metav1.LabelSelectorAsSelector(ns)
		s.desc = "pods in namespaces " + selText(s.ns)
	case pods != nil:
		s.ns, err = metav1.LabelSelectorAsSelector(&pods.NamespaceSelector)
		if err == nil {
			s.pod, err = metav1.LabelSelectorAsSelector(&pods.PodSelector)
		}
		if err == nil {
			s.desc = "pods " + selText(s.pod) + " in namespaces " + selText(s.ns)
		}
	default:
		err = fmt.Errorf("selects neither namespaces nor pods")
	}
	if err != nil {
		s.err = fmt.Errorf("invalid selector: %w", err)
		s.desc = "(invalid selector)"
	}
	return s
}

func selText(s labels.Selector) string {
	if s == nil || s.Empty() {
		return "(all)"
	}
	return s.String()
}

func compileAdminPorts(r *adminRule, ports *[]anpv1alpha1.AdminNetworkPolicyPort) {
	if ports == nil {
		r.allPorts = true
		return
	}
	for _, p := range *ports {
		switch {
		case p.PortNumber != nil:
			r.ports = append(r.ports, port{proto: orTCPProto(p.PortNumber.Protocol), num: p.PortNumber.Port, end: p.PortNumber.Port})
		case p.PortRange != nil:
			r.ports = append(r.ports, port{proto: orTCPProto(p.PortRange.Protocol), num: p.PortRange.Start, end: p.PortRange.End})
		case p.NamedPort != nil:
			// A named port carries no protocol: the container port's own.
			r.ports = append(r.ports, port{name: *p.NamedPort, anyProto: true})
		}
	}
}

func orTCPProto(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func newAdminRule(key string, dir Direction, i int, name, action string) *adminRule {
	ref := key + " " + dir.lower() + "[" + strconv.Itoa(i) + "]"
	if name != "" {
		ref += " (" + name + ")"
	}
	return &adminRule{ref: ref, action: action}
}

func (r *adminRule) finish(dir Direction) {
	var descs, pts []string
	for _, p := range r.peers {
		descs = append(descs, p.desc)
	}
	for _, pt := range r.ports {
		pts = append(pts, pt.String())
	}
	word := "from "
	if dir == Egress {
		word = "to "
	}
	portText := "all ports"
	if !r.allPorts {
		portText = "ports " + strings.Join(pts, ", ")
	}
	r.summary = r.action + " " + word + strings.Join(descs, " or ") + "; " + portText
}

// compileAdminPolicies compiles the admin tiers, AdminNetworkPolicies in
// the order they are matched.
func compileAdminPolicies(anps []anpv1alpha1.AdminNetworkPolicy, banps []anpv1alpha1.BaselineAdminNetworkPolicy) (admin []*adminPolicy, baseline *adminPolicy, notes []string) {
	for i := range anps {
		a := &anps[i]
		p := compileAdmin(anpKind, a.Name, a.Spec.Priority, a.Spec.Subject)
		for j, r := range a.Spec.Ingress {
			ar := newAdminRule(p.key, Ingress, j, r.Name, string(r.Action))
			for _, pe := range r.From {
				ar.peers = append(ar.peers, compileAdminSelector(pe.Namespaces, pe.Pods))
			}
			compileAdminPorts(ar, r.Ports)
			ar.finish(Ingress)
			p.in = append(p.in, ar)
		}
		for j, r := range a.Spec.Egress {
			ar := newAdminRule(p.key, Egress, j, r.Name, string(r.Action))
			for _, pe := range r.To {
				ar.peers = append(ar.peers, compileEgressPeer(pe.Namespaces, pe.Pods, pe.Nodes, pe.Networks, len(pe.DomainNames) > 0))
			}
			compileAdminPorts(ar, r.Ports)
			ar.finish(Egress)
			p.eg = append(p.eg, ar)
		}
		admin = append(admin, p)
	}
	// Equal priorities are left to the implementation by the API; name
	// order at least keeps the answer stable, and a note says so.
	sort.SliceStable(admin, func(i, j int) bool {
		if admin[i].priority != admin[j].priority {
			return admin[i].priority < admin[j].priority
		}
		return admin[i].key < admin[j].key
	})
	for i := 1; i < len(admin); i++ {
		if admin[i].priority == admin[i-1].priority {
			notes = append(notes, fmt.Sprintf("%s and %s share priority %d: which one is matched first is up to the implementation; svctrace matches them in name order",
				admin[i-1].key, admin[i].key, admin[i].priority))
		}
	}
	for i := range banps {
		b := &banps[i]
		if b.Name != "default" {
			// The API admits only the singleton named "default".
			continue
		}
		p := compileAdmin(banpKind, b.Name, 0, b.Spec.Subject)
		for j, r := range b.Spec.Ingress {
			ar := newAdminRule(p.key, Ingress, j, r.Name, string(r.Action))
			for _, pe := range r.From {
				ar.peers = append(ar.peers, compileAdminSelector(pe.Namespaces, pe.Pods))
			}
			compileAdminPorts(ar, r.Ports)
			ar.finish(Ingress)
			p.in = append(p.in, ar)
		}
		for j, r := range b.Spec.Egress {
			ar := newAdminRule(p.key, Egress, j, r.Name, string(r.Action))
			for _, pe := range r.To {
				ar.peers = append(ar.peers, compileEgressPeer(pe.Namespaces, pe.Pods, pe.Nodes, pe.Networks, false))
			}
			compileAdminPorts(ar, r.Ports)
			ar.finish(Egress)
			p.eg = append(p.eg, ar)
		}
		baseline = p
	}
	return admin, baseline, notes
}

func compileEgressPeer(ns *metav1.LabelSelector, pods *anpv1alpha1.NamespacedPod, nodes *metav1.LabelSelector, nets []anpv1alpha1.CIDR, domains bool) adminSelector {
	switch {
	case ns != nil || pods != nil:
		return compileAdminSelector(ns, pods)
	case nodes != nil:
		return adminSelector{nodes: true, desc: "nodes"}
	case domains:
		return adminSelector{domain: true, desc: "domain names"}
	}
	s := adminSelector{desc: "networks"}
	var texts []string
	for _, c := range nets {
		pfx, err := netip.ParsePrefix(string(c))
		if err != nil {
			s.err = fmt.Errorf("invalid network %q: %w", c, err)
			continue
		}
		s.nets = append(s.nets, pfx.Masked())
		texts = append(texts, string(c))
	}
	s.desc = "networks " + strings.Join(texts, ", ")
	return s
}

// matchSelector says whether an endpoint is among the Pods a selector
// selects: Unknown when its namespace's labels are needed and not known.
func (e *evaluator) matchSelector(s *adminSelector, ep *endpoint) (Verdict, string) {
	switch {
	case s.err != nil:
		return Unknown, s.err.Error()
	case s.domain:
		return Denied, "a domain name does not match " + ep.what
	case s.nodes:
		if ep.pod {
			return Denied, ep.what + " is a Pod, not a node"
		}
		return Unknown, "whether " + ep.what + " is among the selected nodes is not decided from its address"
	case s.nets != nil || s.ns == nil:
		if len(ep.ips) == 0 {
			return Unknown, "the IP of " + ep.what + " is not known, needed for " + s.desc
		}
		for _, ip := range ep.ips {
			for _, n := range s.nets {
				if n.Contains(ip) {
					return Allowed, ""
				}
			}
		}
		return Denied, ep.what + " is outside " + s.desc
	}
	if !ep.pod {
		return Denied, ep.what + " is not a Pod on the Pod network, so " + s.desc + " does not match it"
	}
	set, known := e.nsLabels(ep.ns)
	if !known && !nameOnly(s.ns) {
		why := "the labels of namespace " + ep.ns + " were not given, needed for " + s.desc
		if e.in.NamespaceLabelsUnread != "" {
			why = "the labels of namespace " + ep.ns + " could not be read (" + e.in.NamespaceLabelsUnread + "), needed for " + s.desc
		}
		return Unknown, why
	}
	if !s.ns.Matches(set) {
		return Denied, "namespace " + ep.ns + " does not match " + s.desc
	}
	if s.pod != nil && !s.pod.Matches(ep.labels) {
		return Denied, "the labels of " + ep.what + " do not match " + s.desc
	}
	return Allowed, ""
}

// adminOutcome is an admin tier's answer: Allowed or Denied when a rule
// decided, Unknown when one that comes first may match, "" when none did
// (or a rule passed: pass is set).
type adminOutcome struct {
	v        Verdict
	pass     bool
	rule     string
	policy   string
	why      string
	evidence RuleEvidence
	selects  bool // some policy of the tier selects the subject
}

// adminDecide matches the tier's policies for traffic from (ingress) or to
// (egress) peer, where subject is the selected side, on target.
func (e *evaluator) adminDecide(pols []*adminPolicy, dir Direction, subject, peer *endpoint, dst *corev1.Pod, target PortRef) adminOutcome {
	var out adminOutcome
	for _, p := range pols {
		sv, why := e.matchSelector(&p.subject, subject)
		if sv == Denied {
			continue
		}
		out.selects = true
		if sv == Unknown {
			return adminOutcome{v: Unknown, policy: p.key, selects: true, why: "whether " + p.key + " selects " + subject.what + " is unknown: " + why}
		}
		rules := p.in
		if dir == Egress {
			rules = p.eg
		}
		for _, r := range rules {
			pv := Allowed
			if !r.allPorts {
				pv = Denied
				for _, pt := range r.ports {
					switch pt.match(target, dst) {
					case Allowed:
						pv = Allowed
					case Unknown:
						if pv == Denied {
							pv = Unknown
						}
					}
				}
			}
			if pv == Denied {
				continue
			}
			mv, mwhy := Denied, ""
			for i := range r.peers {
				v, w := e.matchSelector(&r.peers[i], peer)
				if v == Allowed {
					mv = Allowed
					break
				}
				if v == Unknown {
					mv, mwhy = Unknown, w
				}
			}
			v := and(mv, pv)
			ev := RuleEvidence{RuleRef: RuleRef{Policy: p.key, Direction: dir, Index: -1}, Summary: r.ref + ": " + r.summary, Admits: v}
			switch v {
			case Denied:
				continue
			case Unknown:
				if mwhy == "" {
					mwhy = "a named port cannot be resolved"
				}
				ev.Why = mwhy
				return adminOutcome{v: Unknown, rule: r.ref, policy: p.key, selects: true, evidence: ev,
					why: "whether " + r.ref + " (" + r.action + ") matches is unknown: " + mwhy}
			}
			switch r.action {
			case string(anpv1alpha1.AdminNetworkPolicyRuleActionAllow):
				return adminOutcome{v: Allowed, rule: r.ref, policy: p.key, selects: true, evidence: ev}
			case string(anpv1alpha1.AdminNetworkPolicyRuleActionDeny):
				ev.Admits = Denied
				return adminOutcome{v: Denied, rule: r.ref, policy: p.key, selects: true, evidence: ev}
			case string(anpv1alpha1.AdminNetworkPolicyRuleActionPass):
				return adminOutcome{pass: true, rule: r.ref, policy: p.key, selects: true, evidence: ev}
			default:
				ev.Admits = Unknown
				return adminOutcome{v: Unknown, rule: r.ref, policy: p.key, selects: true, evidence: ev,
					why: r.ref + " has action " + strconv.Quote(r.action) + ", which svctrace does not know"}
			}
		}
	}
	return out
}

// adminReason is the sentence for a decision an admin tier took.
func (o adminOutcome) reason(dir Direction, subject, peer, targetText string) string {
	from, to := peer, subject
	if dir == Egress {
		from, to = subject, peer
	}
	switch o.v {
	case Allowed:
		return o.rule + " allows " + dir.lower() + " from " + from + " to " + to + " on " + targetText
	case Denied:
		return o.rule + " denies " + dir.lower() + " from " + from + " to " + to + " on " + targetText
	}
	return o.why
}

// adminIngress runs the AdminNetworkPolicy tier for the backend's ingress:
// decided when a rule allowed or denied (or the answer is unknown); pass is
// the rule that handed the traffic on to the NetworkPolicies.
func (e *evaluator) adminIngress(d *Decision, pc *podCtx, target PortRef, targetText string) (decided bool, pass *adminOutcome) {
	if e.in.AdminPoliciesUnread != "" {
		d.IngressAllowed, d.Reason = Unknown, "the AdminNetworkPolicies could not be read ("+e.in.AdminPoliciesUnread+"); they may allow or deny any traffic"
		return true, nil
	}
	if len(e.admin) == 0 || target.Number == 0 {
		return false, nil
	}
	if e.in.Client.kind() == ClientAny {
		return e.anyClientAdmin(d, e.admin, pc), nil
	}
	o := e.adminDecide(e.admin, Ingress, pc.dst, e.clientEP, pc.pod, target)
	if o.pass {
		return false, &o
	}
	if o.v == "" {
		return false, nil
	}
	e.adminDecided(d, o, "pod "+pc.ref.String(), targetText)
	return true, nil
}

// baselineIngress runs the BaselineAdminNetworkPolicy for an ingress that
// no admin policy decided and no NetworkPolicy isolates.
func (e *evaluator) baselineIngress(d *Decision, pc *podCtx, target PortRef, targetText string) {
	if e.baseline == nil {
		return
	}
	pols := []*adminPolicy{e.baseline}
	if e.in.Client.kind() == ClientAny {
		e.anyClientAdmin(d, pols, pc)
		return
	}
	if o := e.adminDecide(pols, Ingress, pc.dst, e.clientEP, pc.pod, target); o.v != "" {
		e.adminDecided(d, o, "pod "+pc.ref.String(), targetText)
	}
}

// anyClientAdmin: who an admin policy admits is evaluated only for a
// named client, so for AnyClient a Pod it selects has an undecided answer.
func (e *evaluator) anyClientAdmin(d *Decision, pols []*adminPolicy, pc *podCtx) bool {
	for _, p := range pols {
		if v, _ := e.matchSelector(&p.subject, pc.dst); v != Denied {
			d.IngressAllowed, d.Isolated, d.AnySourceAdmitted, d.AdmittedSources = Unknown, true, false, nil
			d.Reason = p.key + " selects the Pod: whom it allows or denies is evaluated for a client named with --from"
			d.MatchingPolicies = append(d.MatchingPolicies[:len(d.MatchingPolicies):len(d.MatchingPolicies)], PolicyMatch{Policy: p.key, PolicyTypes: []Direction{Ingress}})
			return true
		}
	}
	return false
}

func (e *evaluator) adminDecided(d *Decision, o adminOutcome, subject, targetText string) {
	d.IngressAllowed, d.Isolated = o.v, true
	d.Reason = o.reason(Ingress, subject, e.clientName, targetText)
	d.Evidence = []RuleEvidence{o.evidence}
	d.AllowingRule = nil
	d.Caveats = append(d.Caveats, AdminNote)
	// A copy: MatchingPolicies is shared by the decisions of one Pod.
	d.MatchingPolicies = append(d.MatchingPolicies[:len(d.MatchingPolicies):len(d.MatchingPolicies)], PolicyMatch{Policy: o.policy, PolicyTypes: []Direction{Ingress}})
}

// egressTiers is the client Pod's egress through the three tiers.
func (e *evaluator) egressTiers(cs *clientSide, pod *corev1.Pod, dst *endpoint, target PortRef, targetText string) *EgressDecision {
	if e.in.AdminPoliciesUnread != "" {
		return &EgressDecision{Allowed: Unknown, Reason: "the AdminNetworkPolicies could not be read (" + e.in.AdminPoliciesUnread + "); they may allow or deny the client's egress"}
	}
	decided := func(o adminOutcome) *EgressDecision {
		return &EgressDecision{Isolated: true, Allowed: o.v, Reason: o.reason(Egress, cs.ep.what, dst.what, targetText),
			Evidence: []RuleEvidence{o.evidence}, MatchingPolicies: []PolicyMatch{{Policy: o.policy, PolicyTypes: []Direction{Egress}}}}
	}
	var o adminOutcome
	if target.Number != 0 {
		o = e.adminDecide(e.admin, Egress, cs.ep, dst, pod, target)
		if o.v != "" {
			return decided(o)
		}
	}
	eg := e.egressTo(cs, pod, dst, target, targetText)
	if !eg.Isolated && eg.Allowed == Allowed && e.baseline != nil {
		if b := e.adminDecide([]*adminPolicy{e.baseline}, Egress, cs.ep, dst, pod, target); b.v != "" {
			return decided(b)
		}
	}
	if o.pass {
		eg.Reason = o.rule + " passes the traffic on; " + eg.Reason
	}
	return eg
}
