package trace_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
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

// TestSelectorSpansTwoDeployments: a Service selecting on a label two
// Deployments share sends part of its traffic to each: SVC020 names both,
// as a warning, and the trace still passes (both answer).
func TestSelectorSpansTwoDeployments(t *testing.T) {
	tb := framework.Setup(t)
	ns := tb.Namespace(t)
	shared := map[string]string{"tier": "front"}
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "web", Replicas: 1, Labels: shared})
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "admin", Replicas: 1, Labels: shared})
	svc := framework.NewService("front", "web")
	svc.Spec.Selector = shared
	svc = tb.CreateService(t, ns, svc)
	tb.WaitReadyEndpoints(t, ns, "front", 2)
	waitProgrammed(t, tb, svc)
	r := svctrace(t, tb, "front", "-n", ns)
	c := requireCheck(t, r, report.LayerService, report.CodeSvcSeveralWorkloads, "")
	for _, w := range []string{"web", "admin"} {
		if !strings.Contains(c.Message, w) {
			t.Errorf("%s does not name Deployment %s: %q", c.Code, w, c.Message)
		}
	}
	if c.Status != report.StatusWarn {
		t.Errorf("%s is %s, want a warning", c.Code, c.Status)
	}
	requireNoFail(t, r)
}

// TestDefaultDenyEgressBlocksDNS: a client whose egress policies admit the
// Service's Pods but not the cluster DNS (none at all: NP009; UDP 53 only:
// NP010), traced --from that client, names the policy layer.
func TestDefaultDenyEgressBlocksDNS(t *testing.T) {
	tb := framework.Setup(t)
	ns, _ := deployWeb(t, tb, 1, nil)
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "client", Replicas: 1})
	client := tb.WaitPodsReady(t, ns, map[string]string{"app": "client"}, 1)[0]
	udp, tcp := ptr.To(corev1.ProtocolUDP), ptr.To(corev1.ProtocolTCP)
	toWeb := networkingv1.NetworkPolicyEgressRule{
		To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: tcp, Port: ptr.To(intstr.FromInt32(framework.EchoHTTPPort))}},
	}
	kubeDNS := networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "kube-system"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
	}
	for _, tc := range []struct {
		name  string
		rules []networkingv1.NetworkPolicyEgressRule
		code  string
		want  report.Status
	}{
		{"egress to the Service only", []networkingv1.NetworkPolicyEgressRule{toWeb}, report.CodeNPDNSDenied, report.StatusFail},
		{"DNS over UDP only", []networkingv1.NetworkPolicyEgressRule{toWeb, {To: []networkingv1.NetworkPolicyPeer{kubeDNS},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: udp, Port: ptr.To(intstr.FromInt32(53))}}}}, report.CodeNPDNSTCPDenied, report.StatusWarn},
	} {
		t.Run(tc.name, func(t *testing.T) {
			np := &networkingv1.NetworkPolicy{
				ObjectMeta: metav1.ObjectMeta{Name: "client-egress", Namespace: ns},
				Spec: networkingv1.NetworkPolicySpec{
					PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "client"}},
					PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
					Egress:      tc.rules,
				},
			}
			pols := tb.Client.NetworkingV1().NetworkPolicies(ns)
			if _, err := pols.Create(framework.Context(t, 30*time.Second), np, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = pols.Delete(context.Background(), np.Name, metav1.DeleteOptions{}) })
			r := svctrace(t, tb, "web", "-n", ns, "--from", "pod/"+client.Name)
			c := requireCheck(t, r, report.LayerPolicy, tc.code, "")
			if c.Status != tc.want {
				t.Errorf("%s is %s, want %s", c.Code, c.Status, tc.want)
			}
			if !strings.Contains(c.Message, "UDP") || !strings.Contains(c.Message, "TCP") {
				t.Errorf("%s does not say which of UDP and TCP 53 is admitted: %q", c.Code, c.Message)
			}
			// The Service's own path is admitted: no route or datapath fault.
			for _, l := range []report.LayerName{report.LayerRoute, report.LayerDatapath} {
				if st := r.Trace.Layer(l).Status; st == report.StatusFail {
					t.Errorf("layer %s fails: %s", l, summarize(r.Trace, l))
				}
			}
		})
	}
}

