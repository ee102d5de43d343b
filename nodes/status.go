package nodes

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Status is what one look at a collector Pod tells.
type Status struct {
	Stage    Stage
	Detail   string
	Finished bool     // the container exited 0: the log holds the observation
	Failure  *Failure // set when the Pod will never produce an observation
}

// Image waiting reasons the kubelet reports; none of them heals within the
// few seconds a trace lasts, so they end the run at once.
var imageFailures = map[string]bool{
	"ErrImagePull":              true,
	"ImagePullBackOff":          true,
	"ErrImageNeverPull":         true,
	"InvalidImageName":          true,
	"ImageInspectError":         true,
	"RegistryUnavailable":       true,
	"SignatureValidationFailed": true,
}

var containerFailures = map[string]bool{
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
	"CrashLoopBackOff":           true,
}

// Classify reads a collector Pod's status into a stage, or a failure with a
// specific message.
func Classify(p *corev1.Pod) Status {
	if p.Status.Phase == corev1.PodFailed {
		if p.Status.Reason == "DeadlineExceeded" {
			return Status{Stage: StageFailed, Failure: &Failure{Kind: FailDeadline, Stage: StageCollecting,
				Message: fmt.Sprintf("activeDeadlineSeconds reached: %s", p.Status.Message)}}
		}
		if t := terminated(p); t != nil {
			return Status{Stage: StageFailed, Failure: terminatedFailure(t)}
		}
		reason := strings.TrimSpace(p.Status.Reason + ": " + p.Status.Message)
		return Status{Stage: StageFailed, Failure: &Failure{Kind: FailRejected, Stage: StageScheduling,
			Message: "the node rejected the Pod: " + strings.Trim(reason, ": ")}}
	}
	if t := terminated(p); t != nil {
		if t.ExitCode == 0 {
			return Status{Stage: StageCollecting, Finished: true}
		}
		return Status{Stage: StageFailed, Failure: terminatedFailure(t)}
	}
	if p.Status.Phase == corev1.PodSucceeded {
		return Status{Stage: StageCollecting, Finished: true}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch {
			case imageFailures[w.Reason]:
				return Status{Stage: StageFailed, Failure: &Failure{Kind: FailImage, Stage: StagePulling,
					Message: fmt.Sprintf("%s: image %s: %s", w.Reason, cs.Image, w.Message)}}
			case containerFailures[w.Reason]:
				return Status{Stage: StageFailed, Failure: &Failure{Kind: FailContainer, Stage: StagePulling,
					Message: fmt.Sprintf("%s: %s", w.Reason, w.Message)}}
			}
			return Status{Stage: StagePulling, Detail: strings.TrimSpace(w.Reason + " " + w.Message)}
		}
		if cs.State.Running != nil {
			return Status{Stage: StageCollecting}
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return Status{Stage: StageScheduling, Detail: strings.TrimSpace(c.Reason + " " + c.Message)}
		}
	}
	if p.Status.Phase == corev1.PodPending && len(p.Status.ContainerStatuses) == 0 {
		// Bound to the node (nodeName is set) but the kubelet has not
		// reported anything yet: a NotReady node stays here forever.
		return Status{Stage: StageScheduling, Detail: "waiting for the kubelet on the node to start the Pod"}
	}
	return Status{Stage: StagePulling, Detail: string(p.Status.Phase)}
}

func terminated(p *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == ContainerName && cs.State.Terminated != nil {
			return cs.State.Terminated
		}
	}
	return nil
}

func terminatedFailure(t *corev1.ContainerStateTerminated) *Failure {
	if t.Reason == "OOMKilled" {
		return &Failure{Kind: FailOOM, Stage: StageCollecting, Message: "the container was OOM-killed (memory limit 256Mi)"}
	}
	msg := fmt.Sprintf("the container exited with code %d (%s)", t.ExitCode, t.Reason)
	if m := strings.TrimSpace(t.Message); m != "" {
		if len(m) > 400 {
			m = m[len(m)-400:]
		}
		msg += ": " + m
	}
	return &Failure{Kind: FailCrash, Stage: StageCollecting, Message: msg}
}
