package trace_test

import (
	"context"
	"fmt"
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

// policyEnforced: the testbed enforces NetworkPolicies (kube-router in
// each kubelet node's namespace) when the denied Pod's own requests to the
// backend are dropped; the enforcer programs a new policy asynchronously, so
// this waits for the drop. Without an enforcer a denied client still
// connects, which the trace reports as a policy that is not enforced (NP012).
func policyEnforced(t *testing.T, tb *framework.Testbed, ns, denied, backendIP string) bool {
	t.Helper()
	url := fmt.Sprintf("http://%s:%d/healthz", backendIP, framework.EchoHTTPPort)
	err := framework.Eventually(framework.Context(t, 60*time.Second), 50*time.Second, time.Second, func(context.Context) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := tb.ExecInPod(ctx, ns, denied, "echo", "/echo", "get", url); err == nil {
			return fmt.Errorf("%s still reaches %s", denied, url)
		}
		return nil
	})
	return err == nil
}

// clientNetnsCheck is the RT020 of the client's node: the probes were made
// from inside the Pod's network namespace, by the netadmin+netns collector.
func clientNetnsCheck(t *testing.T, r result, node, pod string) *report.Check {
	t.Helper()
	c := requireCheck(t, r, report.LayerRoute, report.CodeRTClientProbed, node)
	if !strings.Contains(c.Message, pod) || !strings.Contains(c.Message, "netadmin+netns") {
		t.Errorf("RT020 does not say how the client was probed: %q", c.Message)
	}
	for _, n := range r.Trace.Metadata.Collector.Nodes {
		if n.Node == node && n.Profile != "netadmin+netns" {
			t.Errorf("client node %s ran profile %q, want netadmin+netns", node, n.Profile)
		}
		if n.Node != node && n.Profile == "netadmin+netns" {
			t.Errorf("node %s is not the client's and ran netadmin+netns", n.Node)
		}
	}
	return c
}

// TestFromClientNetnsPolicy: with --client-netns the allowed and the denied
// client probe web from their own network namespaces. The allowed one
// reaches it; the denied one's probes fail and are attributed to the policy
// (NP011) when an enforcer runs, or show the policy unenforced (NP012).
// Without the flag the report says the Pod's own view was skipped (RT021).
func TestFromClientNetnsPolicy(t *testing.T) {
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
	web := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)[0]
	enforced := policyEnforced(t, tb, ns, client.Name, web.Status.PodIP)

	r := svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+allowed.Name, "--client-netns")
	probed := clientNetnsCheck(t, r, clientNode.Name, allowed.Name)
	if !strings.Contains(probed.Message, "answered") {
		t.Errorf("RT020 = %q", probed.Message)
	}
	for _, code := range []string{report.CodeNPClientDropSeen, report.CodeNPClientNotEnforced} {
		if c := check(r.Trace, report.LayerPolicy, code, ""); c != nil {
			t.Errorf("allowed client: %s %s", code, c.Message)
		}
	}
	if c := check(r.Trace, report.LayerRoute, report.CodeRTClientTimeout, ""); c != nil {
		t.Errorf("allowed client: RT022 %s", c.Message)
	}

	r = svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+client.Name, "--client-netns")
	clientNetnsCheck(t, r, clientNode.Name, client.Name)
	if enforced {
		c := requireCheck(t, r, report.LayerPolicy, report.CodeNPClientDropSeen, clientNode.Name)
		if !strings.Contains(c.Message, "web-only-allowed") {
			t.Errorf("NP011 does not name the policy: %q", c.Message)
		}
		if c := check(r.Trace, report.LayerRoute, report.CodeRTClientTimeout, ""); c != nil {
			t.Errorf("the policy's drop counted as a route fault: %s", c.Message)
		}
	} else {
		t.Log("no NetworkPolicy enforcer in the testbed: the denied client is expected to connect")
		requireCheck(t, r, report.LayerPolicy, report.CodeNPClientNotEnforced, clientNode.Name)
	}

	r = svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+client.Name)
	if c := requireCheck(t, r, report.LayerRoute, report.CodeRTClientSkipped, clientNode.Name); !strings.Contains(c.NextStep, "--client-netns") {
		t.Errorf("RT021 does not say how to enable the Pod's view: %q", c.NextStep)
	}
}

