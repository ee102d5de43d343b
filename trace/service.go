package trace

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func (j *judge) serviceChecks() {
	svc := j.svc
	s := &j.t.Service
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		j.Emit(report.CodeSvcExternalName, report.Args{"externalName": svc.Spec.ExternalName},
			fieldValue("externalName", svc.Spec.ExternalName))
		return
	case s.Headless:
		j.Emit(report.CodeSvcHeadless, nil, fieldValue("clusterIP", "None"))
	default:
		j.Emit(report.CodeSvcType, report.Args{"type": s.Type, "applies": j.typeApplies()}, j.typeEvidence()...)
	}
	if len(s.IPFamilies) > 0 {
		fams := strings.Join(s.IPFamilies, ", ")
		fields := []report.Field{fieldItems("ipFamilies", s.IPFamilies)}
		if !s.Headless {
			fields = append(fields, fieldItems("clusterIPs", s.ClusterIPs))
		}
		j.Emit(report.CodeSvcIPFamilies, report.Args{"families": fams, "policy": orNone(s.IPFamilyPolicy)}, fields...)
	}
	// kube-proxy's Service informer selects on the label's absence, so an
	// empty value excludes the Service as much as a proxy's name does.
	if name, ok := svc.Labels[labelServiceProxyName]; ok {
		owner := "; only a proxy named " + name + " programs it"
		if name == "" {
			owner = "; the value is empty and names no proxy, so most likely nothing programs it"
		}
		j.Emit(report.CodeSvcProxyName, report.Args{"proxyName": name, "owner": owner},
			fieldValue(labelServiceProxyName, name))
	} else if !s.Headless {
		j.ignoredSlicesCheck()
	}
	j.selectorChecks()
	if s.SessionAffinityTimeoutSeconds != nil {
		t := strconv.Itoa(int(*s.SessionAffinityTimeoutSeconds))
		j.Emit(report.CodeSvcSessionAffinity, report.Args{"timeout": t},
			fieldValue("sessionAffinity", s.SessionAffinity), fieldValue("timeoutSeconds", t))
	}
	if s.Type == string(corev1.ServiceTypeLoadBalancer) && len(s.LoadBalancerIngress) == 0 {
		j.Emit(report.CodeSvcLBPending, nil)
	}
	if s.PublishNotReadyAddresses {
		j.Emit(report.CodeSvcPublishNotReady, nil, fieldValue("publishNotReadyAddresses", "true"))
	}
	j.sourceRangesCheck()
	j.trafficPolicyChecks()
	j.topologyChecks()
}

// ignoredSlicesCheck reports the EndpointSlices kube-proxy does not watch
// because they carry service.kubernetes.io/headless (normal only for a
// headless Service, which kube-proxy skips anyway). It is an error when
// that leaves a traced port with usable endpoints in the slices but none
// kube-proxy sees: kube-proxy then rejects the ClusterIP.
func (j *judge) ignoredSlicesCheck() {
	if j.slicesGap {
		return
	}
	var names []string
	count := 0
	for i := range j.in.Slices {
		if sl := &j.in.Slices[i]; expect.SliceIgnoredByKubeProxy(sl) {
			names = append(names, sl.Name)
			count += len(sl.Endpoints)
		}
	}
	if len(names) == 0 {
		return
	}
	sort.Strings(names)
	var stranded []string
	for _, fam := range expect.ServiceFamilies(j.svc) {
		for _, sp := range j.ports {
			if usableIn(expect.EndpointsFor(j.in.Slices, sp, fam, "")) {
				continue
			}
			if j.usableInIgnoredSlices(sp, fam) {
				stranded = append(stranded, portLabel(sp))
			}
		}
	}
	impact := ""
	if len(stranded) > 0 {
		impact = "; that leaves " + strings.Join(stranded, ", ") + " without a usable endpoint, so kube-proxy rejects connections to it as having none"
	}
	c := j.Emit(report.CodeSvcSlicesIgnored, report.Args{"count": strconv.Itoa(len(names)), "total": strconv.Itoa(len(j.in.Slices)),
		"slices": listNames(names), "endpoints": strconv.Itoa(count), "impact": impact},
		fieldItems("ignoredSlices", names), fieldItems("portsLeftWithoutEndpoints", stranded))
	if len(stranded) == 0 {
		// Other slices still serve every traced port.
		c.Severity, c.Status = report.SeverityWarning, report.StatusWarn
	}
}

func usableIn(eps []expect.EndpointInfo) bool {
	for _, ep := range eps {
		if ep.Ready || ep.Serving && ep.Terminating {
			return true
		}
	}
	return false
}

