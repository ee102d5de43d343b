package netpol

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// policy is a NetworkPolicy with its selectors parsed and its rules
// summarised, so that per-Pod work is only matching.
type policy struct {
	key    string // namespace/name
	ns     string
	sel    labels.Selector // nil when invalid
	types  []Direction
	hasIn  bool
	hasEg  bool
	in, eg []*rule
}

// rule is one ingress or egress rule.
type rule struct {
	ref      RuleRef
	allPeers bool // no from/to: every source or destination
	peers    []*peer
	allPorts bool // no ports: every port and protocol
	ports    []port
	summary  string
	portText string

	// client is the peer side for the trace's client, filled once per
	// Evaluate for ingress rules (it does not depend on the backend Pod).
	client peerResult
}

// peer is one from/to entry.
type peer struct {
	policyNS   string
	pod        labels.Selector // nil: not set
	ns         labels.Selector // nil: not set
	nsNameOnly bool            // ns selector needs only kubernetes.io/metadata.name
	block      *ipBlock
	err        error
	desc       string
	anyDesc    string // desc for AnyClient, with the known namespaces (cached)
}

type ipBlock struct {
	cidr   netip.Prefix
	except []netip.Prefix
}

// port is one NetworkPolicyPort with its defaults applied.
type port struct {
	proto    corev1.Protocol
	all      bool // port unset: every port of proto
	num, end int32
	name     string // named port, resolved against the destination Pod
	anyProto bool   // an admin policy's named port: the container port's protocol
}

func compilePolicy(np *networkingv1.NetworkPolicy) (*policy, error) {
	p := &policy{key: np.Namespace + "/" + np.Name, ns: np.Namespace}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		return nil, fmt.Errorf("policy %s has an invalid podSelector and was ignored: %w", p.key, err)
	}
	p.sel = sel
	p.types = effectiveTypes(&np.Spec)
	p.hasIn = slices.Contains(p.types, Ingress)
	p.hasEg = slices.Contains(p.types, Egress)
	for i := range np.Spec.Ingress {
		r := &np.Spec.Ingress[i]
		p.in = append(p.in, compileRule(p, Ingress, i, r.From, r.Ports))
	}
	for i := range np.Spec.Egress {
		r := &np.Spec.Egress[i]
		p.eg = append(p.eg, compileRule(p, Egress, i, r.To, r.Ports))
	}
	return p, nil
}

// effectiveTypes applies the API's default: Ingress always, Egress when
// there are egress rules.
func effectiveTypes(spec *networkingv1.NetworkPolicySpec) []Direction {
	if len(spec.PolicyTypes) > 0 {
		out := make([]Direction, 0, len(spec.PolicyTypes))
		for _, t := range spec.PolicyTypes {
			out = append(out, Direction(t))
		}
		return out
	}
	if len(spec.Egress) > 0 {
		return []Direction{Ingress, Egress}
	}
	return []Direction{Ingress}
}

func compileRule(p *policy, dir Direction, index int, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort) *rule {
	r := &rule{ref: RuleRef{Policy: p.key, Direction: dir, Index: index}}
	r.allPeers = len(peers) == 0
	descs := make([]string, 0, len(peers))
	for i := range peers {
		pe := compilePeer(p.ns, &peers[i])
		r.peers = append(r.peers, pe)
		descs = append(descs, pe.desc)
	}
	r.allPorts = len(ports) == 0
	ptexts := make([]string, 0, len(ports))
	for _, np := range ports {
		pt := compilePort(np)
		r.ports = append(r.ports, pt)
		ptexts = append(ptexts, pt.String())
	}
	var b strings.Builder
	if dir == Ingress {
		b.WriteString("from ")
	} else {
		b.WriteString("to ")
	}
	if r.allPeers {
		b.WriteString("anywhere")
	} else {
		b.WriteString(strings.Join(descs, " or "))
	}
	if r.allPorts {
		r.portText = "all ports"
	} else {
		r.portText = strings.Join(ptexts, ", ")
	}
	b.WriteString("; ")
	if !r.allPorts {
		b.WriteString("ports ")
	}
	b.WriteString(r.portText)
	r.summary = b.String()
	return r
}

func compilePeer(policyNS string, np *networkingv1.NetworkPolicyPeer) *peer {
	pe := &peer{policyNS: policyNS}
	switch {
	case np.IPBlock != nil:
		pe.block, pe.err = compileBlock(np.IPBlock)
		pe.desc = "IPs " + np.IPBlock.CIDR
		if len(np.IPBlock.Except) > 0 {
			pe.desc += " except " + strings.Join(np.IPBlock.Except, ", ")
		}
		if np.PodSelector != nil || np.NamespaceSelector != nil {
			pe.err = fmt.Errorf("ipBlock set together with a selector (invalid peer)")
		}
		return pe
	case np.PodSelector == nil && np.NamespaceSelector == nil:
		pe.err = fmt.Errorf("peer sets neither podSelector, namespaceSelector nor ipBlock (invalid)")
		pe.desc = "(empty peer)"
		return pe
	}
	if np.PodSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(np.PodSelector)
		if err != nil {
			pe.err = fmt.Errorf("invalid podSelector: %w", err)
		}
		pe.pod = s
	}
	if np.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(np.NamespaceSelector)
		if err != nil {
			pe.err = fmt.Errorf("invalid namespaceSelector: %w", err)
		} else {
			pe.nsNameOnly = nameOnly(s)
		}
		pe.ns = s
	}
	pe.desc = pe.describe()
	return pe
}

