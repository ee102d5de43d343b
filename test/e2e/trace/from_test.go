package trace_test

import (
	"slices"
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

// TestFromClientPolicyAndNode traces from a client Pod on the other node:
// the client's node is inspected too (role client), and a NetworkPolicy that
// admits only app=allowed is judged to deny this client (NP003) and to admit
// an allowed one (NP002), on the Service's targetPort, and enforced on the
// Service's node by kube-router (NP020).
func TestFromClientPolicyAndNode(t *testing.T) {
	tb := framework.Setup(t)
	webNode := nodeWithMode(t, tb, "iptables")
	clientNode := otherNode(t, tb, webNode.Name)
	ns, _ := deployWeb(t, tb, 1, []string{webNode.Name})
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "client", Replicas: 1, Nodes: []string{clientNode.Name}})
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "allowed", Replicas: 1, Nodes: []string{clientNode.Name}})
	client := tb.WaitPodsReady(t, ns, map[string]string{"app": "client"}, 1)[0]
	allowed := tb.WaitPodsReady(t, ns, map[string]string{"app": "allowed"}, 1)[0]

	tcp := ptr.To(corev1.ProtocolTCP)
	np := &networkingv1.NetworkPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "web-only-allowed", Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "allowed"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: ptr.To(intstr.FromInt32(framework.EchoHTTPPort))}},
			}},
		},
	}
	if _, err := tb.Client.NetworkingV1().NetworkPolicies(ns).Create(framework.Context(t, 30*time.Second), np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+client.Name)
	denied := requireCheck(t, r, report.LayerPolicy, report.CodeNPDenied, "")
	if !strings.Contains(denied.Message, "web-only-allowed") {
		t.Errorf("NP003 does not name the policy: %q", denied.Message)
	}
	// kube-router enforces policies on the testbed's nodes: the caveat gives
	// way to what the Service's node shows.
	requireCheck(t, r, report.LayerPolicy, report.CodeNPEnforced, webNode.Name)
	if r.Exit != 3 {
		t.Errorf("exit %d, want 3 (the policy layer fails for this client)", r.Exit)
	}
	roles := map[string][]string{}
	for _, n := range r.Trace.Metadata.Collector.Nodes {
		roles[n.Node] = n.Roles
		if !n.Inspected {
			t.Errorf("node %s not inspected: %s", n.Node, n.Failure)
		}
	}
	if !slices.Contains(roles[clientNode.Name], "client") || !slices.Contains(roles[webNode.Name], "endpoints") {
		t.Errorf("collector roles %v: want %s as client and %s as endpoints", roles, clientNode.Name, webNode.Name)
	}

	r = svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+ns+"/"+allowed.Name)
	requireCheck(t, r, report.LayerPolicy, report.CodeNPAdmitted, "")
	if c := check(r.Trace, report.LayerPolicy, report.CodeNPDenied, ""); c != nil {
		t.Errorf("allowed client judged denied: %s", c.Message)
	}

	// A node as the client: its node is inspected with role client, and
	// the policy, which admits only Pods, does not admit it.
	r = svctrace(t, tb, "web", "-n", ns, "--from", "node/"+clientNode.Name)
	nodeRoles := map[string][]string{}
	for _, n := range r.Trace.Metadata.Collector.Nodes {
		nodeRoles[n.Node] = n.Roles
	}
	if !slices.Contains(nodeRoles[clientNode.Name], "client") {
		t.Errorf("--from node/%s: collector roles %v", clientNode.Name, nodeRoles)
	}
	if c := requireCheck(t, r, report.LayerPolicy, report.CodeNPDenied, ""); !strings.Contains(c.Message, "node "+clientNode.Name) {
		t.Errorf("NP003 does not name the client node: %q", c.Message)
	}
}
