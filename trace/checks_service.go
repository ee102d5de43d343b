package trace

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

func (j *judge) serviceChecks() {
	svc := j.svc
	s := &j.t.Service
	switch {
	case svc.Spec.Type == corev1.ServiceTypeExternalName:
		j.emit(CodeSvcExternalName, Args{"externalName": svc.Spec.ExternalName},
			fieldValue("externalName", svc.Spec.ExternalName))
		return
	case s.Headless:
		j.emit(CodeSvcHeadless, nil, fieldValue("clusterIP", "None"))
	default:
		j.emit(CodeSvcType, Args{"type": s.Type, "applies": j.typeApplies()}, j.typeEvidence()...)
	}
	if len(s.IPFamilies) > 0 {
		fams := strings.Join(s.IPFamilies, ", ")
		fields := []Field{fieldItems("ipFamilies", s.IPFamilies)}
		if !s.Headless {
			fields = append(fields, fieldItems("clusterIPs", s.ClusterIPs))
		}
		j.emit(CodeSvcIPFamilies, Args{"families": fams, "policy": orNone(s.IPFamilyPolicy)}, fields...)
	}
	if s.ServiceProxyName != "" {
		j.emit(CodeSvcProxyName, Args{"proxyName": s.ServiceProxyName},
			fieldValue(labelServiceProxyName, s.ServiceProxyName))
	}
	j.selectorChecks()
	if s.SessionAffinityTimeoutSeconds != nil {
		t := strconv.Itoa(int(*s.SessionAffinityTimeoutSeconds))
		j.emit(CodeSvcSessionAffinity, Args{"timeout": t},
			fieldValue("sessionAffinity", s.SessionAffinity), fieldValue("timeoutSeconds", t))
	}
	if s.Type == string(corev1.ServiceTypeLoadBalancer) && len(s.LoadBalancerIngress) == 0 {
		j.emit(CodeSvcLBPending, nil)
	}
	if s.PublishNotReadyAddresses {
		j.emit(CodeSvcPublishNotReady, nil, fieldValue("publishNotReadyAddresses", "true"))
	}
	j.trafficPolicyChecks()
	j.topologyChecks()
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

func (j *judge) typeEvidence() []Field {
	s := &j.t.Service
	fields := []Field{fieldValue("type", s.Type), fieldItems("clusterIPs", s.ClusterIPs)}
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
		j.emit(CodeSvcNoSelector, Args{"slices": n})
		return
	}
	if j.podsGap {
		return // the gap check says why
	}
	if len(j.in.Pods) > 0 {
		j.emit(CodeSvcSelectorMatches, Args{"count": strconv.Itoa(len(j.in.Pods))})
		return
	}
	closest := ""
	var fields []Field
	fields = append(fields, fieldValue("selector", selectorString(sel)))
	var parts []string
	for _, p := range j.in.ClosestPods {
		diff := labelDiff(sel, p.Labels)
		parts = append(parts, p.Name+": "+strings.Join(diff, ", "))
		fields = append(fields, fieldItems("pod/"+p.Name, diff))
	}
	if len(parts) > 0 {
		closest = "; closest Pods: " + strings.Join(parts, "; ")
	}
	j.emit(CodeSvcSelectorNoPods, Args{"closest": closest}, fields...)
}

// trafficPolicyChecks finds, for externalTrafficPolicy or
// internalTrafficPolicy Local, the nodes with no local ready endpoint.
func (j *judge) trafficPolicyChecks() {
	s := &j.t.Service
	etpLocal, itpLocal := localTrafficPolicies(j.in.Service)
	if !etpLocal && !itpLocal {
		return
	}
	if !j.in.NodesListed || j.slicesGap {
		return // API003 or the slices gap says why
	}
	local := map[string]bool{}
	for _, ep := range j.endpoints {
		if ep.Ready && ep.Node != "" {
			local[ep.Node] = true
		}
	}
	var without []string
	for name := range j.in.Nodes {
		if !local[name] {
			without = append(without, name)
		}
	}
	sort.Strings(without)
	if len(without) == 0 {
		return
	}
	total := strconv.Itoa(len(j.in.Nodes))
	fields := []Field{fieldItems("nodesWithoutLocalEndpoint", without)}
	if etpLocal {
		note := ""
		if s.Type == string(corev1.ServiceTypeLoadBalancer) && s.HealthCheckNodePort != 0 {
			note = fmt.Sprintf("; the load balancer's health check on port %d steers around them", s.HealthCheckNodePort)
		}
		j.emit(CodeSvcETPLocal, Args{"count": strconv.Itoa(len(without)), "total": total, "lbNote": note}, fields...)
	}
	if itpLocal {
		j.emit(CodeSvcITPLocal, Args{"count": strconv.Itoa(len(without)), "total": total}, fields...)
	}
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
	ready, hinted := 0, 0
	for _, ep := range j.endpoints {
		if !ep.Ready {
			continue
		}
		ready++
		if ep.Hints != nil && len(ep.Hints.Zones) > 0 {
			hinted++
		}
	}
	args := Args{"setting": setting, "hinted": strconv.Itoa(hinted), "total": strconv.Itoa(ready),
		"unhinted": strconv.Itoa(ready - hinted)}
	fields := []Field{fieldValue("readyEndpoints", strconv.Itoa(ready)), fieldValue("withZoneHints", strconv.Itoa(hinted))}
	if hinted == ready {
		j.emit(CodeSvcTopology, args, fields...)
		return
	}
	j.emit(CodeSvcTopologyNoHints, args, fields...)
}
