package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func ptr[T any](v T) *T { return &v }

// testGetter is an in-memory kubeconfig (context "test-ctx", namespace
// default): no kubeconfig of the machine is read.
func testGetter() *genericclioptions.TestConfigFlags {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["test"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["test-ctx"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test", Namespace: "default"}
	cfg.CurrentContext = "test-ctx"
	cc := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{})
	return genericclioptions.NewTestConfigFlags().WithClientConfig(cc).WithNamespace("default")
}

func objects(ready bool) []runtime.Object {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5", PodIPs: []corev1.PodIP{{IP: "10.244.1.5"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}}}}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: ptr("node-a"),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr(ready)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"}}}}
	dns := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: "kube-system"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10"}}
	dnsSlice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "kube-dns-x", Namespace: "kube-system",
		Labels: map[string]string{discoveryv1.LabelServiceName: "kube-dns"}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.2"}}}}
	return []runtime.Object{svc, pod, slice, dns, dnsSlice,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system"}}}
}

// testCmd builds the root command on a fake clientset and test streams.
func testCmd(objs []runtime.Object) (*bytes.Buffer, *bytes.Buffer, func(args ...string) error) {
	return testCmdWith(objs, nil)
}

// testCmdWith is testCmd with reactors (react may be nil) on the clientset.
func testCmdWith(objs []runtime.Object, react func(*fake.Clientset)) (*bytes.Buffer, *bytes.Buffer, func(args ...string) error) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	f := NewTraceFlags()
	f.deps.getter = testGetter()
	client := fake.NewClientset(objs...)
	if react != nil {
		react(client)
	}
	f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil }
	f.deps.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	f.deps.getenv = func(string) string { return "" }
	cmd := newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3", Commit: "abc", Date: "2026-01-01"}, f)
	return out, errOut, func(args ...string) error {
		cmd.SetArgs(args)
		return cmd.ExecuteContext(context.Background())
	}
}

func TestArgumentForms(t *testing.T) {
	for _, arg := range []string{"web", "svc/web", "service/web", "services/web"} {
		t.Run(arg, func(t *testing.T) {
			out, _, run := testCmd(objects(true))
			err := run(arg, "--no-node")
			if code := ExitCode(err); code != ExitOK {
				t.Fatalf("exit %d (%v)\n%s", code, err, out)
			}
			if !strings.Contains(out.String(), "default/web") || !strings.Contains(out.String(), "PASS") {
				t.Fatalf("output:\n%s", out)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := [][]string{
		{"pod/web"},
		{"deploy/web"},
		{"svc/"},
		{"Web_1"},
		{},
		{"web", "other"},
		{"web", "--bogus"},
		{"web", "-o", "table"},
		{"web", "--color", "sometimes"},
		{"web", "--timeout", "0s"},
		{"web", "--timeout", "soon"},
		{"web", "--cluster-domain", "Not Valid"},
		{"web", "--port", "nosuch"},
		{"web", "--port", "81", "--no-node"},
	}
	for _, args := range tests {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			_, _, run := testCmd(objects(true))
			err := run(args...)
			if code := ExitCode(err); code != ExitUsage {
				t.Fatalf("exit %d (%v), want %d", code, err, ExitUsage)
			}
		})
	}
}

// TestPortNotInServiceListsPorts: the usage error names the Service's
// ports, and no collector Pod was created for it.
func TestPortNotInServiceListsPorts(t *testing.T) {
	out, _, run := testCmd(objects(true))
	err := run("web", "--port", "nosuch")
	if code := ExitCode(err); code != ExitUsage || !strings.Contains(err.Error(), "its ports are: http 80/TCP") {
		t.Fatalf("exit %d (%v), want %d listing http 80/TCP", code, err, ExitUsage)
	}
	if out.Len() != 0 {
		t.Fatalf("a usage error printed a result:\n%s", out)
	}
}

func TestExitThreeOnFailingLayer(t *testing.T) {
	out, _, run := testCmd(objects(false))
	err := run("web", "--no-node")
	if code := ExitCode(err); code != ExitLayerFailed {
		t.Fatalf("exit %d (%v), want 3", code, err)
	}
	if !Silent(err) {
		t.Error("a failed layer should not print an extra error line")
	}
	if !strings.Contains(out.String(), "EPS003") {
		t.Fatalf("output lacks EPS003:\n%s", out)
	}
}

func TestNotFoundExitsThreeWithClosestNames(t *testing.T) {
	out, _, run := testCmd(objects(true))
	err := run("wbe", "-o", "json")
	if ExitCode(err) != ExitLayerFailed {
		t.Fatalf("exit %d (%v)", ExitCode(err), err)
	}
	var tr report.ServiceTrace
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Verdict.FirstFailingLayer != report.LayerService || !strings.Contains(tr.Verdict.LikelyCause, "web") {
		t.Fatalf("verdict %+v", tr.Verdict)
	}
}

func TestJSONParsesBack(t *testing.T) {
	out, _, run := testCmd(objects(true))
	if err := run("web", "-o", "json", "--no-node"); err != nil {
		t.Fatal(err)
	}
	var tr report.ServiceTrace
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if tr.APIVersion != report.APIVersion || tr.Kind != report.Kind || tr.Metadata.SvctraceVersion != "v1.2.3" {
		t.Fatalf("header %+v %+v", tr.APIVersion, tr.Metadata)
	}
	if len(tr.Layers) < 6 || tr.Layer(report.LayerDatapath).Reason != report.ReasonNoNode {
		t.Fatalf("layers %+v", tr.Layers)
	}
}

func TestYAMLAndPortFilter(t *testing.T) {
	out, _, run := testCmd(objects(true))
	if err := run("web", "-o", "yaml", "--port", "http", "--no-node"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kind: ServiceTrace") || !strings.Contains(out.String(), "port: http") {
		t.Fatalf("yaml:\n%s", out)
	}
	if !strings.Contains(out.String(), report.ReasonNoNode) {
		t.Fatalf("node layers should say --no-node:\n%s", out)
	}
}

func TestTimeout(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	client := fake.NewClientset(objects(true)...)
	o := &TraceOptions{Client: client, Namespace: "default", ServiceName: "web", Timeout: time.Nanosecond, IOStreams: streams}
	time.Sleep(time.Millisecond)
	err := o.Run(context.Background())
	if err == nil || ExitCode(err) != ExitError || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err %v", err)
	}
}

func TestInterruptExitsOne(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	client := fake.NewClientset(objects(true)...)
	o := &TraceOptions{Client: client, Namespace: "default", ServiceName: "web", Timeout: time.Minute, IOStreams: streams}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := o.Run(ctx)
	if ExitCode(err) != ExitError || !strings.Contains(fmt.Sprint(err), "interrupted") {
		t.Fatalf("err %v", err)
	}
}

func TestClientErrorExitsOne(t *testing.T) {
	streams, _, _, _ := genericiooptions.NewTestIOStreams()
	f := NewTraceFlags()
	f.deps.getter = testGetter()
	f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) {
		return nil, errors.New("no kubeconfig")
	}
	cmd := newCmdSvctrace(streams, BuildInfo{}, f)
	cmd.SetArgs([]string{"web"})
	if err := cmd.Execute(); ExitCode(err) != ExitError {
		t.Fatalf("exit %d (%v)", ExitCode(err), err)
	}
}

