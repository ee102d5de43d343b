package trace

import (
	"context"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/kubectl-svctrace/trace/netpol"
)

// LayerPolicy judges the NetworkPolicies in front of the backend Pods. It is
// an API-side layer: whether a CNI enforces them is stated, never guessed.
const LayerPolicy LayerName = "policy"

// PolicyClient is the client a trace is run for (--from); nil means "any
// client": the layer then says who is admitted.
type PolicyClient struct {
	Pod  *corev1.Pod  `json:"pod,omitempty"`
	Node *corev1.Node `json:"node,omitempty"`
	// NodeName is set for --from node/NAME even when the Node is unreadable.
	NodeName string `json:"nodeName,omitempty"`
}

// Policy catalog codes.
const (
	CodeNPNone          = "NP001"
	CodeNPAdmitted      = "NP002"
	CodeNPDenied        = "NP003"
	CodeNPIsolated      = "NP004"
	CodeNPNothingAdmits = "NP005"
	CodeNPEnforcement   = "NP006"
	CodeNPEgressDenied  = "NP007"
	CodeNPUndecided     = "NP008"
	CodeNPDNSDenied     = "NP009"
	CodeNPDNSTCPDenied  = "NP010"
)

const resNetworkPolicies = "networkpolicies.networking.k8s.io"

var policyCatalog = []CheckSpec{
	{Code: CodeNPNone, Layer: LayerPolicy, Severity: SeverityInfo, Title: "No NetworkPolicy",
		Message:  "no NetworkPolicy in namespace {namespace} selects the backend Pods: they accept traffic from any source",
		NextStep: "kubectl get networkpolicies -n {namespace}"},
	{Code: CodeNPAdmitted, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Client admitted",
		Message:  "{line}",
		NextStep: "kubectl get networkpolicies -n {namespace} -o yaml"},
	{Code: CodeNPDenied, Layer: LayerPolicy, Severity: SeverityError, Title: "NetworkPolicy denies the client",
		Message:  "{line}; denying: {policies}",
		NextStep: "kubectl describe networkpolicy -n {namespace} {firstPolicy}"},
	{Code: CodeNPIsolated, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Backends isolated",
		Message:  "{isolated} of {total} backend Pod/port pairs are isolated by {policies}; admitted sources: {sources}",
		NextStep: "kubectl describe networkpolicy -n {namespace} {firstPolicy}"},
	{Code: CodeNPNothingAdmits, Layer: LayerPolicy, Severity: SeverityError, Title: "No source admitted",
		Message:  "{policies} isolate the backend Pods and no ingress rule admits any source on the target port",
		NextStep: "kubectl describe networkpolicy -n {namespace} {firstPolicy}"},
	{Code: CodeNPEnforcement, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Enforcement depends on the CNI",
		Message:  "{note}",
		NextStep: "kubectl get pods -n kube-system -o wide"},
	{Code: CodeNPEgressDenied, Layer: LayerPolicy, Severity: SeverityError, Title: "Client egress denied",
		Message:  "the client's own egress policies do not let it reach {target}: {reason}",
		NextStep: "kubectl get networkpolicies -n {clientNamespace} -o yaml"},
	{Code: CodeNPDNSDenied, Layer: LayerPolicy, Severity: SeverityError, Title: "Client egress blocks DNS",
		Message:  "the client's egress policies do not admit the cluster DNS (UDP {udp}, TCP {tcp}): every name lookup of the Service fails before a packet reaches it; {reason}",
		NextStep: "kubectl get networkpolicies -n {clientNamespace} -o yaml"},
	{Code: CodeNPDNSTCPDenied, Layer: LayerPolicy, Severity: SeverityWarning, Title: "Client egress blocks DNS over TCP",
		Message:  "the client's egress policies admit the cluster DNS over UDP but not TCP (UDP {udp}, TCP {tcp}): answers too large for UDP (truncated, retried over TCP) fail; {reason}",
		NextStep: "kubectl get networkpolicies -n {clientNamespace} -o yaml"},
	{Code: CodeNPUndecided, Layer: LayerPolicy, Severity: SeverityWarning, Title: "Policy outcome undecided",
		Message:  "{line}",
		NextStep: "kubectl get networkpolicies -n {namespace} -o yaml"},
}

