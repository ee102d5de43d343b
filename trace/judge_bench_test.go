package trace

import (
	"context"
	"fmt"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/input"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// bigInput is a Service with n ready endpoints spread over n/100 slices,
// one Pod per endpoint on 50 nodes, a named targetPort (resolved on every
// Pod) and externalTrafficPolicy Local (per-node check).
func bigInput(n int) *input.Input {
	svc := service("web", func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Ports[0].TargetPort = intstr.FromString("http")
	})
	in := &input.Input{Namespace: "default", Name: "web", Service: svc, Nodes: map[string]*corev1.Node{}, NodesListed: true}
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("node-%02d", i)
		in.Nodes[name] = node(name, true)
	}
	var sl *discoveryv1.EndpointSlice
	for i := 0; i < n; i++ {
		if i%100 == 0 {
			if sl != nil {
				in.Slices = append(in.Slices, *sl)
			}
			sl = slice(fmt.Sprintf("web-%04d", i/100), "web", "http", 8080)
		}
		ip := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)
		podName := fmt.Sprintf("web-%05d", i)
		nodeName := fmt.Sprintf("node-%02d", i%50)
		e := slice("x", "web", "http", 8080, ep{ip: ip, pod: podName, node: nodeName, ready: true}).Endpoints[0]
		sl.Endpoints = append(sl.Endpoints, e)
		in.Pods = append(in.Pods, *pod(podName, "web", ip, nodeName))
	}
	in.Slices = append(in.Slices, *sl)
	return in
}

func TestBigServiceJudgesCleanly(t *testing.T) {
	in := bigInput(5000)
	tr := Assemble(in, nil, Options{Now: fixedNow, NoNode: true})
	assertCatalogued(t, tr)
	if tr.Endpoints.Total != 5000 || len(tr.Endpoints.Slices) != 50 {
		t.Fatalf("endpoints %d in %d slices", tr.Endpoints.Total, len(tr.Endpoints.Slices))
	}
	if l := tr.Layer(report.LayerEndpoints); l.Status != report.StatusPass {
		t.Fatalf("endpoints layer %s: %+v", l.Status, l.Checks)
	}
	if _, ok := codes(tr, report.LayerService)[report.CodePortNamedResolved]; !ok {
		t.Fatal("named port not resolved on 5000 Pods")
	}
}

// BenchmarkJudge measures Judge+Finish at 500 and 5,000 endpoints; the
// per-endpoint cost should stay flat (checks are O(endpoints + pods)).
func BenchmarkJudge(b *testing.B) {
	for _, n := range []int{500, 5000} {
		in := bigInput(n)
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Assemble(in, nil, Options{Now: fixedNow, NoNode: true})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/endpoint")
		})
	}
}

// bigObjects are bigInput(n)'s objects for a fake API, as a ClusterIP
// Service (a Local traffic policy adds one node list, see needsAllNodes).
func bigObjects(n int) []runtime.Object {
	in := bigInput(n)
	in.Service.Spec.Type = corev1.ServiceTypeClusterIP
	in.Service.Spec.ExternalTrafficPolicy = ""
	objs := []runtime.Object{in.Service}
	for i := range in.Slices {
		objs = append(objs, &in.Slices[i])
	}
	for i := range in.Pods {
		objs = append(objs, &in.Pods[i])
	}
	for _, nd := range in.Nodes {
		objs = append(objs, nd)
	}
	return append(objs, clusterDNS()...)
}

// TestBigServiceRequests: the whole API side of a 5,000-endpoint Service in
// 50 slices takes six requests, whatever the endpoint count.
func TestBigServiceRequests(t *testing.T) {
	client := fake.NewClientset(bigObjects(5000)...)
	tr, err := Run(context.Background(), client, "default", "web", Options{Now: fixedNow, NoNode: true})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Endpoints.Total != 5000 || len(tr.Endpoints.Slices) != 50 {
		t.Fatalf("endpoints %d in %d slices", tr.Endpoints.Total, len(tr.Endpoints.Slices))
	}
	if n := len(client.Actions()); n > 6 {
		for _, a := range client.Actions() {
			t.Logf("%s %s", a.GetVerb(), a.GetResource().Resource)
		}
		t.Fatalf("%d API requests, want ≤ 6", n)
	}
}

// BenchmarkRun measures Run (fetch from a fake API + judge) of a
// 5,000-endpoint Service and reports the API requests it made. The fake
// clientset's own cost (deep copies on every list) is included.
func BenchmarkRun(b *testing.B) {
	client := fake.NewClientset(bigObjects(5000)...)
	b.ReportAllocs()
	start := len(client.Actions())
	for b.Loop() {
		if _, err := Run(context.Background(), client, "default", "web", Options{Now: fixedNow, NoNode: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(client.Actions())-start)/float64(b.N), "requests/op")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/trace")
}