// usableInIgnoredSlices says whether the slices kube-proxy ignores hold a
// usable endpoint for the Service port and family.
func (j *judge) usableInIgnoredSlices(sp corev1.ServicePort, fam corev1.IPFamily) bool {
	want := discoveryv1.AddressTypeIPv4
	if fam == corev1.IPv6Protocol {
		want = discoveryv1.AddressTypeIPv6
	}
	for i := range j.in.Slices {
		sl := &j.in.Slices[i]
		if !expect.SliceIgnoredByKubeProxy(sl) || sl.AddressType != want || expect.SlicePortFor(sl, sp) == nil {
			continue
		}
		for _, e := range sl.Endpoints {
			ready := e.Conditions.Ready == nil || *e.Conditions.Ready
			serving := e.Conditions.Serving == nil || *e.Conditions.Serving
			terminating := e.Conditions.Terminating != nil && *e.Conditions.Terminating
			if len(e.Addresses) > 0 && (ready || serving && terminating) {
				return true
			}
		}
	}
	return false
}

// typeApplies says which parts of the path a ClusterIP, NodePort or
// LoadBalancer Service uses.
func (j *judge) typeApplies() string {
	s := &j.t.Service
	base := "kube-proxy DNATs traffic to the ClusterIP " + strings.Join(s.ClusterIPs, ", ") + " to a ready endpoint; every layer applies"
	switch corev1.ServiceType(s.Type) {
	case corev1.ServiceTypeNodePort:
		return base + ", plus the NodePorts on every node"
	case corev1.ServiceTypeLoadBalancer:
		return base + ", plus the NodePorts and the load balancer in front of them"
	}
	if len(s.ExternalIPs) > 0 {
		return base + ", plus the externalIPs"
	}
	return base
}

func (j *judge) typeEvidence() []report.Field {
	s := &j.t.Service
	fields := []report.Field{fieldValue("type", s.Type), fieldItems("clusterIPs", s.ClusterIPs)}
	var nodePorts []string
	for _, p := range s.Ports {
		if p.NodePort != 0 {
			nodePorts = append(nodePorts, fmt.Sprintf("%d/%s", p.NodePort, p.Protocol))
		}
	}
	if len(nodePorts) > 0 {
		fields = append(fields, fieldItems("nodePorts", nodePorts))
	}
	if len(s.ExternalIPs) > 0 {
		fields = append(fields, fieldItems("externalIPs", s.ExternalIPs))
	}
	if len(s.LoadBalancerIngress) > 0 {
		fields = append(fields, fieldItems("loadBalancerIngress", s.LoadBalancerIngress))
	}
	return fields
}

func (j *judge) selectorChecks() {
	sel := j.svc.Spec.Selector
	if len(sel) == 0 {
		n := "no EndpointSlices"
		if !j.slicesGap {
			n = strconv.Itoa(len(j.in.Slices)) + " EndpointSlices"
		} else {
			n = "EndpointSlices not readable"
		}
		j.Emit(report.CodeSvcNoSelector, report.Args{"slices": n})
		return
	}
	if j.podsGap {
		return // the gap check says why
	}
	if len(j.in.Pods) > 0 {
		j.Emit(report.CodeSvcSelectorMatches, report.Args{"count": strconv.Itoa(len(j.in.Pods))})
		j.workloadsCheck()
		return
	}
	closest := ""
	var fields []report.Field
	fields = append(fields, fieldValue("selector", selectorString(sel)))
	var parts []string
	for _, p := range j.in.ClosestPods {
		diff := input.LabelDiff(sel, p.Labels)
		parts = append(parts, p.Name+": "+strings.Join(diff, ", "))
		fields = append(fields, fieldItems("pod/"+p.Name, diff))
	}
	if len(parts) > 0 {
		closest = "; closest Pods: " + strings.Join(parts, "; ")
	}
	elsewhere := ""
	if refs := j.in.SelectedElsewhere; len(refs) > 0 {
		names := make([]string, len(refs))
		nss := map[string]bool{}
		for i, r := range refs {
			names[i] = r.String()
			nss[r.Namespace] = true
		}
		more := ""
		if len(refs) == input.ElsewhereLimit {
			more = " or more"
		}
		where := "another namespace"
		if len(nss) > 1 {
			where = strconv.Itoa(len(nss)) + " other namespaces"
		}
		elsewhere = fmt.Sprintf("; it matches %d%s Pod(s) in %s (%s), but a Service selects Pods of its own namespace only",
			len(refs), more, where, listNames(names))
		fields = append(fields, fieldItems("selectedElsewhere", names))
	}
	j.Emit(report.CodeSvcSelectorNoPods, report.Args{"closest": closest, "elsewhere": elsewhere}, fields...)
}

