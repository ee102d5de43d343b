package trace

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// portChecks compares each traced Service port with the selected Pods:
// a numeric targetPort needs nothing from the Pod; a named one must resolve
// on every Pod with the Service port's protocol (the EndpointSlice controller
// drops a Pod where it does not).
func (j *judge) portChecks() {
	for _, p := range j.ports {
		label := portLabel(p)
		if p.TargetPort.Type == intstr.String && p.TargetPort.StrVal != "" {
			j.namedPortCheck(p, label)
			continue
		}
		target := p.TargetPort.IntValue()
		if target == 0 {
			target = int(p.Port)
		}
		if j.t.Service.Headless && p.TargetPort.IntValue() == 0 {
			continue // headless without targetPort: clients pick the port
		}
		j.Emit(report.CodePortNumeric, report.Args{"port": label, "targetPort": strconv.Itoa(target), "protocol": protocolOf(p.Protocol)})
	}
}

func (j *judge) namedPortCheck(p corev1.ServicePort, label string) {
	if len(j.svc.Spec.Selector) == 0 || j.podsGap || len(j.in.Pods) == 0 {
		return // nothing to resolve against; the selector checks report it
	}
	name := p.TargetPort.StrVal
	proto := corev1.Protocol(protocolOf(p.Protocol))
	var unresolved, mismatched, mismatchProtos []string
	resolved := map[string]bool{}
	for i := range j.in.Pods {
		pod := &j.in.Pods[i]
		number, otherProto := findPort(pod, name, proto)
		switch {
		case number != 0:
			resolved[strconv.Itoa(int(number))] = true
		case otherProto != "":
			mismatched = append(mismatched, pod.Name)
			mismatchProtos = append(mismatchProtos, pod.Name+": "+string(otherProto))
		default:
			unresolved = append(unresolved, pod.Name)
		}
	}
	total := strconv.Itoa(len(j.in.Pods))
	if len(unresolved) > 0 {
		c := j.Emit(report.CodePortNameUnresolved, report.Args{"port": label, "targetPort": name, "count": strconv.Itoa(len(unresolved)),
			"total": total, "pods": listNames(unresolved), "firstPod": unresolved[0]},
			fieldValue("targetPort", name), fieldItems("podsWithoutPort", unresolved))
		if len(unresolved) < len(j.in.Pods) && len(mismatched) == 0 {
			// The other Pods still get traffic on this port: a warning, not
			// a failed layer.
			c.Severity, c.Status = report.SeverityWarning, report.StatusWarn
		}
	}
	if len(mismatched) > 0 {
		podProto := strings.SplitN(mismatchProtos[0], ": ", 2)[1]
		j.Emit(report.CodePortProtocol, report.Args{"port": label, "protocol": string(proto), "targetPort": name,
			"pods": listNames(mismatched), "podProtocol": podProto, "firstPod": mismatched[0]},
			fieldValue("serviceProtocol", string(proto)), fieldItems("podProtocols", mismatchProtos))
	}
	if len(unresolved) == 0 && len(mismatched) == 0 {
		nums := make([]string, 0, len(resolved))
		for n := range resolved {
			nums = append(nums, n)
		}
		sort.Strings(nums)
		j.Emit(report.CodePortNamedResolved, report.Args{"port": label, "targetPort": name, "total": total,
			"resolved": strings.Join(nums, ", ") + "/" + string(proto)})
	}
}

// findPort resolves a named container port as the EndpointSlice controller
// does (containers, then restartable init containers, name and protocol must
// both match). When only the name matches, it returns the other protocol.
func findPort(pod *corev1.Pod, name string, proto corev1.Protocol) (int32, corev1.Protocol) {
	var other corev1.Protocol
	check := func(c corev1.Container) int32 {
		for _, cp := range c.Ports {
			if cp.Name != name {
				continue
			}
			got := corev1.Protocol(protocolOf(cp.Protocol))
			if got == proto {
				return cp.ContainerPort
			}
			other = got
		}
		return 0
	}
	for _, c := range pod.Spec.Containers {
		if n := check(c); n != 0 {
			return n, ""
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		if n := check(c); n != 0 {
			return n, ""
		}
	}
	return 0, other
}

// slicePortNames lists the port names of the slices, for messages.
func (j *judge) slicePortNames() string {
	var names []string
	for n := range j.epPortNames {
		if n == "" {
			n = `""`
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return orNone(strings.Join(names, ", "))
}

// slicePortCheck reports a Service port that no endpoint serves because the
// EndpointSlices carry it under another protocol or not at all (total is
// the endpoints that matched it by name and protocol, otherProto those that
// matched by name only). It says whether it reported one: no-ready checks
// would then only repeat it.
func (j *judge) slicePortCheck(p corev1.ServicePort, label, proto string, total, otherProto int, otherProtocol string) bool {
	if total == 0 && otherProto > 0 {
		// kube-proxy keys endpoints by port name AND protocol.
		j.Emit(report.CodePortSliceProtocol, report.Args{"port": label, "name": p.Name, "protocol": proto,
			"sliceProtocol": otherProtocol, "count": strconv.Itoa(otherProto)},
			fieldValue("serviceProtocol", proto), fieldValue("sliceProtocol", otherProtocol))
		return true
	}
	if j.t.Endpoints.Total > 0 && total == 0 {
		j.Emit(report.CodePortMissingInSlices, report.Args{"port": label, "name": p.Name, "slicePorts": j.slicePortNames()},
			fieldValue("servicePortName", p.Name), fieldValue("slicePortNames", j.slicePortNames()))
		return true
	}
	return false
}