// TestFromClientNetnsSearchPathResolvesElsewhere: the client's dnsConfig
// puts another namespace, which also has a Service named web, first in its
// search list, so the short name "web" resolves to that Service: a DNS
// warning naming the queries sent and the one that answered.
func TestFromClientNetnsSearchPathResolvesElsewhere(t *testing.T) {
	tb := framework.Setup(t)
	webNode := nodeWithMode(t, tb, "iptables")
	ns, _ := deployWeb(t, tb, 1, []string{webNode.Name})
	other, _ := deployWeb(t, tb, 1, []string{webNode.Name})
	ctx := framework.Context(t, 60*time.Second)
	dnsSvc, err := tb.Client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep := tb.DeployEcho(t, ns, framework.EchoOptions{Name: "lookup", Replicas: 1, Nodes: []string{webNode.Name}})
	spec := *dep.Spec.Template.Spec.DeepCopy()
	spec.DNSPolicy = corev1.DNSNone
	spec.DNSConfig = &corev1.PodDNSConfig{
		Nameservers: []string{dnsSvc.Spec.ClusterIP},
		Searches:    []string{other + ".svc.cluster.local", ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"},
		Options:     []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("5")}},
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "searcher", Namespace: ns, Labels: map[string]string{"app": "searcher"}}, Spec: spec}
	if _, err := tb.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tb.WaitPodsReady(t, ns, map[string]string{"app": "searcher"}, 1)

	r := svctrace(t, tb, "web", "-n", ns, "--from", "pod/searcher", "--client-netns")
	c := requireCheck(t, r, report.LayerDNS, report.CodeDNSClientElsewhere, webNode.Name)
	for _, want := range []string{"web." + other + ".svc.cluster.local.", "queries sent", "not the Service web." + ns + ".svc.cluster.local"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("DNS021 %q lacks %q", c.Message, want)
		}
	}
	if c.Status != report.StatusWarn {
		t.Errorf("DNS021 status %s, want warn", c.Status)
	}

	// The default resolver of a Pod in ns finds its own namespace's web.
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "plain", Replicas: 1, Nodes: []string{webNode.Name}})
	plain := tb.WaitPodsReady(t, ns, map[string]string{"app": "plain"}, 1)[0]
	r = svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+plain.Name, "--client-netns")
	requireCheck(t, r, report.LayerDNS, report.CodeDNSClientResolves, webNode.Name)
}

// TestFromBackendHairpin: the Service's only backend is the client, so every
// connection it makes to the ClusterIP comes back to itself; kube-proxy's
// endpoint chain masquerades it (-s <podIP> -j KUBE-MARK-MASQ) and the Pod
// reaches itself: DP056 with that rule as evidence.
func TestFromBackendHairpin(t *testing.T) {
	tb := framework.Setup(t)
	webNode := nodeWithMode(t, tb, "iptables")
	ns, _ := deployWeb(t, tb, 1, []string{webNode.Name})
	web := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)[0]

	r := svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+web.Name, "--client-netns")
	c := requireCheck(t, r, report.LayerDatapath, report.CodeDPHairpinOK, webNode.Name)
	for _, want := range []string{"reached itself", web.Status.PodIP, "KUBE-MARK-MASQ"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("DP056 %q lacks %q", c.Message, want)
		}
	}
	if x := check(r.Trace, report.LayerDatapath, report.CodeDPHairpinFails, ""); x != nil {
		t.Errorf("hairpin failure: %s", x.Message)
	}
	requireNoFail(t, r)
}