// fetchPolicies lists the NetworkPolicies of the Service's namespace (and of
// the client Pod's, for its egress), paged. A failure becomes a gap that
// turns the policy layer unknown.
func fetchPolicies(ctx context.Context, client kubernetes.Interface, in *Input) {
	for _, ns := range []string{in.Namespace} {
		opts := metav1.ListOptions{Limit: PageSize}
		for {
			list, err := client.NetworkingV1().NetworkPolicies(ns).List(ctx, opts)
			if err != nil {
				in.Gaps = append(in.Gaps, gapFor(LayerPolicy, "list", resNetworkPolicies, ns, err, "NetworkPolicies not judged"))
				in.UnreadPolicyNamespaces = append(in.UnreadPolicyNamespaces, ns)
				break
			}
			in.NetworkPolicies = append(in.NetworkPolicies, list.Items...)
			if list.Continue == "" {
				break
			}
			opts.Continue = list.Continue
		}
	}
}

// dnsPodLimit bounds the DNS Pods read for the client's DNS egress check.
const dnsPodLimit = 8

// fetchDNSPods reads the Pods behind the cluster DNS endpoints (their labels
// decide podSelector egress peers), one get each, up to dnsPodLimit.
func fetchDNSPods(ctx context.Context, client kubernetes.Interface, in *Input) {
	seen := map[string]bool{}
	for i := range in.DNSSlices {
		for _, e := range in.DNSSlices[i].Endpoints {
			ref := e.TargetRef
			if ref == nil || ref.Kind != "Pod" || seen[ref.Namespace+"/"+ref.Name] || len(seen) == dnsPodLimit {
				continue
			}
			seen[ref.Namespace+"/"+ref.Name] = true
			ns := ref.Namespace
			if ns == "" {
				ns = "kube-system"
			}
			p, err := client.CoreV1().Pods(ns).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				continue // the DNS decision turns Unknown for selector peers
			}
			in.DNSPods = append(in.DNSPods, *p)
		}
	}
}

