package trace

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

var fixedNow = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func ptr[T any](v T) *T { return &v }

func service(name string, mut ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.ServiceSpec{
			Type:       corev1.ServiceTypeClusterIP,
			ClusterIP:  "10.96.0.20",
			ClusterIPs: []string{"10.96.0.20"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Selector:   map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80,
				TargetPort: intstr.FromInt32(8080)}},
			SessionAffinity: corev1.ServiceAffinityNone,
		},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

func pod(name, app, ip, node string, mut ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	for _, m := range mut {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"},
		{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}}
	p.Status.ContainerStatuses[0].Ready = false
}

type ep struct {
	ip, pod, node string
	ready         bool
	terminating   bool
}

func slice(name, svc string, portName string, port int32, eps ...ep) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: managerController}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr(portName), Port: ptr(port), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for _, e := range eps {
		x := discoveryv1.Endpoint{Addresses: []string{e.ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(e.ready), Serving: ptr(e.ready || e.terminating),
				Terminating: ptr(e.terminating)},
		}
		if e.node != "" {
			x.NodeName = ptr(e.node)
		}
		if e.pod != "" {
			x.TargetRef = &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: e.pod}
		}
		s.Endpoints = append(s.Endpoints, x)
	}
	return s
}

func node(name string, ready bool) *corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionFalse
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "KubeletNotReady"}}}}
}

// clusterDNS is a healthy kube-system/kube-dns with one ready endpoint.
func clusterDNS() []runtime.Object {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}}}
	sl := slice("kube-dns-abc", "kube-dns", "dns", 53, ep{ip: "10.244.0.2", ready: true})
	sl.Namespace = "kube-system"
	return []runtime.Object{svc, sl}
}

// healthy is default/web with two ready Pods on two nodes.
func healthy() []runtime.Object {
	objs := []runtime.Object{
		service("web"),
		pod("web-1", "web", "10.244.1.5", "node-a"),
		pod("web-2", "web", "10.244.2.5", "node-b"),
		slice("web-abc", "web", "http", 8080,
			ep{ip: "10.244.1.5", pod: "web-1", node: "node-a", ready: true},
			ep{ip: "10.244.2.5", pod: "web-2", node: "node-b", ready: true}),
		node("node-a", true), node("node-b", true),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}},
	}
	return append(objs, clusterDNS()...)
}

// probeEvent is a kubelet "Unhealthy" Event for a Pod, minutes after fixedNow's hour.
func probeEvent(name, pod string, uid types.UID, msg string, count int32, minute int) *corev1.Event {
	at := metav1.NewTime(time.Date(2026, 11, 29, 3, minute, 0, 0, time.UTC))
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod, UID: uid},
		Reason:         "Unhealthy", Message: msg, Count: count, Type: corev1.EventTypeWarning,
		FirstTimestamp: at, LastTimestamp: at}
}

// judgeFrom assembles a trace as judgeViews does, with a --from client.
func judgeFrom(t *testing.T, in *input.Input, from *report.PolicyClient, views ...plan.NodeView) *report.ServiceTrace {
	t.Helper()
	tr := Assemble(in, &plan.NodeReport{Nodes: views}, Options{Now: fixedNow, From: from})
	assertCatalogued(t, tr)
	return tr
}

func wantCode(t *testing.T, tr *report.ServiceTrace, layer report.LayerName, node, code string, msgParts ...string) report.Check {
	t.Helper()
	got := nodeCodes(tr, layer, node)
	c, ok := got[code]
	if !ok {
		t.Fatalf("layer %s on %s: want %s, got %v", layer, node, code, keysOf(got))
	}
	for _, p := range msgParts {
		if !strings.Contains(c.Message, p) {
			t.Errorf("%s message lacks %q: %s", code, p, c.Message)
		}
	}
	return c
}

func evidence(c report.Check, key string) string {
	if c.Evidence == nil {
		return ""
	}
	for _, f := range c.Evidence.Fields {
		if f.Key == key {
			if f.Value != "" {
				return f.Value
			}
			return strings.Join(f.Items, ",")
		}
	}
	return ""
}

// readFixture decodes a recorded JSON fixture.
func readFixture[T any](t *testing.T, path string) T {
	t.Helper()
	var out T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}