// trafficPolicyChecks finds, for externalTrafficPolicy or
// internalTrafficPolicy Local, the nodes where kube-proxy has no local
// endpoint to send the traffic to.
func (j *judge) trafficPolicyChecks() {
	s := &j.t.Service
	etpLocal, itpLocal := input.LocalTrafficPolicies(j.in.Service)
	if !etpLocal && !itpLocal {
		return
	}
	if !j.in.NodesListed || j.slicesGap {
		return // API003 or the slices gap says why
	}
	local, anyEndpoint := j.nodesWithLocalEndpoints()
	if !anyEndpoint {
		// No usable endpoint anywhere: kube-proxy rejects on every node
		// rather than dropping on some, and the endpoints layer says why.
		return
	}
	// A load balancer only sends to the nodes the service controller
	// puts behind it; NodePorts and externalIPs reach every node.
	lbOnly := s.Type == string(corev1.ServiceTypeLoadBalancer)
	if etpLocal {
		without, counted, notCounted := j.nodesWithout(local, lbOnly)
		if len(without) > 0 {
			note := ""
			if lbOnly && s.HealthCheckNodePort != 0 {
				note = fmt.Sprintf("; the load balancer's health check on port %d steers around them", s.HealthCheckNodePort)
			}
			j.Emit(report.CodeSvcETPLocal, report.Args{"count": strconv.Itoa(len(without)), "total": strconv.Itoa(counted), "lbNote": note},
				nodeFields(without, notCounted)...)
		}
	}
	if itpLocal {
		without, counted, notCounted := j.nodesWithout(local, false)
		if len(without) > 0 {
			j.Emit(report.CodeSvcITPLocal, report.Args{"count": strconv.Itoa(len(without)), "total": strconv.Itoa(counted)},
				nodeFields(without, notCounted)...)
		}
	}
}

func nodeFields(without []string, notCounted map[string][]string) []report.Field {
	fields := []report.Field{fieldItems("nodesWithoutLocalEndpoint", without)}
	for _, k := range sortedKeys(boolKeys(notCounted)) {
		fields = append(fields, fieldItems(k, notCounted[k]))
	}
	return fields
}

// nodesWithLocalEndpoints are the nodes on which kube-proxy's
// CategorizeEndpoints finds a Local-policy endpoint for every traced port
// and IP family: a local ready endpoint, or else a local serving and
// terminating one (so a rollout does not count as a node without
// endpoints). Ports with no usable endpoint anywhere are left out: kube-proxy
// rejects them on every node. anyEndpoint is false when every port is such.
func (j *judge) nodesWithLocalEndpoints() (local map[string]bool, anyEndpoint bool) {
	for _, fam := range expect.ServiceFamilies(j.svc) {
		for _, sp := range j.ports {
			nodes := map[string]bool{}
			usable := false
			for _, ep := range expect.EndpointsFor(j.in.Slices, sp, fam, "") {
				if !ep.Ready && !(ep.Serving && ep.Terminating) {
					continue
				}
				usable = true
				if ep.Node != "" {
					nodes[ep.Node] = true
				}
			}
			if !usable {
				continue
			}
			if !anyEndpoint {
				local, anyEndpoint = nodes, true
				continue
			}
			for n := range local {
				if !nodes[n] {
					delete(local, n)
				}
			}
		}
	}
	return local, anyEndpoint
}

// nodesWithout lists the nodes that lack a local endpoint among those the
// traffic reaches: NotReady nodes are left out (their Pods are being
// evicted and the node layers say why), and with lbOnly so are the nodes
// the service controller keeps out of load balancers. notCounted names
// the nodes left out, by reason, for the evidence.
func (j *judge) nodesWithout(local map[string]bool, lbOnly bool) (without []string, counted int, notCounted map[string][]string) {
	notCounted = map[string][]string{}
	for name, n := range j.in.Nodes {
		switch {
		case n == nil:
			continue // listed earlier, deleted since
		case !input.NodeReady(n):
			notCounted["notReadyNodesNotCounted"] = append(notCounted["notReadyNodesNotCounted"], name)
			continue
		case lbOnly && !inLoadBalancerNodeSet(n):
			notCounted["nodesExcludedFromLoadBalancers"] = append(notCounted["nodesExcludedFromLoadBalancers"], name)
			continue
		}
		counted++
		if !local[name] {
			without = append(without, name)
		}
	}
	sort.Strings(without)
	for _, v := range notCounted {
		sort.Strings(v)
	}
	return without, counted, notCounted
}

