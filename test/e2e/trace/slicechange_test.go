package trace_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/nodes"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestSliceChangedWhileNodesRead: an endpoint leaves the Service's
// EndpointSlice after svctrace read the API and before its collector reads
// the node, and the node's real kube-proxy has applied the removal by then
// (as in a rollout). The rules lack an endpoint the API read lists; the
// trace must say the slice changed during the read (DP059), not that the
// datapath dropped an endpoint (DP007). Traced through the library with the
// plugin's own node inspector (collector Pods), on each kubelet node.
func TestSliceChangedWhileNodesRead(t *testing.T) {
	tb := framework.Setup(t)
	for _, n := range tb.Nodes {
		t.Run(n.ProxyMode, func(t *testing.T) {
			ns := tb.Namespace(t)
			tb.DeployEcho(t, ns, framework.EchoOptions{Name: "web", Replicas: 2})
			pods := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, 2)
			svc := framework.NewService("web", "web")
			svc.Spec.Selector = nil
			svc = tb.CreateService(t, ns, svc)
			es := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{Name: "web-manual", Namespace: ns,
					Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "svctrace-e2e"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(svc.Spec.Ports[0].Name), Port: ptr.To(int32(framework.EchoHTTPPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
			}
			for _, p := range pods {
				es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{p.Status.PodIP}, NodeName: ptr.To(p.Spec.NodeName),
					Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
			}
			slices := tb.Client.DiscoveryV1().EndpointSlices(ns)
			if _, err := slices.Create(framework.Context(t, 30*time.Second), es, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitProgrammed(t, tb, svc)
			removed := fmt.Sprintf("%s:%d", pods[1].Status.PodIP, framework.EchoHTTPPort)

			// Planned runs after the API read, before the collector starts.
			var changed bool
			planned := func(int) {
				ctx := framework.Context(t, 30*time.Second)
				cur, err := slices.Get(ctx, "web-manual", metav1.GetOptions{})
				if err != nil {
					t.Errorf("get slice: %v", err)
					return
				}
				cur.Endpoints = cur.Endpoints[:1]
				since := time.Now()
				if _, err := slices.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
					t.Errorf("update slice: %v", err)
					return
				}
				tb.WaitKubeProxySynced(t, n.Name, since)
				changed = true
			}
			insp := &nodes.Inspector{Client: tb.Client, Flags: *nodes.NewFlags(CollectorImage)}
			tr, err := trace.Run(framework.Context(t, 3*time.Minute), tb.Client, ns, "web", trace.Options{
				Inspector: insp, Nodes: plan.NodeSelection{Nodes: []string{n.Name}}, Planned: planned})
			if err != nil {
				t.Fatalf("trace: %v", err)
			}
			if !changed {
				t.Fatal("the slice was not changed during the trace")
			}
			assertNoCollectorPods(t, tb)
			if c := check(tr, report.LayerDatapath, report.CodeDPMissingEndpoints, n.Name); c != nil {
				t.Errorf("%s on %s for an endpoint removed while the node was read: %s\n%s", c.Code, n.Name, c.Message, findings(tr))
			}
			c := check(tr, report.LayerDatapath, report.CodeDPSyncPending, n.Name)
			if c == nil {
				t.Fatalf("no %s on %s:\n%s", report.CodeDPSyncPending, n.Name, findings(tr))
			}
			for _, want := range []string{"EndpointSlice web-manual modified while the nodes were read", removed} {
				if !strings.Contains(c.Message, want) {
					t.Errorf("%s does not say %q: %s", c.Code, want, c.Message)
				}
			}
			if l := tr.Layer(report.LayerDatapath); l.Status == report.StatusFail {
				t.Errorf("datapath layer fails: %s\n%s", l.Reason, findings(tr))
			}
			t.Logf("%s: %s", c.Code, c.Message)
		})
	}
}
