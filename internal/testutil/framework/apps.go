package framework

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
)

// EchoImage is the testbed's echo app (test/testbed/cmd/echo).
const EchoImage = "svctrace.local/echo:v1"

// Echo ports the app listens on by default (and declares).
const (
	EchoHTTPPort = 8080
	EchoTCPPort  = 9000
	EchoUDPPort  = 9001
)

// EchoOptions shape one echo Deployment.
type EchoOptions struct {
	Name     string // also the value of the "app" label
	Replicas int32
	// Nodes restricts the Pods to these nodes (spread evenly across them).
	// Empty means any node.
	Nodes []string
	// ListenHTTPPort makes the app listen on another port than the one it
	// declares (EchoHTTPPort): the "app on the wrong port" fault. The readiness
	// probe follows the real port, so the Pods still become Ready.
	ListenHTTPPort int
	// Bind is the listen address; "127.0.0.1" makes the app unreachable from
	// outside its Pod while it still reports Ready (probe via exec).
	Bind string
	// Family makes the app listen in one IP family only, "4" or "6" (empty:
	// both): an IPv4-only app behind a dual-stack Service refuses IPv6
	// connections. The kubelet probes the Pod's primary address, so the
	// Pods stay Ready when Family is the cluster's primary family.
	Family string
	// NotReady starts the Pods with a failing readiness endpoint.
	NotReady bool
	Labels   map[string]string
	// Tolerations let the Pods run on tainted nodes (the testbed's IPVS node).
	Tolerations []corev1.Toleration
	// Drain keeps a Pod serving (and Ready by its probe) this long after
	// SIGTERM: a terminating Pod that is still serving.
	Drain time.Duration
	// StallPort also listens on this TCP port with an accept backlog of 1 and
	// never accepts: a backend whose accept queue fills.
	StallPort int
}

// DeployEcho creates the echo Deployment (deleted with the namespace).
func (tb *Testbed) DeployEcho(t testing.TB, ns string, o EchoOptions) *appsv1.Deployment {
	t.Helper()
	if o.Name == "" {
		o.Name = "echo"
	}
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	lbls := map[string]string{"app": o.Name}
	for k, v := range o.Labels {
		lbls[k] = v
	}
	httpPort := EchoHTTPPort
	if o.ListenHTTPPort != 0 {
		httpPort = o.ListenHTTPPort
	}
	args := []string{"serve", "--http-port", strconv.Itoa(httpPort)}
	if o.Bind != "" {
		args = append(args, "--bind", o.Bind)
	}
	if o.Family != "" {
		args = append(args, "--family", o.Family)
	}
	if o.NotReady {
		args = append(args, "--not-ready")
	}
	if o.StallPort > 0 {
		args = append(args, "--stall-port", strconv.Itoa(o.StallPort))
	}
	grace := int64(1)
	if o.Drain > 0 {
		args = append(args, "--drain", o.Drain.String())
		grace = int64(o.Drain.Seconds()) + 30
	}
	probe := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(httpPort)}},
		PeriodSeconds:    1,
		FailureThreshold: 1,
		SuccessThreshold: 1,
	}
	if o.Bind == "127.0.0.1" {
		// The kubelet probes from outside the Pod; a loopback-only app is probed from inside.
		probe.ProbeHandler = corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/echo", "get", fmt.Sprintf("http://127.0.0.1:%d/healthz", httpPort)}}}
		probe.PeriodSeconds = 2
	}
	env := []corev1.EnvVar{
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		{Name: "NODE_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
	}
	spec := corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(grace),
		Tolerations:                   o.Tolerations,
		Containers: []corev1.Container{{
			Name:            "echo",
			Image:           EchoImage,
			ImagePullPolicy: corev1.PullNever,
			Args:            args,
			Env:             env,
			Ports: []corev1.ContainerPort{
				{Name: "http", ContainerPort: EchoHTTPPort, Protocol: corev1.ProtocolTCP},
				{Name: "tcp-echo", ContainerPort: EchoTCPPort, Protocol: corev1.ProtocolTCP},
				{Name: "udp-echo", ContainerPort: EchoUDPPort, Protocol: corev1.ProtocolUDP},
			},
			ReadinessProbe: probe,
			Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{}},
		}},
	}
	if len(o.Nodes) > 0 {
		spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: o.Nodes}},
			}}},
		}}
		spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": o.Name}},
		}}
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: ns, Labels: lbls},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(o.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": o.Name}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbls}, Spec: spec},
		},
	}
	ctx := Context(t, 30*time.Second)
	d, err := tb.Client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create deployment %s/%s: %v", ns, o.Name, err)
	}
	return d
}

// WaitPodsReady waits until exactly n Pods match the selector and all are
// Running and Ready, and returns them.
func (tb *Testbed) WaitPodsReady(t testing.TB, ns string, selector map[string]string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	sel := labels.SelectorFromSet(selector).String()
	err := wait.PollUntilContextTimeout(Context(t, 3*time.Minute), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := tb.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, nil
		}
		pods = pods[:0]
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
				pods = append(pods, p)
			}
		}
		return len(pods) == n && len(l.Items) == n, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d ready pods %s in %s (have %d ready): %v", n, sel, ns, len(pods), err)
	}
	return pods
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// ServiceOption shapes a Service built by NewService.
type ServiceOption func(*corev1.Service)