// inLoadBalancerNodeSet copies the cloud-provider service controller's
// stable node-set predicates (k8s.io/cloud-provider controllers/service:
// nodeNotDeletedPredicate, nodeIncludedPredicate, nodeUnTaintedPredicate):
// the exclusion label excludes unless its value parses as false, and the
// cluster autoscaler's deletion taint excludes.
func inLoadBalancerNodeSet(n *corev1.Node) bool {
	if !n.DeletionTimestamp.IsZero() {
		return false
	}
	if v, ok := n.Labels[corev1.LabelNodeExcludeBalancers]; ok {
		if b, err := strconv.ParseBool(v); err != nil || b {
			return false
		}
	}
	for _, t := range n.Spec.Taints {
		if t.Key == "ToBeDeletedByClusterAutoscaler" {
			return false
		}
	}
	return true
}

func (j *judge) topologyChecks() {
	s := &j.t.Service
	var settings []string
	if s.TrafficDistribution != "" {
		settings = append(settings, "trafficDistribution "+s.TrafficDistribution)
	}
	if s.TopologyMode != "" && !strings.EqualFold(s.TopologyMode, "disabled") {
		settings = append(settings, "topology-mode "+s.TopologyMode)
	}
	if len(settings) == 0 || j.slicesGap {
		return
	}
	setting := strings.Join(settings, " and ")
	// kube-proxy routes by node hints when every ready endpoint has one
	// (PreferSameNode: the EndpointSlice controller writes them, with or
	// without zone labels on the nodes), else by zone hints when every one
	// has those (topologyModeFromHints, pkg/proxy/topology.go).
	ready, zoneHinted, nodeHinted := 0, 0, 0
	for _, ep := range j.endpoints {
		if !ep.Ready {
			continue
		}
		ready++
		if ep.Hints != nil && len(ep.Hints.Zones) > 0 {
			zoneHinted++
		}
		if ep.Hints != nil && len(ep.Hints.Nodes) > 0 {
			nodeHinted++
		}
	}
	hinted, kind := zoneHinted, "zone"
	if s.TrafficDistribution == corev1.ServiceTrafficDistributionPreferSameNode {
		hinted, kind = max(zoneHinted, nodeHinted), "node or zone"
	}
	args := report.Args{"setting": setting, "hinted": strconv.Itoa(hinted), "total": strconv.Itoa(ready),
		"unhinted": strconv.Itoa(ready - hinted), "hintKind": kind}
	fields := []report.Field{fieldValue("readyEndpoints", strconv.Itoa(ready)), fieldValue("withZoneHints", strconv.Itoa(hinted))}
	if hinted == ready {
		j.Emit(report.CodeSvcTopology, args, fields...)
		return
	}
	j.Emit(report.CodeSvcTopologyNoHints, args, fields...)
}

// workloadsCheck warns when the selector picks the Pods of more than one
// workload: a label shared by two apps (app=web on a frontend and on its
// canary of another app) sends part of the traffic to the wrong Pods, which
// no other layer can see. A Deployment's ReplicaSets count as one workload
// (their names are the Deployment's plus the pod-template-hash), so a rollout
// is not a finding.
func (j *judge) workloadsCheck() {
	counts := map[string]int{}
	for i := range j.in.Pods {
		if w := workloadOf(&j.in.Pods[i]); w != "" {
			counts[w]++
		}
	}
	if len(counts) < 2 {
		return
	}
	var parts []string
	for _, w := range sortedKeys(boolKeys(counts)) {
		parts = append(parts, fmt.Sprintf("%s (%d Pod(s))", w, counts[w]))
	}
	j.Emit(report.CodeSvcSeveralWorkloads, report.Args{"count": strconv.Itoa(len(counts)), "workloads": listNames(parts),
		"selector": selectorString(j.svc.Spec.Selector)}, fieldItems("workloads", parts))
}

// workloadOf names the controller behind a Pod: "Deployment web" for a
// ReplicaSet web-7d9f (its pod-template-hash stripped), "StatefulSet db";
// "" for a Pod no controller owns, which says nothing about workloads.
func workloadOf(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if o.Controller == nil || !*o.Controller {
			continue
		}
		if o.Kind == "ReplicaSet" {
			if h := p.Labels["pod-template-hash"]; h != "" && strings.HasSuffix(o.Name, "-"+h) {
				return "Deployment " + strings.TrimSuffix(o.Name, "-"+h)
			}
		}
		return o.Kind + " " + o.Name
	}
	return ""
}

