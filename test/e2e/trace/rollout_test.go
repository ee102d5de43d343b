package trace_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestETPLocalRolloutKeepsTerminatingEndpoints: an externalTrafficPolicy
// Local Service in the middle of a rollout that moves its only Pod from node
// n to another node. The old Pod drains (terminating, still serving) on n;
// kube-proxy there sends external traffic to it (its local serving +
// terminating fallback), so n is not a node without local endpoints: no
// SVC009, no failing layer, and n's rules match what kube-proxy should hold.
func TestETPLocalRolloutKeepsTerminatingEndpoints(t *testing.T) {
	tb := framework.Setup(t)
	for _, n := range tb.Nodes {
		t.Run(n.ProxyMode, func(t *testing.T) {
			other := otherNode(t, tb, n.Name)
			ns := tb.Namespace(t)
			tb.DeployEcho(t, ns, framework.EchoOptions{Name: "web", Replicas: 1, Nodes: []string{n.Name}, Drain: 2 * time.Minute})
			svc := tb.CreateService(t, ns, framework.NewService("web", "web", framework.NodePortLocal()))
			tb.WaitReadyEndpoints(t, ns, "web", 1)
			waitProgrammed(t, tb, svc)
			old := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 1)[0]

			// The rollout: the template now asks for the other node. The
			// Deployment surges a new Pod there, then terminates the old one.
			patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":`+
				`{"nodeSelectorTerms":[{"matchExpressions":[{"key":"kubernetes.io/hostname","operator":"In","values":[%q]}]}]}}}}}}}`, other.Name)
			ctx := framework.Context(t, 3*time.Minute)
			if _, err := tb.Client.AppsV1().Deployments(ns).Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			// Wait for the slices to say it: the old Pod's endpoint on n
			// serving and terminating, the new one ready on the other node.
			var draining, fresh bool
			if err := framework.Eventually(ctx, 90*time.Second, time.Second, func(ctx2 context.Context) error {
				slices, err := tb.Client.DiscoveryV1().EndpointSlices(ns).List(ctx2, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
				if err != nil {
					return err
				}
				draining, fresh = false, false
				for _, s := range slices.Items {
					for _, e := range s.Endpoints {
						c := e.Conditions
						if ptr.Deref(e.NodeName, "") == n.Name && len(e.Addresses) > 0 && e.Addresses[0] == old.Status.PodIP &&
							ptr.Deref(c.Terminating, false) && ptr.Deref(c.Serving, false) && !ptr.Deref(c.Ready, true) {
							draining = true
						}
						if ptr.Deref(e.NodeName, "") == other.Name && ptr.Deref(c.Ready, false) {
							fresh = true
						}
					}
				}
				if !draining || !fresh {
					return fmt.Errorf("old endpoint serving+terminating on %s: %v; new endpoint ready on %s: %v", n.Name, draining, other.Name, fresh)
				}
				return nil
			}); err != nil {
				t.Fatalf("rollout: %v", err)
			}
			time.Sleep(2 * time.Second) // kube-proxy's sync after the slice change

			r := svctrace(t, tb, "web", "-n", ns, "--node", n.Name)
			requireNoFailingLayer(t, r)
			// Only the nodes with no endpoint at all (the IPVS node, when
			// it runs a kubelet) may be counted as dropping external
			// traffic; n, draining, may not.
			nodes, err := tb.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			without := len(nodes.Items) - 2
			c := check(r.Trace, report.LayerService, report.CodeSvcETPLocal, "")
			switch {
			case without == 0 && c != nil:
				t.Errorf("%s during a rollout while %s still has a serving, terminating endpoint: %s", c.Code, n.Name, c.Message)
			case without > 0 && (c == nil || !strings.Contains(c.Message, fmt.Sprintf("on %d of %d nodes", without, len(nodes.Items)))):
				t.Errorf("want %s counting the %d node(s) without any endpoint, not %s: %+v", report.CodeSvcETPLocal, without, n.Name, c)
			}
			for _, code := range []string{report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints, report.CodeDPETPLocalNoLocal} {
				if c := check(r.Trace, report.LayerDatapath, code, n.Name); c != nil {
					t.Errorf("%s on %s: %s", code, n.Name, c.Message)
				}
			}
			requireCheck(t, r, report.LayerDatapath, report.CodeDPRulesMatch, n.Name)
		})
	}
}

// TestAffinityTimeoutDiffersFromRules: a ClientIP-affinity Service whose
// timeout changes while kube-proxy is stopped. The rules keep the old
// timeout (iptables: the recent match's --seconds; nftables: the affinity
// set's timeout): DP023 names both numbers on that node.
func TestAffinityTimeoutDiffersFromRules(t *testing.T) {
	tb := framework.Setup(t)
	for _, n := range tb.Nodes {
		t.Run(n.ProxyMode, func(t *testing.T) {
			ns, _ := deployWeb(t, tb, 1, []string{n.Name}, framework.SessionAffinityClientIP(600))
			time.Sleep(2 * time.Second) // the affinity rules come with the sync that programmed the endpoints
			tb.StopKubeProxy(t, n.Name)
			patch := `{"spec":{"sessionAffinityConfig":{"clientIP":{"timeoutSeconds":300}}}}`
			if _, err := tb.Client.CoreV1().Services(ns).Patch(framework.Context(t, 30*time.Second), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			r := svctrace(t, tb, "web", "-n", ns, "--node", n.Name)
			c := requireCheck(t, r, report.LayerDatapath, report.CodeDPAffinityTimeout, n.Name)
			if !strings.Contains(c.Message, "300") || !strings.Contains(c.Message, "600") {
				t.Errorf("%s does not name the Service's 300 s and the rules' 600 s: %q", c.Code, c.Message)
			}
			if c.Status != report.StatusWarn && c.Status != report.StatusFail {
				t.Errorf("%s is %s", c.Code, c.Status)
			}
		})
	}
}
