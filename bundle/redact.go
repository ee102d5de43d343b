package bundle

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/trace/input"
)

// Redacted replaces every value Redact removes, so a reader sees that there
// was one.
const Redacted = "<redacted>"

// lastApplied is kubectl apply's copy of the whole object as applied: for a
// Pod or its controller, env values included.
const lastApplied = corev1.LastAppliedConfigAnnotation

// Redact returns a copy of the input fit to leave the cluster: every
// container's env values and probe and lifecycle HTTP header values (where
// credentials are passed) replaced by Redacted, the last-applied
// configuration annotation and the field sets of managedFields dropped from
// every object (their managers and times stay). No check reads any of
// those, so the copy judges the same. The input holds no
// Secret and no ConfigMap to begin with.
func Redact(in *input.Input) (*input.Input, error) {
	var out input.Input
	if err := copyJSON(in, &out); err != nil {
		return nil, err
	}
	for _, pods := range [][]corev1.Pod{out.Pods, out.ClosestPods, out.DNSPods} {
		for i := range pods {
			redactObject(&pods[i].ObjectMeta)
			redactPodSpec(&pods[i].Spec)
		}
	}
	for _, p := range out.ExtraPods {
		if p != nil {
			redactObject(&p.ObjectMeta)
			redactPodSpec(&p.Spec)
		}
	}
	for _, s := range []*corev1.Service{out.Service, out.DNSService} {
		if s != nil {
			redactObject(&s.ObjectMeta)
		}
	}
	for i := range out.Slices {
		redactObject(&out.Slices[i].ObjectMeta)
	}
	for i := range out.DNSSlices {
		redactObject(&out.DNSSlices[i].ObjectMeta)
	}
	for _, n := range out.Nodes {
		if n != nil {
			redactObject(&n.ObjectMeta)
		}
	}
	for i := range out.NetworkPolicies {
		redactObject(&out.NetworkPolicies[i].ObjectMeta)
	}
	return &out, nil
}

func redactObject(m *metav1.ObjectMeta) {
	// The field sets are bulky and no check reads them; when and by whom
	// each manager last wrote the object stays: the judge takes the
	// Service's and its slices' last change from those times (the
	// sync-lag excuse), and a bundle must be judged as the live trace was.
	for i := range m.ManagedFields {
		m.ManagedFields[i].FieldsType, m.ManagedFields[i].FieldsV1 = "", nil
	}
	if _, ok := m.Annotations[lastApplied]; ok {
		m.Annotations[lastApplied] = Redacted
	}
}

func redactPodSpec(s *corev1.PodSpec) {
	for i := range s.InitContainers {
		redactContainer(&s.InitContainers[i])
	}
	for i := range s.Containers {
		redactContainer(&s.Containers[i])
	}
	for i := range s.EphemeralContainers {
		c := &s.EphemeralContainers[i].EphemeralContainerCommon
		redactEnv(c.Env)
		for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
			redactProbe(p)
		}
	}
}

func redactContainer(c *corev1.Container) {
	redactEnv(c.Env)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		redactProbe(p)
	}
	if l := c.Lifecycle; l != nil {
		for _, h := range []*corev1.LifecycleHandler{l.PostStart, l.PreStop} {
			if h != nil {
				redactHTTPGet(h.HTTPGet)
			}
		}
	}
}

func redactEnv(env []corev1.EnvVar) {
	for i := range env {
		if env[i].Value != "" {
			env[i].Value = Redacted
		}
	}
}

func redactProbe(p *corev1.Probe) {
	if p != nil {
		redactHTTPGet(p.HTTPGet)
	}
}

func redactHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	for i := range h.HTTPHeaders {
		h.HTTPHeaders[i].Value = Redacted
	}
}
