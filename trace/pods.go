package trace

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// podChecks says, for every selected Pod, why it does not get traffic.
// A healthy Pod adds no check; unhealthy ones warn (the endpoints layer fails
// through EPS003 only when no endpoint is left).
func (j *judge) podChecks() {
	if j.podsGap {
		return
	}
	perCode := map[string]int{}
	extra := map[string][]string{}
	emit := func(code string, pod string, args report.Args) {
		perCode[code]++
		if perCode[code] > podCheckLimit {
			extra[code] = append(extra[code], pod)
			return
		}
		args["pod"] = pod
		j.Emit(code, args)
	}
	pods := make([]*corev1.Pod, 0, len(j.in.Pods))
	for i := range j.in.Pods {
		pods = append(pods, &j.in.Pods[i])
	}
	sort.Slice(pods, func(a, b int) bool { return pods[a].Name < pods[b].Name })
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			emit(report.CodePodTerminating, pod.Name, report.Args{"since": pod.DeletionTimestamp.UTC().Format(time.RFC3339)})
			continue
		}
		if pod.Status.Phase != corev1.PodRunning {
			emit(report.CodePodPhase, pod.Name, report.Args{"phase": orNone(string(pod.Status.Phase)), "detail": phaseDetail(pod)})
			continue
		}
		crashing := false
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				crashing = true
				detail := lastTermination(cs)
				if ev, ok := j.in.ProbeEvents[pod.Name]; ok && !strings.HasPrefix(ev.Message, "Readiness") {
					// A failing liveness or startup probe is what restarts it.
					detail += "; " + probeEventText(ev)
				}
				emit(report.CodePodCrashLoop, pod.Name, report.Args{"container": cs.Name, "restarts": strconv.Itoa(int(cs.RestartCount)),
					"detail": detail})
			}
		}
		if node := j.nodeNotReady(pod.Spec.NodeName); node != "" {
			emit(report.CodePodNodeNotReady, pod.Name, report.Args{"node": pod.Spec.NodeName, "detail": node})
		}
		if crashing || input.PodReady(pod) {
			continue
		}
		if gates := unmetGates(pod); len(gates) > 0 && containersReady(pod) {
			emit(report.CodePodReadinessGates, pod.Name, report.Args{"gates": strings.Join(gates, ", ")})
			continue
		}
		emit(report.CodePodNotReady, pod.Name, report.Args{"detail": notReadyDetail(pod, j.in.ProbeEvents)})
	}
	// Pods over the per-code limit go into the last check of that code.
	for code, names := range extra {
		l := j.t.Layer(report.Catalog[code].Layer)
		for i := len(l.Checks) - 1; i >= 0; i-- {
			if l.Checks[i].Code == code {
				if l.Checks[i].Evidence == nil {
					l.Checks[i].Evidence = &report.Evidence{}
				}
				l.Checks[i].Evidence.Fields = append(l.Checks[i].Evidence.Fields, fieldItems("alsoPods", names))
				l.Checks[i].Message += fmt.Sprintf(" (and %d more Pods like it, see evidence)", len(names))
				break
			}
		}
	}
}

func containersReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.ContainersReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func unmetGates(pod *corev1.Pod) []string {
	var out []string
	for _, g := range pod.Spec.ReadinessGates {
		met := false
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				met = true
			}
		}
		if !met {
			out = append(out, string(g.ConditionType))
		}
	}
	return out
}

// notReadyDetail explains a Running Pod that is not Ready: containers that
// run but fail their readiness probe, containers waiting, the condition text.
func notReadyDetail(pod *corev1.Pod, events map[string]input.ProbeEvent) string {
	probes := map[string]bool{}
	for _, c := range pod.Spec.Containers {
		probes[c.Name] = c.ReadinessProbe != nil
	}
	var parts []string
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Ready {
			continue
		}
		switch {
		case cs.State.Running != nil && probes[cs.Name]:
			parts = append(parts, "container "+cs.Name+" runs but fails its readiness probe")
		case cs.State.Running != nil:
			parts = append(parts, "container "+cs.Name+" runs but is not ready")
		case cs.State.Waiting != nil:
			parts = append(parts, "container "+cs.Name+" waiting: "+cs.State.Waiting.Reason)
		case cs.State.Terminated != nil:
			parts = append(parts, "container "+cs.Name+" terminated: "+cs.State.Terminated.Reason)
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Message != "" && len(parts) == 0 {
			parts = append(parts, c.Message)
		}
	}
	if ev, ok := events[pod.Name]; ok {
		parts = append(parts, probeEventText(ev))
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, "; ")
}

// probeEventText quotes the kubelet's newest probe failure.
func probeEventText(ev input.ProbeEvent) string {
	msg := strings.TrimSpace(ev.Message)
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	text := "kubelet: " + strconv.Quote(msg)
	switch {
	case ev.Count > 1 && !ev.Last.IsZero():
		text += fmt.Sprintf(" (%d times, last at %s)", ev.Count, ev.Last.UTC().Format(time.RFC3339))
	case !ev.Last.IsZero():
		text += " (at " + ev.Last.UTC().Format(time.RFC3339) + ")"
	}
	return text
}

func phaseDetail(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return ": not scheduled (" + c.Reason + ": " + c.Message + ")"
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			return ": container " + cs.Name + " waiting (" + w.Reason + ")"
		}
	}
	if pod.Status.Reason != "" {
		return ": " + pod.Status.Reason
	}
	return ""
}

func lastTermination(cs corev1.ContainerStatus) string {
	if t := cs.LastTerminationState.Terminated; t != nil {
		return fmt.Sprintf("; last exit code %d (%s)", t.ExitCode, t.Reason)
	}
	return ""
}

// nodeNotReady returns a detail for a known node that is not Ready, or "".
func (j *judge) nodeNotReady(name string) string {
	if name == "" {
		return ""
	}
	node, known := j.in.Node(name)
	if !known {
		return "" // not read (API003 says why)
	}
	if node == nil {
		return ": the node no longer exists"
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return ""
			}
			return ": " + string(c.Status) + " " + c.Reason
		}
	}
	return ": no Ready condition"
}
