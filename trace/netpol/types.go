package netpol

import (
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"
)

// EnforcementNote is stated next to every policy decision: the decisions say
// what the NetworkPolicy objects admit, not what the cluster enforces.
const EnforcementNote = "NetworkPolicies are enforced only by a CNI plugin that implements them " +
	"(e.g. Calico, Cilium, Antrea, kube-router; not kubenet or flannel alone): these decisions say what " +
	"the policies admit, not whether this cluster enforces them"

// NodeClientNote accompanies decisions for a node or host-network client.
const NodeClientNote = "the client is a node or host-network source: whether such traffic is subject to " +
	"NetworkPolicy depends on the CNI (many always admit traffic from the Pod's own node, e.g. kubelet probes), " +
	"and podSelector/namespaceSelector peers never match it; only ipBlock peers can"

// IPBlockPodNote accompanies decisions that rest on an ipBlock matching a
// Pod IP.
const IPBlockPodNote = "an ipBlock peer matched a Pod IP: the API intends ipBlock for cluster-external " +
	"addresses and CNIs differ on whether it applies to Pod IPs"

// HostNetworkBackendNote accompanies decisions for a backend Pod that uses
// the node's network namespace.
const HostNetworkBackendNote = "the backend Pod uses hostNetwork: the API leaves NetworkPolicy for such Pods " +
	"undefined and most CNIs do not enforce it there"

// OutOfScopeNote says which policy kinds the decisions ignore.
const OutOfScopeNote = "CNI-specific policy kinds (e.g. CiliumNetworkPolicy, Calico's NetworkPolicy and " +
	"GlobalNetworkPolicy) are not evaluated"

// Verdict is a three-valued answer: Unknown means an input needed to decide
// was missing, never a guess.
type Verdict string

// Verdicts.
const (
	Allowed Verdict = "Allowed"
	Denied  Verdict = "Denied"
	Unknown Verdict = "Unknown"
)

// Direction is the side of a policy a rule belongs to.
type Direction string

// Directions, spelled as networking/v1 policyTypes.
const (
	Ingress Direction = Direction(networkingv1.PolicyTypeIngress)
	Egress  Direction = Direction(networkingv1.PolicyTypeEgress)
)

func (d Direction) lower() string {
	switch d {
	case Ingress:
		return "ingress"
	case Egress:
		return "egress"
	}
	return strings.ToLower(string(d))
}

// ClientKind says what the traffic comes from.
type ClientKind string

// Client kinds. The zero value means ClientAny.
const (
	// ClientPod is a Pod on the Pod network: namespace, labels, IPs.
	ClientPod ClientKind = "Pod"
	// ClientNode is a node or a hostNetwork Pod: only its IPs count.
	ClientNode ClientKind = "Node"
	// ClientAny is "whoever": the decisions list which sources are admitted.
	ClientAny ClientKind = "Any"
)

// Client describes where the traffic to the Service comes from.
type Client struct {
	Kind ClientKind
	// Namespace, Name and Labels describe a ClientPod; Name also names a
	// ClientNode in messages.
	Namespace string
	Name      string
	Labels    map[string]string
	// IPs are the client's addresses (Pod IPs, or node IPs). ipBlock peers
	// match when any of them is inside the block; without IPs an ipBlock
	// peer is Unknown for this client.
	IPs []netip.Addr
}

// AnyClient is the client of a trace without --from.
func AnyClient() Client { return Client{Kind: ClientAny} }

// ClientFromPod describes a Pod as a client. A hostNetwork Pod sends with its
// node's address and is not selected by policies' Pod selectors, so it
// becomes a ClientNode.
func ClientFromPod(pod *corev1.Pod) Client {
	c := Client{Kind: ClientPod, Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels, IPs: PodIPs(pod)}
	if pod.Spec.HostNetwork {
		c.Kind = ClientNode
		c.Name = pod.Namespace + "/" + pod.Name + " (hostNetwork)"
		c.Labels = nil
	}
	return c
}

