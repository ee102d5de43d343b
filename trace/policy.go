package trace

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/netpol"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// netpolInput is the NetworkPolicy evaluation's input for one client.
func netpolInput(in *input.Input, client netpol.Client, ports []netpol.TargetPort) *netpol.Input {
	return &netpol.Input{
		Backends:              in.Pods,
		Ports:                 ports,
		Policies:              in.NetworkPolicies,
		UnreadNamespaces:      in.UnreadPolicyNamespaces,
		NamespaceLabels:       in.NamespaceLabels,
		NamespaceLabelsUnread: in.NamespaceLabelsUnread,
		Client:                client,

		AdminNetworkPolicies:         in.AdminNetworkPolicies,
		BaselineAdminNetworkPolicies: in.BaselineAdminNetworkPolicies,
		AdminPoliciesUnread:          in.AdminPoliciesUnread,
		Unevaluated:                  in.UnevaluatedReason(),
	}
}

// policyAnswer is the policies' three-valued answer for one client at one
// backend Pod and port, both sides (the backend's ingress, a client Pod's
// egress) combined, with the policies that decide it and why.
type policyAnswer struct {
	Pod      netpol.PodRef
	Port     netpol.PortRef
	Verdict  netpol.Verdict
	Policies []string
	Reason   string
}

// policyAnswers evaluates the policies for a client that is a Pod or a
// node (not AnyClient, whose answers say who is admitted instead).
func policyAnswers(in *input.Input, client netpol.Client, ports []netpol.TargetPort) []policyAnswer {
	res := netpol.Evaluate(netpolInput(in, client, ports))
	out := make([]policyAnswer, 0, len(res.Decisions))
	for _, d := range res.Decisions {
		a := policyAnswer{Pod: d.Pod, Port: d.Port, Verdict: d.Allowed, Reason: d.Reason}
		if d.IngressAllowed != netpol.Allowed {
			for _, m := range d.MatchingPolicies {
				if slices.Contains(m.PolicyTypes, netpol.Ingress) && !slices.Contains(a.Policies, m.Policy) {
					a.Policies = append(a.Policies, m.Policy)
				}
			}
		}
		if eg := d.ClientEgress; eg != nil && eg.Allowed != netpol.Allowed {
			for _, m := range eg.MatchingPolicies {
				if !slices.Contains(a.Policies, m.Policy) {
					a.Policies = append(a.Policies, m.Policy)
				}
			}
		}
		out = append(out, a)
	}
	return out
}