// udpClient sends a datagram every 200 ms from one socket (one source port,
// one conntrack flow) in the node's namespace to addr, and counts answers.
type udpClient struct {
	mu      sync.Mutex
	answers int
	stop    func()
}

func startUDPClient(t *testing.T, node, addr string) *udpClient {
	t.Helper()
	c, err := framework.DialInNode(framework.Context(t, 10*time.Second), node, "udp", addr)
	if err != nil {
		t.Fatalf("udp socket in %s to %s: %v", node, addr, err)
	}
	u := &udpClient{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		buf := make([]byte, 64)
		for ctx.Err() == nil {
			_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := c.Read(buf); err == nil {
				u.mu.Lock()
				u.answers++
				u.mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for tick := time.NewTicker(200 * time.Millisecond); ctx.Err() == nil; <-tick.C {
			_, _ = c.Write([]byte("svctrace-udp\n"))
		}
	}()
	u.stop = func() { cancel(); _ = c.Close(); wg.Wait() }
	t.Cleanup(u.stop)
	return u
}

// udpAnswers reports whether addr answers any of three datagrams sent from
// the node's namespace.
func udpAnswers(ctx context.Context, node, addr string) bool {
	c, err := framework.DialInNode(ctx, node, "udp", addr)
	if err != nil {
		return false
	}
	defer c.Close()
	buf := make([]byte, 64)
	for i := 0; i < 3; i++ {
		if _, err := c.Write([]byte("svctrace-udp\n")); err != nil {
			return false
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.Read(buf); err == nil {
			return true
		}
	}
	return false
}

func (u *udpClient) Answers() int { u.mu.Lock(); defer u.mu.Unlock(); return u.answers }

func httpPort() corev1.ServicePort {
	return corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(framework.EchoHTTPPort)}
}

func udpPort() corev1.ServicePort {
	return corev1.ServicePort{Name: "udp", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(framework.EchoUDPPort)}
}

// TestUDPFlowPinnedToReplacedBackend: a UDP client keeps sending from one
// source port while its backend is replaced and kube-proxy is stopped (so
// nothing flushes its conntrack flow: pkg/proxy/conntrack CleanStaleEntries
// runs at each of its syncs): the flow stays NATed to the gone backend, which
// never answers. CT005 names that backend on the client's node.
func TestUDPFlowPinnedToReplacedBackend(t *testing.T) {
	tb := framework.Setup(t)
	n := tb.Nodes[0]
	other := otherNode(t, tb, n.Name)
	ns, svc := deployWeb(t, tb, 1, []string{other.Name}, framework.WithPorts(httpPort(), udpPort()))
	old := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)[0]
	u := startUDPClient(t, n.Name, net.JoinHostPort(svc.Spec.ClusterIP, "53"))
	if err := framework.Eventually(framework.Context(t, 30*time.Second), 20*time.Second, 500*time.Millisecond, func(context.Context) error {
		if u.Answers() == 0 {
			return fmt.Errorf("no answer from %s:53 over UDP", svc.Spec.ClusterIP)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tb.StopKubeProxy(t, n.Name)
	if err := tb.Client.CoreV1().Pods(ns).Delete(framework.Context(t, 30*time.Second), old.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := framework.Eventually(framework.Context(t, 90*time.Second), 80*time.Second, time.Second, func(context.Context) error {
		pods := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)
		if pods[0].Status.PodIP == old.Status.PodIP {
			return fmt.Errorf("backend not replaced yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tb.WaitReadyEndpoints(t, ns, "web", 1)
	// With a grace period of 0 the Pod object is gone at once, but its
	// container answers until the kubelet kills it, which can come after the
	// replacement is Ready: until then the pinned flow is still answered.
	deleted := time.Now()
	if err := framework.Eventually(framework.Context(t, 90*time.Second), 80*time.Second, time.Second, func(ctx context.Context) error {
		if udpAnswers(ctx, n.Name, net.JoinHostPort(old.Status.PodIP, fmt.Sprint(framework.EchoUDPPort))) {
			return fmt.Errorf("the deleted backend %s still answers", old.Status.PodIP)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("the deleted backend stopped answering %s after its replacement was Ready", time.Since(deleted).Round(100*time.Millisecond))
	before := u.Answers()
	time.Sleep(2 * time.Second)
	if got := u.Answers() - before; got > 0 {
		t.Fatalf("the UDP client still gets answers (%d in 2 s): its flow is not pinned", got)
	}
	r := svctrace(t, tb, "web", "-n", ns, "--node", n.Name)
	c := requireCheck(t, r, report.LayerConntrack, report.CodeCTStaleFlows, n.Name)
	if !strings.Contains(c.Message, old.Status.PodIP) {
		t.Errorf("%s does not name the gone backend %s: %q", c.Code, old.Status.PodIP, c.Message)
	}
}

// TestUDPFlowsNeverNATed: kube-proxy is stopped on node n when a UDP
// Service is created, so n has no rules for it; a client there sends from
// one source port, and its datagrams leave un-NATed, each refreshing one
// unreplied conntrack flow to the ClusterIP. CT008 names it; once rules
// exist that flow would still skip the DNAT until it expires (a running
// kube-proxy v1.37 deletes it at its next sync: pkg/proxy/conntrack
// CleanStaleEntries). The iptables node: kube-proxy's nftables mode drops
// traffic to ClusterIPs it does not know before conntrack confirms a flow.
func TestUDPFlowsNeverNATed(t *testing.T) {
	tb := framework.Setup(t)
	n := nodeWithMode(t, tb, "iptables")
	tb.StopKubeProxy(t, n.Name)
	ns := tb.Namespace(t)
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "web", Replicas: 1, Nodes: []string{otherNode(t, tb, n.Name).Name}})
	svc := tb.CreateService(t, ns, framework.NewService("web", "web", framework.WithPorts(httpPort(), udpPort())))
	tb.WaitReadyEndpoints(t, ns, "web", 1)
	startUDPClient(t, n.Name, net.JoinHostPort(svc.Spec.ClusterIP, "53"))
	time.Sleep(2 * time.Second)
	r := svctrace(t, tb, "web", "-n", ns, "--node", n.Name)
	c := requireCheck(t, r, report.LayerConntrack, report.CodeCTUnNATedUDP, n.Name)
	if !strings.Contains(c.Message, svc.Spec.ClusterIP) {
		t.Errorf("%s does not name %s: %q", c.Code, svc.Spec.ClusterIP, c.Message)
	}
}

// TestAcceptQueueOverflow: a backend listening with an accept backlog of 1
// that never accepts; two connections fill its queue and the next SYNs are
// dropped. EPS018 names the Pod, its ListenOverflows and the port.
func TestAcceptQueueOverflow(t *testing.T) {
	tb := framework.Setup(t)
	n := tb.Nodes[0]
	const stall = 9100
	ns := tb.Namespace(t)
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "web", Replicas: 1, Nodes: []string{n.Name}, StallPort: stall})
	tb.CreateService(t, ns, framework.NewService("web", "web", framework.WithPorts(
		corev1.ServicePort{Name: "stall", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(stall)})))
	tb.WaitReadyEndpoints(t, ns, "web", 1)
	pod := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)[0]
	addr := net.JoinHostPort(pod.Status.PodIP, fmt.Sprint(stall))
	var held []net.Conn
	t.Cleanup(func() {
		for _, c := range held {
			_ = c.Close()
		}
	})
	for i := 0; i < 5; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := framework.DialInNode(ctx, n.Name, "tcp", addr)
		cancel()
		if err == nil {
			held = append(held, c)
		}
	}
	if len(held) == 0 || len(held) == 5 {
		t.Fatalf("%d of 5 connections to %s completed; a backlog of 1 admits 2", len(held), addr)
	}
	r := svctrace(t, tb, "web", "-n", ns, "--node", n.Name)
	c := requireCheck(t, r, report.LayerEndpoints, report.CodeEpsAcceptOverflow, "")
	if !strings.Contains(c.Message, pod.Name) || !strings.Contains(c.Message, fmt.Sprint(stall)) {
		t.Errorf("%s does not name pod %s and port %d: %q", c.Code, pod.Name, stall, c.Message)
	}
}
