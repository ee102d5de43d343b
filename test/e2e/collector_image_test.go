package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
)

// TestCollectorImageTools runs the collector image's userspace tools on every
// node under the collector's security profile (hostNetwork, uid 0, read-only
// root, only NET_ADMIN + NET_RAW, memory emptyDir at /run) and checks they see
// that node's real kube-proxy state.
func TestCollectorImageTools(t *testing.T) {
	tb := framework.Setup(t)
	ns := tb.Namespace(t)
	tools := []struct {
		name string
		cmd  []string
		want map[string]string // proxy mode -> substring ("" = any mode)
	}{
		{"iptables-nft", []string{"/usr/sbin/iptables-nft-save", "-t", "nat"}, map[string]string{"iptables": "-A KUBE-SERVICES"}},
		{"iptables-legacy", []string{"/usr/sbin/iptables-legacy", "-t", "nat", "-S"}, map[string]string{"": "-P PREROUTING ACCEPT"}},
		{"nft", []string{"/usr/sbin/nft", "list", "tables"}, map[string]string{"nftables": "table ip kube-proxy"}},
		{"conntrack", []string{"/usr/sbin/conntrack", "-S"}, map[string]string{"": "cpu="}},
		{"ip", []string{"/usr/sbin/ip", "route", "show"}, map[string]string{"": "default via 10.0.0.1"}},
	}
	for _, n := range tb.Nodes {
		var containers []corev1.Container
		for _, tool := range tools {
			containers = append(containers, corev1.Container{
				Name: tool.name, Image: "svctrace.local/collector:dev", ImagePullPolicy: corev1.PullNever,
				Command: tool.cmd,
				Env:     []corev1.EnvVar{{Name: "XTABLES_LOCKFILE", Value: "/run/xtables.lock"}},
				SecurityContext: &corev1.SecurityContext{
					RunAsUser: ptr.To[int64](0), ReadOnlyRootFilesystem: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}, Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: "run", MountPath: "/run"}},
			})
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "tools-" + n.Name},
			Spec: corev1.PodSpec{
				NodeName: n.Name, HostNetwork: true, RestartPolicy: corev1.RestartPolicyNever,
				Containers: containers,
				Volumes: []corev1.Volume{{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					Medium: corev1.StorageMediumMemory, SizeLimit: resource.NewQuantity(8<<20, resource.BinarySI)}}}},
			},
		}
		ctx := framework.Context(t, 3*time.Minute)
		if _, err := tb.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var phase corev1.PodPhase
		err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
			p, err := tb.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			phase = p.Status.Phase
			return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
		})
		if err != nil {
			t.Fatalf("tools pod on %s did not finish (phase %s): %v", n.Name, phase, err)
		}
		for _, tool := range tools {
			b, err := tb.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: tool.name}).DoRaw(ctx)
			if err != nil {
				t.Errorf("%s logs on %s: %v", tool.name, n.Name, err)
				continue
			}
			out := string(b)
			for mode, want := range tool.want {
				if (mode == "" || mode == n.ProxyMode) && !strings.Contains(out, want) {
					t.Errorf("%s on %s (%s): output lacks %q:\n%s", tool.name, n.Name, n.ProxyMode, want, truncate(out, 2000))
				}
			}
		}
		if phase != corev1.PodSucceeded {
			t.Errorf("tools pod on %s: phase %s", n.Name, phase)
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d more bytes)", len(s)-n)
}