// ClientFromNode describes a node as a client, from its InternalIP and
// ExternalIP addresses.
func ClientFromNode(node *corev1.Node) Client {
	c := Client{Kind: ClientNode, Name: node.Name}
	for _, a := range node.Status.Addresses {
		if a.Type != corev1.NodeInternalIP && a.Type != corev1.NodeExternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil {
			c.IPs = append(c.IPs, ip.Unmap())
		}
	}
	return c
}

// String names the client in messages: "pod shop/frontend-abc",
// "node worker-1 (10.0.0.1)", "any client".
func (c Client) String() string {
	switch c.kind() {
	case ClientPod:
		return "pod " + c.Namespace + "/" + c.Name
	case ClientNode:
		name := c.Name
		if name == "" {
			name = "host"
		}
		if len(c.IPs) == 0 {
			return "node " + name
		}
		return "node " + name + " (" + joinAddrs(c.IPs) + ")"
	}
	return "any client"
}

func (c Client) kind() ClientKind {
	if c.Kind == "" {
		return ClientAny
	}
	return c.Kind
}

// TargetPort is one Service port as the backends see it.
type TargetPort struct {
	// Name is the Service port's name, for messages ("" for a single
	// unnamed port).
	Name string
	// Port is the Service port's targetPort: a number, or a container port
	// name resolved per Pod.
	Port intstr.IntOrString
	// Protocol is the Service port's protocol; "" means TCP.
	Protocol corev1.Protocol
}

// TargetPortsOf returns the target ports of a Service, with an unset
// targetPort defaulting to the port, as the API server defaults it.
func TargetPortsOf(svc *corev1.Service) []TargetPort {
	out := make([]TargetPort, 0, len(svc.Spec.Ports))
	for _, p := range svc.Spec.Ports {
		tp := p.TargetPort
		if tp.Type == intstr.Int && tp.IntVal == 0 || tp.Type == intstr.String && tp.StrVal == "" {
			tp = intstr.FromInt32(p.Port)
		}
		out = append(out, TargetPort{Name: p.Name, Port: tp, Protocol: p.Protocol})
	}
	return out
}

// DNSTarget describes the cluster DNS, for the client's DNS egress check.
type DNSTarget struct {
	// Pods are the DNS backends (kube-system/kube-dns endpoints' Pods).
	Pods []corev1.Pod
	// ClusterIPs are the DNS Service's ClusterIPs. Egress policy is
	// evaluated after DNAT by kube-proxy and eBPF datapaths, so an ipBlock
	// that matches only the ClusterIP is reported as CNI-dependent.
	ClusterIPs []netip.Addr
	// Ports are the DNS Service's target ports; nil means 53/UDP and 53/TCP.
	Ports []TargetPort
	// Resolvers, when set, are the client's own nameservers (its
	// resolv.conf), which it queries instead of the DNS Service: a
	// NodeLocal DNSCache address such as 169.254.20.10, say. They are no
	// Pods, so only ipBlock peers and rules without "to" admit them, on 53.
	Resolvers []netip.Addr
}

// Input is everything Evaluate needs. All of it comes from the API.
type Input struct {
	// Backends are the Service's backend Pods.
	Backends []corev1.Pod
	// Ports are the Service ports to decide on (see TargetPortsOf).
	Ports []TargetPort
	// Policies are the NetworkPolicies of the backends' namespace and, for
	// a ClientPod in another namespace, of the client's namespace. Each
	// applies only to Pods of its own namespace.
	Policies []networkingv1.NetworkPolicy
	// UnreadNamespaces are namespaces whose NetworkPolicies could not be
	// listed: decisions that depend on them are Unknown.
	UnreadNamespaces []string
	// NamespaceLabels maps namespace name to its labels, for
	// namespaceSelector. A namespace missing here is known only by its
	// kubernetes.io/metadata.name label: selectors that need more are
	// Unknown for it.
	NamespaceLabels map[string]map[string]string
	// NamespaceLabelsUnread, when set, says why the namespaces' labels
	// could not be read (a forbidden list); it is quoted in the Unknown
	// answers that needed them.
	NamespaceLabelsUnread string
	// AdminNetworkPolicies and BaselineAdminNetworkPolicies are the admin
	// tiers (cluster-scoped); AdminPoliciesUnread, when set, says why they
	// could not be read, and every answer they could change is Unknown.
	AdminNetworkPolicies         []anpv1alpha1.AdminNetworkPolicy
	BaselineAdminNetworkPolicies []anpv1alpha1.BaselineAdminNetworkPolicy
	AdminPoliciesUnread          string
	// Unevaluated, when set, says which policies this package does not
	// evaluate may decide the traffic (e.g. CiliumNetworkPolicies exist):
	// no answer is then Allowed, and Reason quotes it.
	Unevaluated string
	// Client is where traffic comes from; the zero value is AnyClient.
	Client Client
	// DNS, when set and the client is a Pod, adds the DNS egress check.
	DNS *DNSTarget
}