// sourceRangesCheck: kube-proxy short-circuits a VIP-mode load-balancer IP on
// every node and filters it there by loadBalancerSourceRanges (the KUBE-FW
// chain: each range, then KUBE-MARK-DROP; pkg/proxy/iptables/proxier.go), so
// an in-cluster Pod or a node that connects to the LB IP (often through the
// Service's public DNS name) is dropped unless its own address is in a range.
func (j *judge) sourceRangesCheck() {
	svc := j.svc
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || !expect.HasVIPIngress(svc) {
		return
	}
	var ranges []netip.Prefix
	var texts []string
	raw := svc.Spec.LoadBalancerSourceRanges
	if len(raw) == 0 {
		// kube-proxy honours the legacy annotation when the field is empty.
		for _, r := range strings.Split(svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey], ",") {
			if r = strings.TrimSpace(r); r != "" {
				raw = append(raw, r)
			}
		}
	}
	for _, r := range raw {
		if p, err := netip.ParsePrefix(strings.TrimSpace(r)); err == nil {
			ranges = append(ranges, p.Masked())
			texts = append(texts, p.Masked().String())
		}
	}
	if len(ranges) == 0 {
		return
	}
	covered := func(p netip.Prefix) bool {
		for _, r := range ranges {
			if r.Bits() <= p.Bits() && r.Contains(p.Addr()) {
				return true
			}
		}
		return false
	}
	var outside []string
	known := false
	for _, name := range sortedKeys(boolKeys(j.in.Nodes)) {
		n := j.in.Nodes[name]
		if n == nil {
			continue
		}
		known = true
		for _, c := range n.Spec.PodCIDRs {
			if p, err := netip.ParsePrefix(c); err == nil && !covered(p) {
				outside = append(outside, "Pods on "+name+" ("+c+")")
			}
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if ip, err := netip.ParseAddr(a.Address); err == nil && !covered(netip.PrefixFrom(ip, ip.BitLen())) {
				outside = append(outside, "node "+name+" ("+a.Address+")")
			}
		}
	}
	who := listNames(outside)
	if !known {
		who = "in-cluster Pods and nodes whose addresses are outside them (nodes not read, so not listed)"
	} else if len(outside) == 0 {
		return
	}
	j.Emit(report.CodeSvcSourceRanges, report.Args{"ranges": strings.Join(texts, ", "), "who": who},
		fieldItems("loadBalancerSourceRanges", texts), fieldItems("outside", outside))
}

func (j *judge) notFound() {
	if j.in.NamespaceNotFound {
		closest := ""
		var fields []report.Field
		if len(j.in.ClosestNamespaces) > 0 {
			closest = "; did you mean -n " + strings.Join(j.in.ClosestNamespaces, ", ") + "?"
			fields = append(fields, fieldItems("closestNamespaces", j.in.ClosestNamespaces))
		}
		j.Emit(report.CodeSvcNamespaceMissing, report.Args{"closest": closest}, fields...)
		j.gapChecks()
		for _, name := range report.LayerOrder {
			if name != report.LayerService {
				j.t.Layer(name).Skip(fmt.Sprintf("namespace %s not found", j.in.Namespace))
			}
		}
		return
	}
	closest := ""
	if len(j.in.ClosestServices) > 0 {
		closest = "; did you mean " + strings.Join(j.in.ClosestServices, ", ") + "?"
	}
	var fields []report.Field
	if len(j.in.ClosestServices) > 0 {
		fields = append(fields, fieldItems("closestServices", j.in.ClosestServices))
	}
	j.Emit(report.CodeSvcNotFound, report.Args{"closest": closest}, fields...)
	j.gapChecks()
	for _, name := range report.LayerOrder {
		if name != report.LayerService {
			j.t.Layer(name).Skip(fmt.Sprintf("Service %s/%s not found", j.in.Namespace, j.in.Name))
		}
	}
}

// selectPorts applies --port (a port name or number).
func (j *judge) selectPorts() {
	if j.opts.Port == "" {
		j.ports = j.svc.Spec.Ports
		return
	}
	for _, p := range j.svc.Spec.Ports {
		if p.Name == j.opts.Port || strconv.Itoa(int(p.Port)) == j.opts.Port {
			j.ports = append(j.ports, p)
		}
	}
	if len(j.ports) == 0 && j.svc.Spec.Type != corev1.ServiceTypeExternalName {
		var names []string
		for _, p := range j.svc.Spec.Ports {
			names = append(names, portLabel(p))
		}
		j.Emit(report.CodeSvcPortFilterAbsent, report.Args{"port": j.opts.Port, "ports": orNone(strings.Join(names, ", "))})
	}
}