// judgePolicy fills the policy layer.
func judgePolicy(in *input.Input, e *report.Emitter, t *report.ServiceTrace, from *report.PolicyClient) {
	l := t.Layer(report.LayerPolicy)
	if l == nil || l.Status == report.StatusSkipped {
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
	if in.HasGap(report.LayerPolicy, input.ResourceNetworkPolicies) && len(in.NetworkPolicies) == 0 {
		return // the gap check already made the layer unknown
	}
	add := e.Emit
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
	npIn := netpolInput(in, client, portsForPolicy(svc, t.Metadata.Port))
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
	first := firstPolicyName
	withRaw := func(c *report.Check) {
		if len(evidence) > 0 {
			if c.Evidence == nil {
				c.Evidence = &report.Evidence{}
			}
			c.Evidence.Raw = evidence
		}
	}

	judgeUnevaluatedPolicies(in, e)
	// For any client an Unknown answer is usually "some sources"; one that
	// is not says svctrace could not decide who is admitted at all. A port
	// the Pod does not define is no policy question (the endpoints and
	// service layers say why): it leaves the answer a warning.
	var undecided, portless *netpol.Decision
	for i := range res.Decisions {
		d := &res.Decisions[i]
		switch {
		case d.Allowed != netpol.Unknown || client.Kind == netpol.ClientAny && d.AnySourceAdmitted:
		case d.Port.Number == 0:
			if portless == nil {
				portless = d
			}
		case undecided == nil:
			undecided = d
		}
	}
	switch {
	case s.Isolated == 0 && s.Unknown == 0:
		add(report.CodeNPNone, nil)
	case client.Kind == netpol.ClientAny && undecided != nil && s.Denied == 0:
		c := add(report.CodeNPUndecided, report.Args{"line": s.Line + "; " + undecided.Reason})
		c.Status = report.StatusUnknown
		withRaw(c)
	case client.Kind == netpol.ClientAny && s.Isolated > 0 && len(sources) == 0 && s.Unknown == 0:
		withRaw(add(report.CodeNPNothingAdmits, report.Args{"policies": strings.Join(isolating, ", "), "firstPolicy": first(isolating)}))
	case client.Kind == netpol.ClientAny:
		withRaw(add(report.CodeNPIsolated, report.Args{"isolated": strconv.Itoa(s.Isolated), "total": strconv.Itoa(s.Decisions),
			"policies": strings.Join(isolating, ", "), "firstPolicy": first(isolating), "sources": listOrNone(sources)},
			fieldItems("admittedSources", sources)))
	case s.Denied > 0:
		withRaw(add(report.CodeNPDenied, report.Args{"line": s.Line, "policies": policies, "firstPolicy": first(s.DenyingPolicies)},
			fieldItems("denyingPolicies", s.DenyingPolicies)))
	case s.Unknown > 0 && undecided != nil:
		// Undetermined is neither admitted nor denied: the layer says
		// it could not judge, and the exit code with it.
		c := add(report.CodeNPUndecided, report.Args{"line": s.Line + "; " + undecided.Reason})
		c.Status = report.StatusUnknown
		withRaw(c)
	case s.Unknown > 0 && portless != nil:
		withRaw(add(report.CodeNPUndecided, report.Args{"line": s.Line + "; " + portless.Reason}))
	default:
		withRaw(add(report.CodeNPAdmitted, report.Args{"line": s.Line}))
	}
	if s.Denied == 0 {
		judgeFamilies(in, add, client, portsForPolicy(svc, t.Metadata.Port))
	}
	for _, d := range res.Decisions {
		if e := d.ClientEgress; e != nil && e.Allowed == netpol.Denied {
			add(report.CodeNPEgressDenied, report.Args{"target": d.Pod.String() + " " + d.Port.String(), "reason": e.Reason,
				"clientNamespace": from.Pod.Namespace})
			break
		}
	}
	emitDNSEgress(e, res.DNS, from)
	if s.Isolated > 0 || len(in.NetworkPolicies) > 0 {
		add(report.CodeNPEnforcement, report.Args{"note": netpol.EnforcementNote})
	}
}

// firstPolicyName is the name of the first of "namespace/name" policies,
// for a kubectl describe in the same namespace; "" for none.
func firstPolicyName(policies []string) string {
	if len(policies) == 0 {
		return ""
	}
	_, name, found := strings.Cut(policies[0], "/")
	if !found {
		return policies[0]
	}
	return name
}

// judgeFamilies evaluates a dual-stack client once per IP family of the
// Service. A connection has one source address, of one family, and an
// ipBlock (a CIDR of one family) matches that address only: a client the
// policies admit as a whole (any of its addresses matched) may be dropped
// over the other family, which the Service offers too.
func judgeFamilies(in *input.Input, add func(string, report.Args, ...report.Field) *report.Check, client netpol.Client, ports []netpol.TargetPort) {
	svc := in.Service
	if svc == nil || len(svc.Spec.IPFamilies) < 2 || len(client.IPs) < 2 {
		return
	}
	var admitted, denied []string
	var deniedIPs []string
	var line string
	var policies []string
	for _, fam := range svc.Spec.IPFamilies {
		c := client
		c.IPs = nil
		for _, ip := range client.IPs {
			if ip.Is6() == (fam == corev1.IPv6Protocol) {
				c.IPs = append(c.IPs, ip)
			}
		}
		if len(c.IPs) == 0 {
			continue
		}
		s := netpol.Evaluate(netpolInput(in, c, ports)).Summary
		if s.Denied == 0 {
			admitted = append(admitted, string(fam))
			continue
		}
		denied = append(denied, string(fam))
		for _, ip := range c.IPs {
			deniedIPs = append(deniedIPs, ip.String())
		}
		if line == "" {
			line = s.Line
		}
		policies = append(policies, s.DenyingPolicies...)
	}
	if len(denied) == 0 || len(admitted) == 0 {
		return
	}
	slices.Sort(policies)
	policies = slices.Compact(policies)
	firstPolicy := firstPolicyName(policies)
	add(report.CodeNPFamilyDenied, report.Args{"admitted": strings.Join(admitted, ", "), "family": strings.Join(denied, ", "),
		"ips": strings.Join(deniedIPs, ", "), "line": line, "policies": strings.Join(policies, ", "), "firstPolicy": firstPolicy},
		fieldItems("deniedFamilies", denied), fieldItems("denyingPolicies", policies))
}

// emitDNSEgress says whether the client's egress policies admit its DNS.
// Resolvers ask over UDP first and fall back to TCP for long answers: UDP
// denied breaks every lookup, TCP denied the large ones.
func emitDNSEgress(e *report.Emitter, d *netpol.DNSDecision, from *report.PolicyClient) {
	if d == nil || !d.Isolated {
		return
	}
	a := report.Args{"udp": string(d.UDP), "tcp": string(d.TCP), "reason": d.Reason, "clientNamespace": from.Pod.Namespace}
	switch {
	case d.UDP == netpol.Denied:
		e.Emit(report.CodeNPDNSDenied, a)
	case d.TCP == netpol.Denied:
		e.Emit(report.CodeNPDNSTCPDenied, a)
	}
}

// judgeClientResolverEgress judges the client's DNS egress again against
// the nameservers its own resolv.conf names, when the collector read them
// from its network namespace and they are not the DNS Service's ClusterIPs
// (NodeLocal DNSCache's 169.254.20.10, a custom dnsConfig): the policy
// layer's first answer assumed the client asks kube-dns.
func judgeClientResolverEgress(in *input.Input, t *report.ServiceTrace, views []plan.NodeView, from *report.PolicyClient) {
	l := t.Layer(report.LayerPolicy)
	if l == nil || l.Status == report.StatusSkipped || from == nil || from.Pod == nil || in.Service == nil || len(in.Pods) == 0 {
		return
	}
	resolvers := clientNameservers(views)
	if len(resolvers) == 0 {
		return
	}
	cluster := map[netip.Addr]bool{}
	if in.DNSService != nil {
		for _, ip := range in.DNSService.Spec.ClusterIPs {
			if a, err := netip.ParseAddr(ip); err == nil {
				cluster[a] = true
			}
		}
	}
	if !slices.ContainsFunc(resolvers, func(a netip.Addr) bool { return !cluster[a] }) {
		return // it asks kube-dns, as judged
	}
	npIn := netpolInput(in, netpol.ClientFromPod(from.Pod), portsForPolicy(in.Service, t.Metadata.Port))
	npIn.DNS = &netpol.DNSTarget{Resolvers: resolvers}
	res := netpol.Evaluate(npIn)
	l.Checks = slices.DeleteFunc(l.Checks, func(c report.Check) bool {
		return c.Code == report.CodeNPDNSDenied || c.Code == report.CodeNPDNSTCPDenied
	})
	e := report.NewEmitter(t, templateArgs(in, serviceFQDN(in.Name, in.Namespace, t.Metadata.ClusterDomain)))
	emitDNSEgress(e, res.DNS, from)
}

// clientNameservers are the nameservers of the --from Pod's resolv.conf,
// as the collector read them in its network namespace.
func clientNameservers(views []plan.NodeView) []netip.Addr {
	for _, v := range views {
		o := v.Observation
		if o == nil || o.Sections.Probe == nil || o.Sections.Probe.Data == nil {
			continue
		}
		c := o.Sections.Probe.Data.Client
		if c == nil || c.Resolver == nil || c.Resolver.Error != "" {
			continue
		}
		var out []netip.Addr
		for _, ns := range c.Resolver.Nameservers {
			if a, err := netip.ParseAddr(ns); err == nil {
				out = append(out, a.Unmap())
			}
		}
		return out
	}
	return nil
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

// judgePolicyEnforcement replaces the generic caveat (NP006) with what the
// nodes holding isolated backend Pods show: kube-router's filter chains
// (NP020), a Cilium or Calico datapath, which enforces policies itself but
// whose policy state is not read (NP022), or nothing (NP021). NP006 stays
// when some such node was not inspected.
func judgePolicyEnforcement(in *input.Input, t *report.ServiceTrace, views []plan.NodeView) {
	l := t.Layer(report.LayerPolicy)
	if l == nil || in.Service == nil || len(in.NetworkPolicies) == 0 || len(in.Pods) == 0 {
		return
	}
	res := netpol.Evaluate(netpolInput(in, netpol.AnyClient(), netpol.TargetPortsOf(in.Service)))
	pods := map[string][]string{}
	policies := map[string][]string{}
	for _, d := range res.Decisions {
		if !d.Isolated || d.Pod.Node == "" {
			continue
		}
		if !slices.Contains(pods[d.Pod.Node], d.Pod.Name) {
			pods[d.Pod.Node] = append(pods[d.Pod.Node], d.Pod.Name)
		}
		for _, m := range d.MatchingPolicies {
			if !slices.Contains(policies[d.Pod.Node], m.Policy) {
				policies[d.Pod.Node] = append(policies[d.Pod.Node], m.Policy)
			}
		}
	}
	if len(pods) == 0 {
		return
	}
	byNode := map[string]*plan.NodeView{}
	for i := range views {
		byNode[views[i].Node] = &views[i]
	}
	e := report.NewEmitter(t, templateArgs(in, serviceFQDN(in.Name, in.Namespace, t.Metadata.ClusterDomain)))
	var checks []report.Check
	all := true
	for _, node := range slices.Sorted(maps.Keys(pods)) {
		sort.Strings(pods[node])
		sort.Strings(policies[node])
		a := report.Args{"pods": strings.Join(pods[node], ", "), "policies": strings.Join(policies[node], ", ")}
		v := byNode[node]
		if v == nil || v.Observation == nil {
			all = false
			continue
		}
		enforcer, chains, reason := nodeEnforcer(v.Observation)
		switch {
		case enforcer != "" && len(chains) > 0:
			a["enforcer"], a["chains"] = enforcer, strings.Join(chains, ", ")
			checks = append(checks, e.NewNodeCheck(report.CodeNPEnforced, node, a, nil))
		case enforcer != "":
			a["reason"] = "its datapath is " + enforcer + ", which enforces policies itself; its policy state is not read"
			checks = append(checks, e.NewNodeCheck(report.CodeNPEnforcementUnknown, node, a, nil))
		case reason != "":
			a["reason"] = reason
			checks = append(checks, e.NewNodeCheck(report.CodeNPEnforcementUnknown, node, a, nil))
		default:
			checks = append(checks, e.NewNodeCheck(report.CodeNPNotEnforced, node, a, nil))
		}
	}
	if all {
		l.Checks = slices.DeleteFunc(l.Checks, func(c report.Check) bool { return c.Code == report.CodeNPEnforcement })
	}
	l.Checks = append(l.Checks, checks...)
}

// nodeEnforcer is the policy enforcer a node's observation shows: kube-router
// with the chains seen, or an eBPF datapath's name (no chains), or "" with
// the reason svctrace cannot say: an enforcer it does not read, or a table
// or hook it does not recognise, named as seen. "" with no reason is the
// positive answer that nothing on the node enforces NetworkPolicies: every
// hook of the filter table and every nf_tables table was read and belongs to
// kube-proxy, the kubelet, CNI plugins without policy, or iptables-nft.
func nodeEnforcer(o *collectorapi.Observation) (enforcer string, chains []string, reason string) {
	if p := o.Sections.Proxy; p != nil && p.Data != nil {
		for _, f := range p.Data.Fingerprints {
			if f.Found && programmed.IsEBPF(f.Mode) {
				return string(f.Mode), nil, ""
			}
		}
	}
	s := o.Sections.IPTables
	if s == nil || s.Data == nil {
		if s != nil && s.Error != "" {
			return "", nil, "its iptables tables were not read: " + s.Error
		}
		return "", nil, "its iptables tables were not read"
	}
	for _, b := range s.Data.Backends {
		if b.PolicyEnforcer != "" {
			return b.PolicyEnforcer, b.PolicyEnforcerChains, ""
		}
	}
	for _, b := range s.Data.Backends {
		if b.Error != "" {
			return "", nil, "reading " + b.Backend + " " + b.Family + ": " + b.Error
		}
	}
	var seen, unread []string
	for _, b := range s.Data.Backends {
		where := "iptables (" + b.Backend + ", " + b.Family + ")"
		if !b.FilterJumpsRead {
			if b.Backend != collectorapi.IPTablesBackendLegacy || slices.Contains(b.LegacyTables, "filter") {
				unread = append(unread, "the filter table's INPUT, FORWARD and OUTPUT rules of "+where)
			}
			continue
		}
		for _, target := range b.FilterJumps {
			if who, known := filterHookOwner(target); !known || who != "" {
				seen = append(seen, where+" filter jump to "+target+" ("+orUnrecognised(who)+")")
			}
		}
	}
	var tables []string
	if p := o.Sections.Proxy; p != nil && p.Data != nil {
		tables = p.Data.NetfilterTables
	}
	if tables == nil {
		unread = append(unread, "its nf_tables table list")
	}
	for _, t := range tables {
		if who, known := netfilterTableOwner(t); !known || who != "" {
			seen = append(seen, "nf_tables table "+t+" ("+orUnrecognised(who)+")")
		}
	}
	switch {
	case len(seen) > 0:
		return "", nil, "seen: " + strings.Join(seen, "; ") + ": svctrace does not read this enforcer's policy state, or does not recognise what it saw"
	case len(unread) > 0:
		return "", nil, "not read: " + strings.Join(unread, "; ")
	}
	return "", nil, ""
}

func orUnrecognised(who string) string {
	if who == "" {
		return "not recognised"
	}
	return who
}

// policyHookPrefixes are the chains policy enforcers that filter with
// iptables hook into the filter table's built-in chains, and whose they are.
var policyHookPrefixes = []struct{ prefix, owner string }{
	{"cali-", "Calico's iptables dataplane"},
	{"ANTREA-", "Antrea"},
	{"OVN-KUBE-", "OVN-Kubernetes"},
	{"WEAVE-NPC", "Weave Net's policy controller"},
	{"AZURE-NPM", "Azure Network Policy Manager"},
	{"AWS-", "the AWS VPC CNI"},
	{"KUBE-ROUTER-", "kube-router"},
	{"KUBE-NWPLCY-", "kube-router"},
	{"KUBE-POD-FW-", "kube-router"},
}

// benignHooks are the chains of programs that enforce no NetworkPolicy:
// kube-proxy and the kubelet (KUBE-*), CNI plugins' portmap and firewall
// (CNI-*), flannel and Docker; and the verdicts a rule may give directly.
var benignHooks = []string{"KUBE-FIREWALL", "KUBE-FORWARD", "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES",
	"KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL", "KUBE-PROXY-CANARY", "KUBE-KUBELET-CANARY",
	"ACCEPT", "DROP", "RETURN", "REJECT", "LOG"}

var benignHookPrefixes = []string{"CNI-", "FLANNEL-", "DOCKER"}

// filterHookOwner says whose a filter hook's target is: a policy enforcer
// (its name), a program that enforces none ("", true), or unknown (false).
func filterHookOwner(target string) (string, bool) {
	for _, p := range policyHookPrefixes {
		if strings.HasPrefix(target, p.prefix) {
			return p.owner, true
		}
	}
	if slices.Contains(benignHooks, target) {
		return "", true
	}
	for _, p := range benignHookPrefixes {
		if strings.HasPrefix(target, p) {
			return "", true
		}
	}
	return "", false
}

// netfilterTableOwner says whose an nf_tables table ("family name") is, as
// filterHookOwner does for hooks: iptables-nft's, arptables' and ebtables'
// tables and kube-proxy's own enforce no NetworkPolicy.
func netfilterTableOwner(table string) (string, bool) {
	family, name, _ := strings.Cut(table, " ")
	switch {
	case (family == "ip" || family == "ip6") && slices.Contains([]string{"filter", "nat", "mangle", "raw", "security", "kube-proxy"}, name),
		family == "arp" && name == "filter",
		family == "bridge" && slices.Contains([]string{"filter", "nat", "broute"}, name):
		return "", true
	case strings.Contains(name, "kube-network-policies"):
		return "kube-network-policies", true
	case strings.Contains(name, "kube-router"):
		return "kube-router's nftables mode", true
	case strings.Contains(name, "calico"):
		return "Calico's nftables dataplane", true
	case strings.Contains(name, "antrea"):
		return "Antrea", true
	case strings.Contains(name, "ovn"):
		return "OVN-Kubernetes", true
	case strings.Contains(name, "cilium"):
		return "Cilium", true
	}
	return "", false
}

// judgeUnevaluatedPolicies says which policy kinds svctrace does not
// evaluate exist where they could decide the traffic: the policy layer's
// answer is then undetermined, never admitted.
func judgeUnevaluatedPolicies(in *input.Input, e *report.Emitter) {
	present := in.UnevaluatedPresent()
	if len(present) == 0 {
		return
	}
	var kinds []string
	for _, u := range present {
		kinds = append(kinds, u.Describe())
	}
	c := e.Emit(report.CodeNPKindNotEvaluated, report.Args{"kinds": strings.Join(kinds, "; ")}, fieldItems("kinds", kinds))
	c.Status = report.StatusUnknown
}