// PodRef names a backend Pod in a Decision.
type PodRef struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	IPs       []string `json:"ips,omitempty"`
	Node      string   `json:"node,omitempty"`
}

// String is "namespace/name".
func (p PodRef) String() string { return p.Namespace + "/" + p.Name }

// PortRef is a Service port resolved on one Pod.
type PortRef struct {
	// ServicePort is the Service port's name.
	ServicePort string `json:"servicePort,omitempty"`
	// TargetName is the targetPort's name when the Service names it.
	TargetName string `json:"targetName,omitempty"`
	// Number is the resolved port number; 0 when the name did not resolve.
	Number   int32           `json:"number"`
	Protocol corev1.Protocol `json:"protocol"`
}

// String is "8080/TCP", or "http/TCP" when the name did not resolve.
func (p PortRef) String() string {
	if p.Number == 0 {
		return p.TargetName + "/" + string(p.Protocol)
	}
	return strconv.Itoa(int(p.Number)) + "/" + string(p.Protocol)
}

// PolicyMatch is one policy that selects a Pod, with its effective types.
type PolicyMatch struct {
	// Policy is "namespace/name".
	Policy      string      `json:"policy"`
	PolicyTypes []Direction `json:"policyTypes"`
}

// RuleRef points at one rule: the policy, its direction and the index of the
// rule in spec.ingress or spec.egress.
type RuleRef struct {
	Policy    string    `json:"policy"`
	Direction Direction `json:"direction"`
	Index     int       `json:"index"`
}

// String is "shop/allow-fe ingress[0]".
func (r RuleRef) String() string {
	return r.Policy + " " + r.Direction.lower() + "[" + strconv.Itoa(r.Index) + "]"
}

// RuleEvidence is one rule of a policy that selects the Pod (or the client,
// for egress) and what it says for this client and port. Index is -1 for a
// policy with no rules in this direction, which admits nothing.
type RuleEvidence struct {
	RuleRef
	// Summary is the rule in words: "from pods app=frontend in namespace
	// shop; ports 8080/TCP".
	Summary string `json:"summary"`
	// Admits is this rule's answer for the client on the port.
	Admits Verdict `json:"admits"`
	// Why explains a Denied or Unknown answer ("client labels do not
	// match", "ports do not include 8080/TCP").
	Why string `json:"why,omitempty"`
}

// String is one line: "shop/allow-fe ingress[0]: from ...; ports ... → Denied (why)".
func (e RuleEvidence) String() string {
	var b strings.Builder
	if e.Index < 0 {
		b.WriteString(e.Policy)
	} else {
		b.WriteString(e.RuleRef.String())
	}
	b.WriteString(": ")
	b.WriteString(e.Summary)
	b.WriteString(" -> ")
	b.WriteString(string(e.Admits))
	if e.Why != "" {
		b.WriteString(" (")
		b.WriteString(e.Why)
		b.WriteString(")")
	}
	return b.String()
}

// EgressDecision is the client Pod's side: do the policies that select the
// client for Egress admit the destination?
type EgressDecision struct {
	Isolated         bool           `json:"isolated"`
	Allowed          Verdict        `json:"allowed"`
	MatchingPolicies []PolicyMatch  `json:"matchingPolicies,omitempty"`
	AllowingRule     *RuleRef       `json:"allowingRule,omitempty"`
	Reason           string         `json:"reason"`
	Evidence         []RuleEvidence `json:"evidence,omitempty"`
}

