package trace_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/svctrace/kubectl-svctrace/cmd/cli"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/nodes"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestInterruptCleansUp interrupts a trace with SIGINT and SIGTERM at each
// stage a collector Pod goes through and checks that no Pod is left.
func TestInterruptCleansUp(t *testing.T) {
	tb := framework.Setup(t)
	ns, _ := deployWeb(t, tb, 1, nil)
	stages := []struct {
		name  string
		ready func(stage string) bool
		args  []string
	}{
		// The first sighting of the Pod: created, not yet started by the kubelet.
		{"before schedule", func(s string) bool { return s == string(nodes.StageScheduling) }, nil},
		{"while pulling", func(s string) bool {
			return s == string(nodes.StagePulling) || s == string(nodes.StageScheduling)
		}, nil},
		{"while collecting", func(s string) bool { return s == string(nodes.StageCollecting) }, nil},
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		for _, st := range stages {
			t.Run(sig.String()+"/"+st.name, func(t *testing.T) {
				// A stage lasts a fraction of a second: try a few times to
				// land the signal in it; a run that ends first still has to
				// leave nothing behind.
				for attempt := 1; attempt <= 5; attempt++ {
					args := append([]string{"--kubeconfig", tb.Kubeconfig, "--image", CollectorImage, "-o", "json", "web", "-n", ns}, st.args...)
					sent, stderr, err := interruptOnce(t, args, sig, st.ready)
					assertNoCollectorPods(t, tb)
					if !sent {
						t.Logf("attempt %d: the trace finished before stage %q was seen", attempt, st.name)
						continue
					}
					var ee *exec.ExitError
					if err == nil {
						t.Logf("attempt %d: exited 0 after %s (the signal raced the end of the trace)", attempt, sig)
					} else if !errors.As(err, &ee) || ee.ExitCode() != 1 {
						t.Errorf("exit after %s: %v, want 1; stderr: %s", sig, err, stderr)
					}
					return
				}
				t.Fatalf("never saw stage %q in 5 attempts: the signal was not delivered in it", st.name)
			})
		}
	}
}

// interruptOnce runs the binary and sends sig when ready(stage of the
// collector Pod) first holds. It reports whether the signal was sent. The
// Pod is followed with a watch started before the binary: every state,
// the brief one right after creation included, arrives in order.
func interruptOnce(t *testing.T, args []string, sig syscall.Signal, ready func(string) bool) (sent bool, stderr string, err error) {
	t.Helper()
	tb := framework.Setup(t)
	wctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := tb.Client.CoreV1().Pods(collectorNS).Watch(wctx, metav1.ListOptions{LabelSelector: nodes.ManagedSelector})
	if err != nil {
		t.Fatalf("watch collector Pods: %v", err)
	}
	defer w.Stop()
	cmd := exec.Command(binPath, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
	events := w.ResultChan()
	for {
		select {
		case err := <-done:
			return false, errb.String(), err
		case <-deadline:
			_ = cmd.Process.Kill()
			t.Fatalf("kubectl-svctrace neither finished nor reached the stage in 60s")
		case ev, ok := <-events:
			if !ok {
				events = nil // fall back to waiting for the end
				continue
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted || !ready(string(nodes.Classify(p).Stage)) {
				continue
			}
			_ = cmd.Process.Signal(sig)
			select {
			case err := <-done:
				return true, errb.String(), err
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatalf("kubectl-svctrace did not exit within 60s after %s", sig)
			}
		}
	}
}

func TestUnpullableImageIsOneClearMessage(t *testing.T) {
	tb := framework.Setup(t)
	ns, _ := deployWeb(t, tb, 1, nil)
	full := []string{"--kubeconfig", tb.Kubeconfig, "-o", "json", "--image", "svctrace.local/does-not-exist:v0", "web", "-n", ns}
	out, _ := exec.Command(binPath, full...).Output()
	assertNoCollectorPods(t, tb)
	if !bytes.Contains(out, []byte("could not pull its image")) {
		t.Fatalf("no image-pull message in the result:\n%s", out)
	}
}

func TestNotReadyNodeIsReportedNotAwaited(t *testing.T) {
	tb := framework.Setup(t)
	ctx := framework.Context(t, 30*time.Second)
	// A Node object without a kubelet: NotReady, never runs anything.
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "svtb-ghost", Labels: map[string]string{"kubernetes.io/hostname": "svtb-ghost"}}}
	if _, err := tb.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = tb.Client.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
	})
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady", Message: "no kubelet", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	if _, err := tb.Client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns, _ := deployWeb(t, tb, 1, nil)
	start := time.Now()
	r := svctrace(t, tb, "web", "-n", ns, "--node", "svtb-ghost")
	if d := time.Since(start); d > 90*time.Second {
		t.Errorf("took %s: the NotReady node was waited on", d)
	}
	c := requireCheck(t, r, report.LayerDatapath, report.CodeNodeCollectorFailed, "svtb-ghost")
	if !strings.Contains(c.Message, "NotReady") {
		t.Errorf("message does not say NotReady: %q", c.Message)
	}
}

