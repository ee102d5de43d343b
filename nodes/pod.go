package nodes

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// Labels put on every collector Pod. `kubectl svctrace cleanup` finds
// leftovers of interrupted runs through LabelManagedBy.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelRun       = "svctrace.dev/run"
	LabelNode      = "svctrace.dev/node"

	AnnotationService = "svctrace.dev/service"

	ManagedByValue = "svctrace"
	NameValue      = "svctrace-collector"
	ContainerName  = "collector"
)

// ManagedSelector selects every collector Pod svctrace ever created.
var ManagedSelector = LabelManagedBy + "=" + ManagedByValue + "," + LabelName + "=" + NameValue

// HostPID: every collector Pod shares the node's PID namespace, as
// `kubectl debug node/…` Pods do. It adds no capability; it lets the sockets
// section see the endpoint Pods' processes and read their network namespace's
// socket tables through /proc/<pid>/net (no setns, no SYS_ADMIN or
// SYS_PTRACE). Every profile uses it, and the report says so.
const HostPID = true

// Profile is the set of privileges a collector Pod runs with. The default is
// the least that reading netfilter, conntrack and routes needs, like
// `kubectl debug --profile=netadmin`, plus the host's network and PID
// namespaces (HostPID).
type Profile string

const (
	// ProfileNetAdmin: capabilities NET_ADMIN and NET_RAW only.
	ProfileNetAdmin Profile = "netadmin"
	// ProfileBPF adds what opening pinned eBPF maps needs (BPF, SYS_ADMIN
	// for bpffs on older kernels).
	ProfileBPF Profile = "netadmin+bpf"
	// ProfileNetns adds what probing from inside the --from Pod's network
	// namespace needs: SYS_ADMIN for setns into a namespace owned by
	// another user namespace's root, SYS_PTRACE to open /proc/<pid>/ns/net
	// and /proc/<pid>/root/etc/resolv.conf of another user's process. Only
	// the client's node's collector gets it, only with --client-netns.
	ProfileNetns Profile = "netadmin+netns"
	// ProfilePrivileged is a privileged container, only when the user asks.
	ProfilePrivileged Profile = "privileged"
)

// Capabilities returns the capabilities added for a profile (privileged has all).
func (p Profile) Capabilities() []corev1.Capability {
	switch p {
	case ProfileBPF:
		return []corev1.Capability{"NET_ADMIN", "NET_RAW", "BPF", "SYS_ADMIN"}
	case ProfileNetns:
		return []corev1.Capability{"NET_ADMIN", "NET_RAW", "SYS_ADMIN", "SYS_PTRACE"}
	case ProfilePrivileged:
		return nil
	default:
		return []corev1.Capability{"NET_ADMIN", "NET_RAW"}
	}
}

// PodSpecOptions are the knobs of one collector Pod.
type PodSpecOptions struct {
	Namespace       string
	Image           string
	ImagePullPolicy corev1.PullPolicy
	Profile         Profile
	// DeadlineSeconds is the Pod's activeDeadlineSeconds: the kubelet kills the
	// Pod after it even if the plugin died before deleting it.
	DeadlineSeconds int64
	RunID           string
	Service         string // "namespace/name", for humans reading leftovers
}

var labelValueUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// labelValue squeezes a node name into a valid label value.
func labelValue(s string) string {
	s = labelValueUnsafe.ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "-_.")
}

// NewPod builds the collector Pod for one node. The request travels as
// arguments (collectorapi.RequestArgs) so the Pod needs no ConfigMap (and the
// plugin no RBAC for one). It fails only when the request is too large for
// a Pod to carry.
func NewPod(node string, requestJSON []byte, o PodSpecOptions) (*corev1.Pod, error) {
	args, err := collectorapi.RequestArgs(requestJSON)
	if err != nil {
		return nil, err
	}
	pull := o.ImagePullPolicy
	if pull == "" {
		pull = corev1.PullIfNotPresent
	}
	deadline := o.DeadlineSeconds
	if deadline <= 0 {
		deadline = 300
	}
	sc := &corev1.SecurityContext{
		RunAsUser:                ptr.To[int64](0),
		RunAsNonRoot:             ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{
			Drop: []corev1.Capability{"ALL"},
			Add:  o.Profile.Capabilities(),
		},
		// The runtime's default seccomp filter, whatever the kubelet's
		// seccompDefault: the collector's system calls are all in it, and
		// the ones only SYS_ADMIN unlocks there (setns, bpf) come with the
		// profiles that add SYS_ADMIN.
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if o.Profile == ProfilePrivileged {
		sc.Privileged = ptr.To(true)
		sc.AllowPrivilegeEscalation = ptr.To(true)
		sc.Capabilities = nil
		sc.SeccompProfile = nil
	}
	volumes := []corev1.Volume{
		// The legacy iptables tools need a writable lock file and the
		// root filesystem is read-only: a memory emptyDir at /run and /tmp.
		{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(8<<20, resource.BinarySI)}}},
		{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(8<<20, resource.BinarySI)}}},
	}
	mounts := []corev1.VolumeMount{{Name: "run", MountPath: "/run"}, {Name: "tmp", MountPath: "/tmp"}}
	// The host's bpffs, read-only, in every profile: listing the pinned
	// maps needs no capability and is how an eBPF datapath that owns the
	// node's Services (Cilium, Calico eBPF) is detected without relying on
	// node annotations. Opening the maps needs ProfileBPF.
	volumes = append(volumes, corev1.Volume{Name: "bpffs", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/sys/fs/bpf"}}})
	mounts = append(mounts, corev1.VolumeMount{Name: "bpffs", MountPath: "/sys/fs/bpf", ReadOnly: true})
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "svctrace-collector-",
			Namespace:    o.Namespace,
			Labels: map[string]string{
				LabelName:      NameValue,
				LabelManagedBy: ManagedByValue,
				LabelRun:       labelValue(o.RunID),
				LabelNode:      labelValue(node),
			},
			Annotations: map[string]string{AnnotationService: o.Service},
		},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			HostNetwork:                   true,
			HostPID:                       HostPID,
			DNSPolicy:                     corev1.DNSDefault,
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         ptr.To(deadline),
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			// Tolerate every taint: the node we must look at may be
			// cordoned, tainted NoExecute, or the control plane.
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           o.Image,
				ImagePullPolicy: pull,
				Args:            args,
				Env:             []corev1.EnvVar{{Name: "XTABLES_LOCKFILE", Value: "/run/xtables.lock"}},
				SecurityContext: sc,
				VolumeMounts:    mounts,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
			Volumes: volumes,
		},
	}, nil
}

// describe names a Pod for messages.
func describe(p *corev1.Pod) string {
	if p == nil {
		return "<nil>"
	}
	return fmt.Sprintf("pod %s/%s", p.Namespace, p.Name)
}