// Decision is the answer for one backend Pod and one Service port.
type Decision struct {
	Pod  PodRef  `json:"pod"`
	Port PortRef `json:"port"`
	// Isolated says some policy selects the Pod for Ingress.
	Isolated bool `json:"isolated"`
	// Allowed is the overall answer: ingress admitted and, for a client
	// Pod, its egress admitted. For AnyClient, Allowed means every source
	// is admitted, Denied none, and Unknown either some (AnySourceAdmitted
	// and AdmittedSources say which) or undecidable (see Reason).
	Allowed Verdict `json:"allowed"`
	// IngressAllowed is the backend side alone.
	IngressAllowed Verdict `json:"ingressAllowed"`
	// MatchingPolicies select the Pod, whatever their types.
	MatchingPolicies []PolicyMatch `json:"matchingPolicies,omitempty"`
	// AllowingRule is the first ingress rule that admits the client (nil
	// when not isolated or not admitted).
	AllowingRule *RuleRef `json:"allowingRule,omitempty"`
	// Reason is one human line; it names the denying side when there is one.
	Reason string `json:"reason"`
	// Evidence lists every ingress rule of the policies that isolate the Pod.
	Evidence []RuleEvidence `json:"evidence,omitempty"`
	// ClientEgress is the client Pod's egress side (nil for other clients).
	ClientEgress *EgressDecision `json:"clientEgress,omitempty"`
	// AnySourceAdmitted and AdmittedSources answer "who could get in" for
	// AnyClient: AdmittedSources describes the admitted peers, "any source"
	// when a rule admits everything.
	AnySourceAdmitted bool     `json:"anySourceAdmitted"`
	AdmittedSources   []string `json:"admittedSources,omitempty"`
	// CNIDependent marks decisions that rest on behaviour that differs
	// between CNIs (node clients, ipBlock matching Pod IPs); Caveats say which.
	CNIDependent bool     `json:"cniDependent,omitempty"`
	Caveats      []string `json:"caveats,omitempty"`
}

// DNSDecision says whether the client Pod's egress policies admit DNS.
type DNSDecision struct {
	Isolated     bool           `json:"isolated"`
	UDP          Verdict        `json:"udp"`
	TCP          Verdict        `json:"tcp"`
	AllowingRule *RuleRef       `json:"allowingRule,omitempty"`
	Reason       string         `json:"reason"`
	Evidence     []RuleEvidence `json:"evidence,omitempty"`
	CNIDependent bool           `json:"cniDependent,omitempty"`
}

// Summary aggregates the decisions.
type Summary struct {
	// Decisions counts backend Pod × Service port pairs.
	Decisions int `json:"decisions"`
	Isolated  int `json:"isolated"`
	Allowed   int `json:"allowed"`
	Denied    int `json:"denied"`
	Unknown   int `json:"unknown"`
	// Verdict is Allowed when every decision is, Denied when any is, and
	// Unknown otherwise (also when there is no decision).
	Verdict Verdict `json:"verdict"`
	// AllDenied says no backend admits the client on any port.
	AllDenied bool `json:"allDenied"`
	// DenyingPolicies are the policies isolating a Pod that denied the
	// client, sorted.
	DenyingPolicies []string `json:"denyingPolicies,omitempty"`
	// Line is one human sentence for the whole Service.
	Line string `json:"line"`
}

// Result is what Evaluate returns.
type Result struct {
	// Client is the client in words (Client.String).
	Client    string       `json:"client"`
	Decisions []Decision   `json:"decisions"`
	DNS       *DNSDecision `json:"dns,omitempty"`
	Summary   Summary      `json:"summary"`
	// Notes always start with EnforcementNote and OutOfScopeNote.
	Notes []string `json:"notes"`
}

// PodIPs returns a Pod's IPs (status.podIPs, else status.podIP).
func PodIPs(pod *corev1.Pod) []netip.Addr {
	var out []netip.Addr
	for _, p := range pod.Status.PodIPs {
		if ip, err := netip.ParseAddr(p.IP); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	if len(out) == 0 && pod.Status.PodIP != "" {
		if ip, err := netip.ParseAddr(pod.Status.PodIP); err == nil {
			out = append(out, ip.Unmap())
		}
	}
	return out
}

func joinAddrs(ips []netip.Addr) string {
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	return strings.Join(s, ", ")
}
