package trace_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestEnforcedPolicyIsolatesBackends: a NetworkPolicy admitting only the
// frontend, enforced by kube-router on the backend's node (checked with real
// requests first). From the frontend the trace has no failing layer (default
// and --all-nodes); from another Pod the policy layer fails naming the
// policy, while no route or datapath layer fails: the node's own probes,
// which the policy also keeps out, are explained by it.
func TestEnforcedPolicyIsolatesBackends(t *testing.T) {
	tb := framework.Setup(t)
	webNode := nodeWithMode(t, tb, "iptables")
	clientNode := otherNode(t, tb, webNode.Name)
	ns, svc := deployWeb(t, tb, 1, []string{webNode.Name})
	waitAllNodes(t, tb, svc, 1)
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "frontend", Replicas: 1, Nodes: []string{clientNode.Name}})
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "other", Replicas: 1, Nodes: []string{clientNode.Name}})
	web := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)[0]
	frontend := tb.WaitPodsReady(t, ns, map[string]string{"app": "frontend"}, 1)[0]
	other := tb.WaitPodsReady(t, ns, map[string]string{"app": "other"}, 1)[0]

	createWebFromFrontendPolicy(t, tb, ns)
	url := fmt.Sprintf("http://%s:%d/healthz", web.Status.PodIP, framework.EchoHTTPPort)
	get := func(pod string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := tb.ExecInPod(ctx, ns, pod, "echo", "/echo", "get", url)
		return err
	}
	// kube-router programs the policy asynchronously: wait until it drops
	// the other Pod's requests, then the frontend's must still pass.
	if err := framework.Eventually(framework.Context(t, 60*time.Second), 50*time.Second, time.Second, func(context.Context) error {
		if get(other.Name) == nil {
			return fmt.Errorf("%s still reaches %s", other.Name, url)
		}
		return nil
	}); err != nil {
		t.Fatalf("policy not enforced: %v", err)
	}
	if err := get(frontend.Name); err != nil {
		t.Fatalf("the frontend is admitted by the policy but its request fails: %v", err)
	}

	for _, extra := range [][]string{nil, {"--all-nodes"}} {
		r := svctrace(t, tb, append([]string{"web", "-n", ns, "--from", "pod/" + frontend.Name}, extra...)...)
		requireNoFailingLayer(t, r)
		requireCheck(t, r, report.LayerPolicy, report.CodeNPAdmitted, "")
		if c := requireCheck(t, r, report.LayerPolicy, report.CodeNPEnforced, webNode.Name); !strings.Contains(c.Message, "kube-router") {
			t.Errorf("NP020 does not name kube-router: %q", c.Message)
		}
		if c := check(r.Trace, report.LayerPolicy, report.CodeNPEnforcement, ""); c != nil {
			t.Errorf("%v: NP006 kept although the backend's node shows its enforcer: %s", extra, c.Message)
		}
		if r.Exit != 0 && r.Exit != 1 {
			t.Errorf("%v: exit %d, want 0 or warn-only", extra, r.Exit)
		}
	}

	r := svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+other.Name)
	if c := requireCheck(t, r, report.LayerPolicy, report.CodeNPDenied, ""); !strings.Contains(c.Message, "web-from-frontend") {
		t.Errorf("NP003 does not name the policy: %q", c.Message)
	}
	requireCheck(t, r, report.LayerPolicy, report.CodeNPEnforced, webNode.Name)
	for _, l := range []report.LayerName{report.LayerRoute, report.LayerDatapath} {
		if s := r.Trace.Layer(l).Status; s == report.StatusFail {
			t.Errorf("layer %s failed under an enforced policy: %s\n  %s", l, r.Trace.Layer(l).Reason, summarize(r.Trace, l))
		}
	}
	if r.Trace.Verdict.FirstFailingLayer != report.LayerPolicy {
		t.Errorf("first failing layer %q, want policy", r.Trace.Verdict.FirstFailingLayer)
	}
}

// TestUnenforcedNodeLetsDeniedTrafficThrough: the same policy admitting only
// the frontend, but kube-router's policy controller is stopped on the
// backend's node and what it programmed there removed, as on a cluster
// whose CNI enforces nothing. The denied Pod's requests arrive (checked with
// a real request); the trace says the policy denies it (NP003) and that
// nothing on that node enforces it (NP021, a warning), instead of NP020.
func TestUnenforcedNodeLetsDeniedTrafficThrough(t *testing.T) {
	tb := framework.Setup(t)
	webNode := nodeWithMode(t, tb, "iptables")
	clientNode := otherNode(t, tb, webNode.Name)
	ns, _ := deployWeb(t, tb, 1, []string{webNode.Name})
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "other", Replicas: 1, Nodes: []string{clientNode.Name}})
	web := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)[0]
	other := tb.WaitPodsReady(t, ns, map[string]string{"app": "other"}, 1)[0]
	createWebFromFrontendPolicy(t, tb, ns)
	tb.StopPolicyEnforcer(t, webNode.Name)
	url := fmt.Sprintf("http://%s:%d/healthz", web.Status.PodIP, framework.EchoHTTPPort)
	if err := framework.Eventually(framework.Context(t, 60*time.Second), 50*time.Second, time.Second, func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := tb.ExecInPod(ctx, ns, other.Name, "echo", "/echo", "get", url)
		return err
	}); err != nil {
		t.Fatalf("with no enforcer on %s, %s should reach %s: %v", webNode.Name, other.Name, url, err)
	}

	r := svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+other.Name)
	requireCheck(t, r, report.LayerPolicy, report.CodeNPDenied, "")
	c := requireCheck(t, r, report.LayerPolicy, report.CodeNPNotEnforced, webNode.Name)
	if c.Status != report.StatusWarn || !strings.Contains(c.Message, "web-from-frontend") || !strings.Contains(c.Message, web.Name) {
		t.Errorf("%s: status %s, message %q: want a warning naming the policy and Pod %s", c.Code, c.Status, c.Message, web.Name)
	}
	if c := check(r.Trace, report.LayerPolicy, report.CodeNPEnforced, webNode.Name); c != nil {
		t.Errorf("NP020 on %s with its enforcer stopped: %s", webNode.Name, c.Message)
	}
}

// createWebFromFrontendPolicy admits only Pods labelled app=frontend to the
// web Pods' HTTP port.
func createWebFromFrontendPolicy(t *testing.T, tb *framework.Testbed, ns string) {
	t.Helper()
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web-from-frontend", Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(framework.EchoHTTPPort))}},
			}},
		},
	}
	if _, err := tb.Client.NetworkingV1().NetworkPolicies(ns).Create(framework.Context(t, 30*time.Second), np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