func TestVersion(t *testing.T) {
	out, _, run := testCmd(nil)
	if err := run("version"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"v1.2.3", "abc", "2026-01-01", "ghcr.io/svctrace/svctrace-collector:v1.2.3"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	if DefaultCollectorImage("dev") != DevCollectorImage || DefaultCollectorImage("") != DevCollectorImage {
		t.Error("dev builds must use the testbed image")
	}
}

func TestHelpSaysKubectlSvctrace(t *testing.T) {
	out, _, run := testCmd(nil)
	if err := run("--help"); err != nil {
		t.Fatal(err)
	}
	help := out.String()
	for _, want := range []string{"kubectl svctrace SERVICE", "Exit codes:", "  # Trace the Service web", "--no-node", "--kubeconfig", "--context"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if strings.Contains(help, "kubectl-svctrace ") {
		t.Error("help names the binary instead of kubectl svctrace")
	}
}

func TestCompletion(t *testing.T) {
	out, _, run := testCmd(objects(true))
	if err := run("__complete", "svc/w"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "svc/web") {
		t.Fatalf("service completion:\n%s", out)
	}
	out, _, run = testCmd(objects(true))
	if err := run("__complete", "web", "-n", "kube"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "kube-system") || strings.Contains(out.String(), "default\n") {
		t.Fatalf("namespace completion:\n%s", out)
	}
}

func TestCompleteNodeNames(t *testing.T) {
	f := NewTraceFlags()
	f.deps.getter = testGetter()
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1"}})
	f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil }
	got, _ := CompleteNodeNames(f)(nil, nil, "node")
	if len(got) != 1 || got[0] != "node-a" {
		t.Fatalf("got %v", got)
	}
}

// TestWideAndSVG: the default text is concise, -o wide adds every passing
// check's evidence, -o svg writes the picture.
func TestWideAndSVG(t *testing.T) {
	text := func(args ...string) string {
		out, _, run := testCmd(objects(true))
		if err := run(append([]string{"web", "--no-node", "--color", "never"}, args...)...); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	concise, wide, svg := text(), text("-o", "wide"), text("-o", "svg")
	if !strings.Contains(concise, "any Pod") || !strings.Contains(concise, "checks passed") {
		t.Errorf("default text lacks the path or the one-line layers:\n%s", concise)
	}
	// A passing check's evidence (the expected DNS name) only in -o wide.
	if strings.Contains(concise, "name: web.default.svc.cluster.local") || !strings.Contains(wide, "name: web.default.svc.cluster.local") {
		t.Errorf("evidence of passing checks: concise %v, wide %v", strings.Contains(concise, "name: web."), strings.Contains(wide, "name: web."))
	}
	if strings.Count(wide, "\n") <= strings.Count(concise, "\n") {
		t.Errorf("-o wide (%d lines) is not longer than the default (%d)", strings.Count(wide, "\n"), strings.Count(concise, "\n"))
	}
	if !strings.HasPrefix(svg, "<?xml") || !strings.Contains(svg, `data-hop="dns"`) {
		t.Errorf("-o svg:\n%.300s", svg)
	}
}
