package trace

import (
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func (j *judge) endpointChecks() {
	if j.slicesGap {
		return
	}
	e := &j.t.Endpoints
	hasSelector := len(j.svc.Spec.Selector) > 0
	if len(j.in.Slices) == 0 {
		why := "; a Service without selector needs EndpointSlices made by hand or by its own controller"
		if hasSelector {
			why = "; the EndpointSlice controller makes one even when no Pod matches, so check kube-controller-manager"
		}
		j.Emit(report.CodeEpsNoSlices, report.Args{"why": why})
	} else {
		j.Emit(report.CodeEpsCounts, report.Args{"slices": strconv.Itoa(len(e.Slices)), "total": strconv.Itoa(e.Total),
			"ready": strconv.Itoa(e.Ready), "serving": strconv.Itoa(e.Serving), "terminating": strconv.Itoa(e.Terminating)})
	}
	if hasSelector {
		j.foreignManagerCheck()
	}
	for _, p := range j.ports {
		j.portEndpointsCheck(p)
	}
	if len(j.svc.Spec.Ports) == 0 && len(j.in.Slices) > 0 && e.Ready == 0 {
		// A headless Service may have no ports; its endpoints still matter.
		j.noReadyCheck("any port", e.Total, e.Serving-e.Ready)
	}
	if e.Ready > 0 && e.Ready < e.Total {
		var notReady []string
		for _, ep := range j.endpoints {
			if !ep.Ready {
				notReady = append(notReady, endpointName(ep))
			}
		}
		j.Emit(report.CodeEpsNotReady, report.Args{"count": strconv.Itoa(len(notReady)), "total": strconv.Itoa(e.Total)},
			fieldItems("notReady", notReady))
	}
	j.targetRefChecks()
	j.missingReadyPodsCheck()
	j.familyCheck()
}

func (j *judge) foreignManagerCheck() {
	var slices []string
	managers := map[string]bool{}
	for _, s := range j.t.Endpoints.Slices {
		if s.ManagedBy != managerController {
			slices = append(slices, s.Name)
			managers[orNone(s.ManagedBy)] = true
		}
	}
	if len(slices) == 0 {
		return
	}
	var ms []string
	for m := range managers {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	j.Emit(report.CodeEpsForeignManager, report.Args{"count": strconv.Itoa(len(slices)), "managers": strings.Join(ms, ", "),
		"slices": listNames(slices)}, fieldItems("slices", slices), fieldItems("managedBy", ms))
}

// portEndpointsCheck judges one Service port the way kube-proxy does: its
// endpoints are those of slices with a port of the same name; ready ones are
// used; serving+terminating ones only when none is ready.
func (j *judge) portEndpointsCheck(p corev1.ServicePort) {
	label := portLabel(p)
	proto := protocolOf(p.Protocol)
	var ready, servingTerminating, total, otherProto int
	var otherProtocol string
	for _, ep := range j.endpoints {
		match, other := portMatch(ep.Ports, p.Name, proto)
		if !match {
			if other != "" {
				otherProto++
				otherProtocol = other
			}
			continue
		}
		total++
		switch {
		case ep.Ready:
			ready++
		case ep.Serving && ep.Terminating:
			servingTerminating++
		}
	}
	if j.slicePortCheck(p, label, proto, total, otherProto, otherProtocol) {
		return
	}
	if len(j.in.Slices) == 0 {
		return // EPS002 already says it
	}
	if ready == 0 {
		j.noReadyCheck(label, total, servingTerminating)
	}
}

// noReadyCheck reports a port with no ready endpoint: kube-proxy falls back
// to serving+terminating endpoints, else traffic is rejected.
func (j *judge) noReadyCheck(label string, total, servingTerminating int) {
	if servingTerminating > 0 {
		j.Emit(report.CodeEpsTerminatingOnly, report.Args{"port": label, "count": strconv.Itoa(servingTerminating)})
		return
	}
	impact := "kube-proxy rejects connections to this Service"
	if j.t.Service.Headless {
		impact = "the headless name has no records to return"
	}
	j.Emit(report.CodeEpsNoReady, report.Args{"port": label, "impact": impact},
		fieldValue("endpointsForPort", strconv.Itoa(total)), fieldValue("ready", "0"))
}

// portMatch reports whether ports has the Service port (same name and
// protocol); if only the name matches, it returns the slice's protocol.
func portMatch(ports []report.EndpointPort, name, protocol string) (bool, string) {
	other := ""
	for _, p := range ports {
		if p.Name != name {
			continue
		}
		if p.Protocol == protocol {
			return true, ""
		}
		other = p.Protocol
	}
	return false, other
}

// targetRefChecks finds endpoints whose Pod is gone or no longer has the
// endpoint's IP.
func (j *judge) targetRefChecks() {
	if j.podsGap {
		return
	}
	var gone, ghost []string
	unverified := map[string]bool{}
	for _, name := range j.in.UnverifiedTargets {
		unverified[name] = true
	}
	for _, ep := range j.endpoints {
		if ep.Pod == nil || (ep.Pod.Namespace != "" && ep.Pod.Namespace != j.in.Namespace) || unverified[ep.Pod.Name] {
			continue
		}
		pod := j.podsByName[ep.Pod.Name]
		if pod == nil {
			extra, looked := j.in.ExtraPods[ep.Pod.Name]
			if !looked {
				continue
			}
			if extra == nil {
				gone = append(gone, endpointName(ep))
				continue
			}
			pod = extra
		}
		if !podHasIP(pod, ep.IP) {
			cur := pod.Status.PodIP
			if cur == "" {
				cur = "none"
			}
			ghost = append(ghost, endpointName(ep)+" (Pod IP now "+cur+")")
		}
	}
	if len(gone) > 0 {
		j.Emit(report.CodeEpsPodGone, report.Args{"count": strconv.Itoa(len(gone)), "endpoints": listNames(gone)},
			fieldItems("endpoints", gone))
	}
	if len(j.in.UnownedIPs) > 0 {
		var ips, cidrs []string
		seen := map[string]bool{}
		for _, u := range j.in.UnownedIPs {
			ips = append(ips, u.IP)
			if !seen[u.PodCIDR] {
				seen[u.PodCIDR] = true
				cidrs = append(cidrs, u.PodCIDR)
			}
		}
		j.Emit(report.CodeEpsUnownedIP, report.Args{"count": strconv.Itoa(len(ips)), "ips": listNames(ips), "cidrs": strings.Join(cidrs, ", ")},
			fieldItems("ips", ips), fieldItems("podCIDRs", cidrs))
	}
	if len(ghost) > 0 {
		j.Emit(report.CodeEpsGhostIP, report.Args{"count": strconv.Itoa(len(ghost)), "endpoints": listNames(ghost)},
			fieldItems("endpoints", ghost))
	}
	if len(j.in.UnverifiedTargets) > 0 {
		j.Emit(report.CodeEpsTargetUnverified, report.Args{"count": strconv.Itoa(len(j.in.UnverifiedTargets)),
			"limit": strconv.Itoa(input.ExtraPodLimit), "endpoints": listNames(j.in.UnverifiedTargets)},
			fieldItems("pods", j.in.UnverifiedTargets))
	}
}

func podHasIP(pod *corev1.Pod, ip string) bool {
	want := net.ParseIP(ip)
	for _, pip := range pod.Status.PodIPs {
		if got := net.ParseIP(pip.IP); got != nil && want != nil && got.Equal(want) {
			return true
		}
	}
	if pod.Status.PodIP != "" {
		if got := net.ParseIP(pod.Status.PodIP); got != nil && want != nil && got.Equal(want) {
			return true
		}
	}
	return false
}

// missingReadyPodsCheck finds Ready selected Pods that no slice lists.
func (j *judge) missingReadyPodsCheck() {
	if j.podsGap || len(j.svc.Spec.Selector) == 0 || len(j.in.Slices) == 0 {
		return
	}
	byPod := make(map[string]bool, len(j.endpoints))
	byIP := make(map[string]bool, len(j.endpoints))
	for _, ep := range j.endpoints {
		if ep.Pod != nil {
			byPod[ep.Pod.Name] = true
		}
		byIP[ep.IP] = true
	}
	var missing []string
	for i := range j.in.Pods {
		pod := &j.in.Pods[i]
		if !input.PodReady(pod) || pod.DeletionTimestamp != nil || pod.Status.PodIP == "" {
			continue
		}
		if !byPod[pod.Name] && !byIP[pod.Status.PodIP] {
			missing = append(missing, pod.Name+" ("+pod.Status.PodIP+")")
		}
	}
	if len(missing) > 0 {
		j.Emit(report.CodeEpsReadyPodMissing, report.Args{"count": strconv.Itoa(len(missing)), "pods": listNames(missing)},
			fieldItems("pods", missing))
	}
}

// familyCheck warns about a Service IP family with no ready endpoint while
// the other family has some (with none at all EPS003 already fails).
func (j *judge) familyCheck() {
	if len(j.t.Service.IPFamilies) < 2 || j.t.Endpoints.Ready == 0 {
		return
	}
	readyByFamily := map[string]int{}
	sliceFamily := map[string]string{}
	for _, s := range j.t.Endpoints.Slices {
		sliceFamily[s.Name] = s.AddressType
	}
	for _, ep := range j.endpoints {
		if ep.Ready {
			readyByFamily[sliceFamily[ep.Slice]]++
		}
	}
	for _, fam := range j.t.Service.IPFamilies {
		addrType := string(discoveryv1.AddressTypeIPv4)
		if fam == string(corev1.IPv6Protocol) {
			addrType = string(discoveryv1.AddressTypeIPv6)
		}
		if readyByFamily[addrType] == 0 {
			j.Emit(report.CodeEpsFamilyMissing, report.Args{"family": fam}, fieldValue("addressType", addrType))
		}
	}
}

// endpointName is "10.244.1.5 (pod web-1)" or just the IP.
func endpointName(ep report.EndpointSummary) string {
	if ep.Pod != nil {
		return ep.IP + " (pod " + ep.Pod.Name + ")"
	}
	return ep.IP
}