// NewService builds a ClusterIP Service selecting app=<selectApp> on port 80 →
// the echo app's "http" port, changed by options.
func NewService(name, selectApp string, opts ...ServiceOption) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeClusterIP,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt(EchoHTTPPort)}},
		},
	}
	if selectApp != "" {
		s.Spec.Selector = map[string]string{"app": selectApp}
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

// WithPorts replaces the Service's ports.
func WithPorts(ports ...corev1.ServicePort) ServiceOption {
	return func(s *corev1.Service) { s.Spec.Ports = ports }
}

// WithNamedTargetPorts points every port at the echo container's named ports
// (http, tcp-echo, udp-echo).
func WithNamedTargetPorts() ServiceOption {
	return WithPorts(
		corev1.ServicePort{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")},
		corev1.ServicePort{Name: "tcp", Port: 9000, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("tcp-echo")},
		corev1.ServicePort{Name: "udp", Port: 9001, Protocol: corev1.ProtocolUDP, TargetPort: intstr.FromString("udp-echo")},
	)
}

// NodePortLocal makes it a NodePort Service with externalTrafficPolicy Local.
func NodePortLocal() ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}
}

// NodePort makes it a NodePort Service (cluster traffic policy).
func NodePort() ServiceOption {
	return func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }
}

// Headless sets clusterIP: None.
func Headless() ServiceOption {
	return func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }
}

// ExternalName makes it an ExternalName Service for host (no selector, no ports needed).
func ExternalName(host string) ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeExternalName
		s.Spec.ExternalName = host
		s.Spec.Selector = nil
	}
}

// SessionAffinityClientIP turns on ClientIP session affinity.
func SessionAffinityClientIP(timeoutSeconds int32) ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(timeoutSeconds)}}
	}
}

// IPFamilies sets the Service's ipFamilyPolicy and, when given, its
// ipFamilies in that order (the first is the primary: its ClusterIP is
// spec.clusterIP).
func IPFamilies(policy corev1.IPFamilyPolicy, families ...corev1.IPFamily) ServiceOption {
	return func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = &policy
		s.Spec.IPFamilies = families
	}
}

// InternalTrafficLocal sets internalTrafficPolicy: Local.
func InternalTrafficLocal() ServiceOption {
	return func(s *corev1.Service) {
		p := corev1.ServiceInternalTrafficPolicyLocal
		s.Spec.InternalTrafficPolicy = &p
	}
}

// CreateService creates the Service in ns (deleted with the namespace).
func (tb *Testbed) CreateService(t testing.TB, ns string, s *corev1.Service) *corev1.Service {
	t.Helper()
	s = s.DeepCopy()
	s.Namespace = ns
	ctx := Context(t, 2*time.Minute)
	// A loaded API server answers a write it could not finish in time with
	// a timeout, and may still have made it: try again, and take the
	// Service made by the timed-out attempt.
	for attempt := 0; ; attempt++ {
		out, err := tb.Client.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{})
		switch {
		case err == nil:
			return out
		case attempt > 0 && apierrors.IsAlreadyExists(err):
			if out, err = tb.Client.CoreV1().Services(ns).Get(ctx, s.Name, metav1.GetOptions{}); err == nil {
				return out
			}
		case attempt < 3 && (apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || apierrors.IsTooManyRequests(err)):
			time.Sleep(time.Second)
			continue
		}
		t.Fatalf("create service %s/%s: %v", ns, s.Name, err)
	}
}

// CreateManualEndpointSlice gives a selector-less Service endpoints by hand.
func (tb *Testbed) CreateManualEndpointSlice(t testing.TB, ns, service string, addrs []string, ports []discoveryv1.EndpointPort) *discoveryv1.EndpointSlice {
	t.Helper()
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: service + "-manual-", Namespace: ns,
			Labels: map[string]string{discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "svctrace-e2e"},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       ports,
	}
	// A slice holds one family: the addresses' (an IPv6-only testbed's Pods).
	if len(addrs) > 0 && strings.Contains(addrs[0], ":") {
		es.AddressType = discoveryv1.AddressTypeIPv6
	}
	for _, a := range addrs {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	out, err := tb.Client.DiscoveryV1().EndpointSlices(ns).Create(Context(t, 30*time.Second), es, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create endpointslice: %v", err)
	}
	return out
}

// WaitReadyEndpoints waits until the Service's EndpointSlices list exactly n
// ready endpoints.
func (tb *Testbed) WaitReadyEndpoints(t testing.TB, ns, service string, n int) {
	t.Helper()
	got := -1
	err := wait.PollUntilContextTimeout(Context(t, 2*time.Minute), 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := tb.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
		if err != nil {
			return false, nil
		}
		got = 0
		for _, es := range l.Items {
			for _, e := range es.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					got++
				}
			}
		}
		return got == n, nil
	})
	if err != nil {
		t.Fatalf("service %s/%s: want %d ready endpoints, have %d: %v", ns, service, n, got, err)
	}
}

// Eventually polls fn until it returns nil or the timeout passes, and returns the last error.
func Eventually(ctx context.Context, timeout, interval time.Duration, fn func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(ctx context.Context) (bool, error) {
		last = fn(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}