func (pe *peer) describe() string {
	pods := "all pods"
	if pe.pod != nil && !pe.pod.Empty() {
		pods = "pods " + pe.pod.String()
	}
	switch {
	case pe.ns == nil:
		return pods + " in namespace " + pe.policyNS
	case pe.ns.Empty():
		return pods + " in all namespaces"
	}
	return pods + " in namespaces " + pe.ns.String()
}

// nameOnly says whether a namespace selector can be decided knowing only
// the namespace's name (its kubernetes.io/metadata.name label).
func nameOnly(s labels.Selector) bool {
	reqs, _ := s.Requirements()
	for _, r := range reqs {
		if r.Key() != corev1.LabelMetadataName {
			return false
		}
	}
	return true
}

func compileBlock(b *networkingv1.IPBlock) (*ipBlock, error) {
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return nil, fmt.Errorf("invalid ipBlock cidr %q: %w", b.CIDR, err)
	}
	out := &ipBlock{cidr: cidr.Masked()}
	for _, e := range b.Except {
		ex, err := netip.ParsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("invalid ipBlock except %q: %w", e, err)
		}
		out.except = append(out.except, ex.Masked())
	}
	return out, nil
}

// contains reports whether ip is in the block and in none of its excepts;
// when it is excepted, it returns the except that removed it.
func (b *ipBlock) contains(ip netip.Addr) (bool, netip.Prefix) {
	if !b.cidr.Contains(ip) {
		return false, netip.Prefix{}
	}
	for _, ex := range b.except {
		if ex.Contains(ip) {
			return false, ex
		}
	}
	return true, netip.Prefix{}
}

func compilePort(np networkingv1.NetworkPolicyPort) port {
	pt := port{proto: corev1.ProtocolTCP}
	if np.Protocol != nil && *np.Protocol != "" {
		pt.proto = *np.Protocol
	}
	switch {
	case np.Port == nil:
		pt.all = true
	case np.Port.Type == intstr.String:
		pt.name = np.Port.StrVal // endPort is invalid with a named port: ignored
	default:
		pt.num, pt.end = np.Port.IntVal, np.Port.IntVal
		if np.EndPort != nil && *np.EndPort >= pt.num {
			pt.end = *np.EndPort
		}
	}
	return pt
}

func (pt port) String() string {
	switch {
	case pt.all:
		return "all " + string(pt.proto) + " ports"
	case pt.name != "" && pt.anyProto:
		return pt.name
	case pt.name != "":
		return pt.name + "/" + string(pt.proto)
	case pt.end != pt.num:
		return strconv.Itoa(int(pt.num)) + "-" + strconv.Itoa(int(pt.end)) + "/" + string(pt.proto)
	}
	return strconv.Itoa(int(pt.num)) + "/" + string(pt.proto)
}

// match says whether the port admits target on the destination Pod dst
// (nil when the destination is not a Pod, e.g. a ClusterIP).
func (pt port) match(target PortRef, dst *corev1.Pod) Verdict {
	if pt.anyProto {
		pt.proto = target.Protocol
	}
	if pt.proto != target.Protocol {
		return Denied
	}
	if pt.all {
		return Allowed
	}
	if pt.name != "" {
		if dst == nil {
			return Unknown
		}
		num, ok := namedPort(dst, pt.name, pt.proto)
		if !ok || num != target.Number {
			return Denied
		}
		return Allowed
	}
	if target.Number >= pt.num && target.Number <= pt.end {
		return Allowed
	}
	return Denied
}

// namedPort resolves a container port name on a Pod the way the
// EndpointSlice controller does: name and protocol, in containers and
// then sidecar (restartable init) containers.
func namedPort(pod *corev1.Pod, name string, proto corev1.Protocol) (int32, bool) {
	for i := range pod.Spec.Containers {
		if n, ok := findPort(pod.Spec.Containers[i].Ports, name, proto); ok {
			return n, true
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		if n, ok := findPort(c.Ports, name, proto); ok {
			return n, true
		}
	}
	return 0, false
}

func findPort(ports []corev1.ContainerPort, name string, proto corev1.Protocol) (int32, bool) {
	for _, p := range ports {
		pp := p.Protocol
		if pp == "" {
			pp = corev1.ProtocolTCP
		}
		if p.Name == name && pp == proto {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// resolveTarget resolves a Service target port on one Pod. Number stays 0
// when a named targetPort is not defined on the Pod.
func resolveTarget(pod *corev1.Pod, tp TargetPort) PortRef {
	ref := PortRef{ServicePort: tp.Name, Protocol: tp.Protocol}
	if ref.Protocol == "" {
		ref.Protocol = corev1.ProtocolTCP
	}
	if tp.Port.Type == intstr.String {
		ref.TargetName = tp.Port.StrVal
		if pod != nil {
			ref.Number, _ = namedPort(pod, tp.Port.StrVal, ref.Protocol)
		}
		return ref
	}
	ref.Number = tp.Port.IntVal
	return ref
}

// NeedsNamespaceLabels says whether a policy has a namespaceSelector that
// cannot be decided knowing only a namespace's name, so that a caller reads
// namespace labels only when they matter.
func NeedsNamespaceLabels(np *networkingv1.NetworkPolicy) bool {
	need := func(peers []networkingv1.NetworkPolicyPeer) bool {
		for _, p := range peers {
			if p.NamespaceSelector == nil {
				continue
			}
			s, err := metav1.LabelSelectorAsSelector(p.NamespaceSelector)
			if err == nil && !s.Empty() && !nameOnly(s) {
				return true
			}
		}
		return false
	}
	for _, r := range np.Spec.Ingress {
		if need(r.From) {
			return true
		}
	}
	for _, r := range np.Spec.Egress {
		if need(r.To) {
			return true
		}
	}
	return false
}