func TestPodSecurityRestrictedNamespace(t *testing.T) {
	tb := framework.Setup(t)
	ns, _ := deployWeb(t, tb, 1, nil)
	restricted := tb.Namespace(t)
	ctx := framework.Context(t, 30*time.Second)
	nsObj, err := tb.Client.CoreV1().Namespaces().Get(ctx, restricted, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if nsObj.Labels == nil {
		nsObj.Labels = map[string]string{}
	}
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	if _, err := tb.Client.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := svctrace(t, tb, "web", "-n", ns, "--collector-namespace", restricted)
	requireNodeLayersUnknownWithAPILayers(t, r, "pod-security.kubernetes.io/enforce=privileged", "baseline")
	pods, err := tb.Client.CoreV1().Pods(restricted).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 0 {
		t.Errorf("pods in the restricted namespace: %v %v", pods, err)
	}
}

// requireNodeLayersUnknownWithAPILayers: no collector could run, so every
// node layer is unknown with a reason holding each of want, the API layers
// were still judged, and the exit code says the trace could not judge.
func requireNodeLayersUnknownWithAPILayers(t *testing.T, r result, want ...string) {
	t.Helper()
	if r.Trace == nil {
		t.Fatalf("no trace printed (exit %d): %s", r.Exit, r.Stderr)
	}
	if r.Exit != cli.ExitNotJudged {
		t.Errorf("exit %d, want %d: a collector that cannot run must not abort the trace, nor pass it", r.Exit, cli.ExitNotJudged)
	}
	for _, name := range report.NodeLayers {
		l := r.Trace.Layer(name)
		if l.Status != report.StatusUnknown {
			t.Errorf("layer %s is %s, want unknown", name, l.Status)
		}
		for _, w := range want {
			if !strings.Contains(l.Reason, w) {
				t.Errorf("layer %s reason %q lacks %q", name, l.Reason, w)
			}
		}
	}
	for _, name := range []report.LayerName{report.LayerService, report.LayerEndpoints} {
		if l := r.Trace.Layer(name); l.Status != report.StatusPass {
			t.Errorf("API layer %s is %s (%s), want pass", name, l.Status, l.Reason)
		}
	}
}

// TestRestrictedKubeconfigWithoutCollectorRoleBinding: the user has the
// reader role only. The trace still renders the API layers; the node layers
// are unknown and name the missing rule.
func TestRestrictedKubeconfigWithoutCollectorRoleBinding(t *testing.T) {
	tb := framework.Setup(t)
	kc := filepath.Join(tb.RepoRoot, ".testbed", "kubeconfig-restricted")
	ns, _ := deployWeb(t, tb, 1, nil)
	ctx := framework.Context(t, 30*time.Second)
	const binding = "svctrace-collector-svctrace-user"
	rb, err := tb.Client.RbacV1().RoleBindings(collectorNS).Get(ctx, binding, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.Client.RbacV1().RoleBindings(collectorNS).Delete(ctx, binding, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rb.ResourceVersion = ""
		if _, err := tb.Client.RbacV1().RoleBindings(collectorNS).Create(context.Background(), rb, metav1.CreateOptions{}); err != nil {
			t.Errorf("restoring the collector RoleBinding: %v", err)
		}
		time.Sleep(time.Second)
	})
	time.Sleep(time.Second) // RBAC is read through an informer
	r := svctraceWith(t, kc, "web", "-n", ns)
	requireNodeLayersUnknownWithAPILayers(t, r, "missing permission: verb create on resource pods", "in namespace "+collectorNS)
}

// TestRestrictedKubeconfig runs a full trace with exactly the shipped RBAC,
// then removes one rule and expects an error that names it.
func TestRestrictedKubeconfig(t *testing.T) {
	tb := framework.Setup(t)
	kc := filepath.Join(tb.RepoRoot, ".testbed", "kubeconfig-restricted")
	if _, err := os.Stat(kc); err != nil {
		t.Fatalf("restricted kubeconfig missing: %v", err)
	}
	ns, _ := deployWeb(t, tb, 1, nil)
	r := svctraceWith(t, kc, "web", "-n", ns)
	requireNoFail(t, r)
	for _, l := range r.Trace.Layers {
		if l.Status == report.StatusUnknown {
			t.Errorf("layer %s unknown with the shipped RBAC: %s", l.Name, l.Reason)
		}
	}

	ctx := framework.Context(t, 30*time.Second)
	role, err := tb.Client.RbacV1().Roles(collectorNS).Get(ctx, "svctrace-collector", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orig := role.DeepCopy()
	var kept []rbacv1.PolicyRule
	for _, rule := range role.Rules {
		if len(rule.Resources) == 1 && rule.Resources[0] == "pods/log" {
			continue
		}
		kept = append(kept, rule)
	}
	role.Rules = kept
	if _, err := tb.Client.RbacV1().Roles(collectorNS).Update(ctx, role, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cur, err := tb.Client.RbacV1().Roles(collectorNS).Get(context.Background(), "svctrace-collector", metav1.GetOptions{})
		if err == nil {
			cur.Rules = orig.Rules
			_, _ = tb.Client.RbacV1().Roles(collectorNS).Update(context.Background(), cur, metav1.UpdateOptions{})
		}
	})
	time.Sleep(time.Second) // RBAC is read through an informer
	r = svctraceWith(t, kc, "web", "-n", ns)
	out := r.Stdout + r.Stderr
	if !strings.Contains(out, "pods/log") && !(strings.Contains(out, `"pods"`) && strings.Contains(out, "log")) {
		t.Errorf("the missing pods/log permission is not named:\n%s", out)
	}
}