// judgePolicy fills the policy layer.
func judgePolicy(in *Input, t *ServiceTrace, from *PolicyClient) {
	l := t.Layer(LayerPolicy)
	if l == nil || l.Status == StatusSkipped {
		return
	}
	svc := in.Service
	if svc == nil {
		l.Skip("Service not found")
		return
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		l.Skip("ExternalName Service: no backend Pods to protect")
		return
	}
	if in.hasGap(LayerPolicy, resNetworkPolicies) && len(in.NetworkPolicies) == 0 {
		return // the gap check already made the layer unknown
	}
	args := func(a Args) Args {
		out := Args{"namespace": in.Namespace, "service": in.Name}
		for k, v := range a {
			out[k] = v
		}
		return out
	}
	add := func(code string, a Args, fields ...Field) *Check {
		l.Add(NewCheck(code, args(a), fields...))
		return &l.Checks[len(l.Checks)-1]
	}
	if len(in.Pods) == 0 {
		l.Skip("no backend Pods selected: nothing for a NetworkPolicy to protect")
		return
	}

	client := netpol.AnyClient()
	switch {
	case from != nil && from.Pod != nil:
		client = netpol.ClientFromPod(from.Pod)
	case from != nil && from.Node != nil:
		client = netpol.ClientFromNode(from.Node)
	case from != nil:
		client = netpol.Client{Kind: netpol.ClientNode, Name: from.NodeName}
	}
	npIn := &netpol.Input{
		Backends:         in.Pods,
		Ports:            portsForPolicy(svc, t.Metadata.Port),
		Policies:         in.NetworkPolicies,
		UnreadNamespaces: in.UnreadPolicyNamespaces,
		Client:           client,
	}
	if client.Kind == netpol.ClientPod && in.DNSService != nil {
		dt := &netpol.DNSTarget{Pods: in.DNSPods, Ports: netpol.TargetPortsOf(in.DNSService)}
		for _, ip := range in.DNSService.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				dt.ClusterIPs = append(dt.ClusterIPs, a)
			}
		}
		npIn.DNS = dt
	}
	res := netpol.Evaluate(npIn)
	s := res.Summary
	policies := strings.Join(s.DenyingPolicies, ", ")
	var isolating []string
	seen := map[string]bool{}
	var sources []string
	srcSeen := map[string]bool{}
	var evidence []string
	for _, d := range res.Decisions {
		for _, m := range d.MatchingPolicies {
			if !seen[m.Policy] {
				seen[m.Policy] = true
				isolating = append(isolating, m.Policy)
			}
		}
		for _, src := range d.AdmittedSources {
			if !srcSeen[src] {
				srcSeen[src] = true
				sources = append(sources, src)
			}
		}
		if d.Isolated && len(evidence) < 20 {
			evidence = append(evidence, fmt.Sprintf("%s %s: %s", d.Pod, d.Port, d.Reason))
		}
	}
	sort.Strings(isolating)
	first := func(l []string) string {
		if len(l) == 0 {
			return ""
		}
		return strings.SplitN(l[0], "/", 2)[len(strings.SplitN(l[0], "/", 2))-1]
	}
	withRaw := func(c *Check) {
		if len(evidence) > 0 {
			if c.Evidence == nil {
				c.Evidence = &Evidence{}
			}
			c.Evidence.Raw = evidence
		}
	}

	switch {
	case s.Isolated == 0 && s.Unknown == 0:
		add(CodeNPNone, nil)
	case client.Kind == netpol.ClientAny && s.Isolated > 0 && len(sources) == 0 && s.Unknown == 0:
		withRaw(add(CodeNPNothingAdmits, Args{"policies": strings.Join(isolating, ", "), "firstPolicy": first(isolating)}))
	case client.Kind == netpol.ClientAny:
		withRaw(add(CodeNPIsolated, Args{"isolated": strconv.Itoa(s.Isolated), "total": strconv.Itoa(s.Decisions),
			"policies": strings.Join(isolating, ", "), "firstPolicy": first(isolating), "sources": listOrNone(sources)},
			fieldItems("admittedSources", sources)))
	case s.Denied > 0:
		withRaw(add(CodeNPDenied, Args{"line": s.Line, "policies": policies, "firstPolicy": first(s.DenyingPolicies)},
			fieldItems("denyingPolicies", s.DenyingPolicies)))
	case s.Unknown > 0:
		withRaw(add(CodeNPUndecided, Args{"line": s.Line}))
	default:
		withRaw(add(CodeNPAdmitted, Args{"line": s.Line}))
	}
	for _, d := range res.Decisions {
		if e := d.ClientEgress; e != nil && e.Allowed == netpol.Denied {
			add(CodeNPEgressDenied, Args{"target": d.Pod.String() + " " + d.Port.String(), "reason": e.Reason,
				"clientNamespace": from.Pod.Namespace})
			break
		}
	}
	if d := res.DNS; d != nil && d.Isolated {
		// Resolvers ask over UDP first and fall back to TCP for long
		// answers: UDP denied breaks every lookup, TCP denied the large ones.
		a := Args{"udp": string(d.UDP), "tcp": string(d.TCP), "reason": d.Reason, "clientNamespace": from.Pod.Namespace}
		switch {
		case d.UDP == netpol.Denied:
			add(CodeNPDNSDenied, a)
		case d.TCP == netpol.Denied:
			add(CodeNPDNSTCPDenied, a)
		}
	}
	if s.Isolated > 0 || len(in.NetworkPolicies) > 0 {
		add(CodeNPEnforcement, Args{"note": netpol.EnforcementNote})
	}
}

// portsForPolicy is the Service's target ports, limited by --port.
func portsForPolicy(svc *corev1.Service, port string) []netpol.TargetPort {
	all := netpol.TargetPortsOf(svc)
	if port == "" {
		return all
	}
	var out []netpol.TargetPort
	for i, p := range svc.Spec.Ports {
		if p.Name == port || strconv.Itoa(int(p.Port)) == port {
			out = append(out, all[i])
		}
	}
	return out
}

// PolicyClientFromPod is a convenience for callers resolving --from.
func PolicyClientFromPod(p *corev1.Pod) *PolicyClient {
	return &PolicyClient{Pod: p, NodeName: p.Spec.NodeName}
}
