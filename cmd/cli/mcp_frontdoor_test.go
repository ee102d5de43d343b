package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakegateway"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestMCPTraceFrontdoor: the tool takes a route as its service; with two
// backends it returns the worst one's trace, or the one backend names, and
// frontdoor.backends lists both.
func TestMCPTraceFrontdoor(t *testing.T) {
	canary := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-canary", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.21", ClusterIPs: []string{"10.96.0.21"},
			Selector: map[string]string{"app": "web-canary"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	client := fake.NewClientset(append(objects(true), canary, gatewayPodObject())...)
	d := defaultDeps()
	d.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	d.frontdoor = func(genericclioptions.RESTClientGetter, kubernetes.Interface) (*frontdoor.Reader, error) {
		return fakegateway.Reader(client, fakegateway.ServedV1, nil, gatewayObjects("web", "web-canary")...), nil
	}
	o := &MCPOptions{Client: client, Namespace: "default", Timeout: time.Minute, ClusterDomain: "cluster.local",
		Version: "v1.2.3", deps: d, slot: make(chan struct{}, 1)}
	ctx := context.Background()

	_, tr, err := o.traceService(ctx, nil, TraceServiceArgs{Service: "httproute/store", NoNode: true})
	if err != nil {
		t.Fatal(err)
	}
	// web-canary selects no Pod: its trace is the worst.
	if tr.Service.Name != "web-canary" || tr.Verdict.Status != report.StatusFail || tr.Frontdoor == nil || len(tr.Frontdoor.Backends) != 2 {
		t.Fatalf("trace of %s, verdict %s, frontdoor %+v", tr.Service.Name, tr.Verdict.Status, tr.Frontdoor)
	}
	if tr.Metadata.Client != "pod/default/gw-envoy-1" {
		t.Errorf("client %q, want the gateway's Pod", tr.Metadata.Client)
	}

	_, tr, err = o.traceService(ctx, nil, TraceServiceArgs{Service: "httproute/store", Backend: "default/web", NoNode: true})
	if err != nil || tr.Service.Name != "web" {
		t.Fatalf("backend default/web: %v %+v", err, tr)
	}
	if _, _, err := o.traceService(ctx, nil, TraceServiceArgs{Service: "httproute/store", Backend: "default/nosuch", NoNode: true}); err == nil ||
		!strings.Contains(err.Error(), "not a backend Service") {
		t.Errorf("unknown backend: err %v", err)
	}
}
