package render

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Scenarios are built from API objects and assembled by trace.Assemble (the function a live trace goes through), so the
// goldens show what the real checks produce, with a fixed clock.
var fixedNow = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }

func ptr[T any](v T) *T { return &v }

func svc(mut ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "0b3f5c2e-6a41-4d8e-9c1a-2f7d8e9a4b10"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, IPFamilyPolicy: ptr(corev1.IPFamilyPolicySingleStack),
			Selector:        map[string]string{"app": "web"},
			Ports:           []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}},
			SessionAffinity: corev1.ServiceAffinityNone},
	}
	for _, m := range mut {
		m(s)
	}
	return s
}

func pod(name, ip, node string, mut ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app",
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
	for _, m := range mut {
		m(&p)
	}
	return p
}

func endpointSlice(ready bool, ips ...string) discoveryv1.EndpointSlice {
	s := discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-x7k2p", Namespace: "default", Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
	}
	for i, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready), Serving: ptr(ready), Terminating: ptr(false)},
			NodeName:   ptr("node-" + string(rune('a'+i))), Zone: ptr("zone-1"),
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-" + string(rune('1'+i))}})
	}
	return s
}

func nodes() map[string]*corev1.Node {
	out := map[string]*corev1.Node{}
	for _, n := range []string{"node-a", "node-b"} {
		out[n] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	return out
}

func withDNS(in *input.Input) *input.Input {
	in.DNSService = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", ClusterIPs: []string{"10.96.0.10"}}}
	in.DNSSlices = []discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{
		{Addresses: []string{"10.244.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}},
		{Addresses: []string{"10.244.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}}}}
	return in
}

func baseInput() *input.Input {
	return withDNS(&input.Input{Namespace: "default", Name: "web", Service: svc(),
		Pods:   []corev1.Pod{pod("web-1", "10.244.1.5", "node-a"), pod("web-2", "10.244.2.5", "node-b")},
		Slices: []discoveryv1.EndpointSlice{endpointSlice(true, "10.244.1.5", "10.244.2.5")},
		Nodes:  nodes()})
}

type scenario struct {
	name string
	in   func() *input.Input
	opts trace.Options
	// views, when set, are the node report the scenario's collectors returned.
	views func() (*report.CollectorRun, []plan.NodeView)
}

var scenarios = []scenario{
	{name: "healthy", in: baseInput, opts: trace.Options{NoNode: true}},
	{name: "selector-mismatch", in: func() *input.Input {
		in := baseInput()
		in.Service = svc(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web", "tier": "front"} })
		in.Pods = nil
		in.Slices = []discoveryv1.EndpointSlice{endpointSlice(true)}
		in.ClosestPods = []corev1.Pod{pod("web-1", "10.244.1.5", "node-a"), pod("api-1", "10.244.1.9", "node-a", func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "api", "tier": "front"}
		})}
		return in
	}, opts: trace.Options{NoNode: true}},
	{name: "named-port-missing", in: func() *input.Input {
		in := baseInput()
		in.Service = svc(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") })
		in.Pods[1].Spec.Containers[0].Ports[0].Name = "web"
		// As the EndpointSlice controller does: web-2 lands in a slice
		// without the port it cannot resolve.
		noPort := endpointSlice(true, "10.244.2.5")
		noPort.Name, noPort.Ports = "web-q9z4m", nil
		noPort.Endpoints[0].NodeName, noPort.Endpoints[0].TargetRef.Name = ptr("node-b"), "web-2"
		in.Slices = []discoveryv1.EndpointSlice{endpointSlice(true, "10.244.1.5"), noPort}
		return in
	}},
	{name: "no-endpoints", in: func() *input.Input {
		in := baseInput()
		crash := func(p *corev1.Pod) {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			p.Status.Conditions[1].Status = corev1.ConditionFalse
			p.Status.ContainerStatuses[0].Ready = false
			p.Status.ContainerStatuses[0].RestartCount = 12
			p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
		}
		in.Pods = []corev1.Pod{pod("web-1", "10.244.1.5", "node-a", crash), pod("web-2", "10.244.2.5", "node-b", crash)}
		in.Slices = []discoveryv1.EndpointSlice{endpointSlice(false, "10.244.1.5", "10.244.2.5")}
		return in
	}, opts: trace.Options{NoNode: true}},
	{name: "forbidden", in: func() *input.Input {
		in := baseInput()
		in.Slices = nil
		in.Nodes = nil
		in.Gaps = []input.Gap{
			{Layer: report.LayerEndpoints, Verb: "list", Resource: "endpointslices.discovery.k8s.io", Namespace: "default",
				Forbidden: true, Impact: "endpoints cannot be judged"},
			{Verb: "list", Resource: "nodes", Forbidden: true, Impact: "node readiness not checked"},
		}
		return in
	}, opts: trace.Options{NoNode: true}},
	{name: "headless", in: func() *input.Input {
		in := baseInput()
		in.Service = svc(func(s *corev1.Service) {
			s.Spec.ClusterIP = corev1.ClusterIPNone
			s.Spec.ClusterIPs = []string{corev1.ClusterIPNone}
		})
		return in
	}},
	{name: "externalname", in: func() *input.Input {
		in := withDNS(&input.Input{Namespace: "default", Name: "web", Service: svc(func(s *corev1.Service) {
			s.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "db.example.com"}
		})})
		return in
	}, opts: trace.Options{NoNode: true}},
	{name: "not-found", in: func() *input.Input {
		return &input.Input{Namespace: "default", Name: "web", ServiceNotFound: true, ClosestServices: []string{"web1", "webapp"}}
	}},
	{name: "collectors-failed", in: baseInput,
		views: func() (*report.CollectorRun, []plan.NodeView) {
			run := &report.CollectorRun{Image: "ghcr.io/svctrace/svctrace-collector:v0.1.0", Namespace: "svctrace-system",
				Profile: "netadmin", Capabilities: []string{"NET_ADMIN", "NET_RAW"}, HostPID: true}
			views := []plan.NodeView{
				{Node: "node-a", Roles: []string{"endpoints"}, Profile: "netadmin",
					Failure: `collector on node node-a (pod svctrace-collector-abcde) could not pull its image: Back-off pulling image "ghcr.io/svctrace/svctrace-collector:v0.1.0"`},
				{Node: "node-b", Roles: []string{"endpoints", "client"}, Failure: "node is NotReady (Ready=Unknown, NodeStatusUnknown: Kubelet stopped posting node status.): not inspected"},
			}
			for _, v := range views {
				run.Nodes = append(run.Nodes, report.CollectorNode{Node: v.Node, Roles: v.Roles, Failure: v.Failure})
			}
			run.Nodes = append(run.Nodes, report.CollectorNode{Node: "node-c", Roles: []string{"all-nodes"}, Inspected: true, Cordoned: true})
			return run, views
		}},
	{name: "escape", in: func() *input.Input {
		in := baseInput()
		in.Service = svc(func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "web\x1b[31mRED"} })
		in.Pods = nil
		return in
	}, opts: trace.Options{NoNode: true}},
}

func (sc scenario) trace() *report.ServiceTrace {
	opts := sc.opts
	opts.Now = fixedNow
	opts.Version = "v0.1.0-test"
	opts.Context = "kind-svctrace"
	in := sc.in()
	var nr *plan.NodeReport
	if sc.views != nil {
		run, views := sc.views()
		nr = &plan.NodeReport{Collector: run, Nodes: views}
	}
	return trace.Assemble(in, nr, opts)
}
