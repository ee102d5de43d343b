package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakegateway"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func TestParseTargetArg(t *testing.T) {
	tests := []struct {
		arg, kind, name string
		usage           bool
	}{
		{arg: "web", name: "web"},
		{arg: "svc/web", name: "web"},
		{arg: "services/web", name: "web"},
		{arg: "httproute/store", kind: "HTTPRoute", name: "store"},
		{arg: "HTTPRoutes/store", kind: "HTTPRoute", name: "store"},
		{arg: "httproutes.gateway.networking.k8s.io/store", kind: "HTTPRoute", name: "store"},
		{arg: "httproutes.v1.gateway.networking.k8s.io/store", kind: "HTTPRoute", name: "store"},
		{arg: "grpcroute/api", kind: "GRPCRoute", name: "api"},
		{arg: "tlsroute/tls", kind: "TLSRoute", name: "tls"},
		{arg: "tcproute/db", kind: "TCPRoute", name: "db"},
		{arg: "gateway/gw", kind: "Gateway", name: "gw"},
		{arg: "gtw/gw", kind: "Gateway", name: "gw"},
		{arg: "ingress/shop", kind: "Ingress", name: "shop"},
		{arg: "ing/shop.v2", kind: "Ingress", name: "shop.v2"},
		{arg: "ingresses.networking.k8s.io/shop", kind: "Ingress", name: "shop"},
		{arg: "deploy/web", usage: true},
		{arg: "httproute/", usage: true},
		{arg: "httproute/Bad_Name", usage: true},
		{arg: "svc/web.v2", usage: true},
	}
	for _, tt := range tests {
		kind, name, err := ParseTargetArg(tt.arg)
		if tt.usage {
			if ExitCode(err) != ExitUsage {
				t.Errorf("%s: err %v, want a usage error", tt.arg, err)
			}
			continue
		}
		if err != nil || kind != tt.kind || name != tt.name {
			t.Errorf("%s: (%q, %q, %v), want (%q, %q)", tt.arg, kind, name, err, tt.kind, tt.name)
		}
	}
}

// frontdoorCmd is testCmd with a front door reader over fakes: the core
// objects, the Gateway API objects, the Secrets that exist.
func frontdoorCmd(core []runtime.Object, secrets []string, gateway ...any) (*bytes.Buffer, *bytes.Buffer, func(args ...string) error) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	f := NewTraceFlags()
	f.deps.getter = testGetter()
	client := fake.NewClientset(core...)
	f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil }
	f.deps.frontdoor = func(genericclioptions.RESTClientGetter, kubernetes.Interface) (*frontdoor.Reader, error) {
		return fakegateway.Reader(client, fakegateway.ServedV1, secrets, gateway...), nil
	}
	f.deps.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	f.deps.getenv = func(string) string { return "" }
	cmd := newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3", Commit: "abc", Date: "2026-01-01"}, f)
	return out, errOut, func(args ...string) error {
		cmd.SetArgs(args)
		return cmd.ExecuteContext(context.Background())
	}
}

func accepted(t string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t}
}

// gatewayObjects are class eg, Gateway default/gw (HTTP on 80, any
// hostname, routes from any namespace) and HTTPRoute default/store sending
// to the given Services on port 80, all accepted.
func gatewayObjects(backends ...string) []any {
	all := gwv1.NamespacesFromAll
	route := &frontdoor.Route{Kind: frontdoor.KindHTTPRoute, ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: "default"},
		Spec: frontdoor.RouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}, Rules: []frontdoor.RouteRule{{}}},
		Status: gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "gw"},
			ControllerName: "example.com/gateway", Conditions: []metav1.Condition{accepted("Accepted"), accepted("ResolvedRefs")}}}}}
	for _, b := range backends {
		route.Spec.Rules[0].BackendRefs = append(route.Spec.Rules[0].BackendRefs, gwv1.BackendRef{
			BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(b), Port: ptr(gwv1.PortNumber(80))}})
	}
	return []any{
		&gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: "eg"}, Spec: gwv1.GatewayClassSpec{ControllerName: "example.com/gateway"},
			Status: gwv1.GatewayClassStatus{Conditions: []metav1.Condition{accepted("Accepted")}}},
		&gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default"},
			Spec: gwv1.GatewaySpec{GatewayClassName: "eg", Listeners: []gwv1.Listener{{Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType,
				AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}}}},
			Status: gwv1.GatewayStatus{Addresses: []gwv1.GatewayStatusAddress{{Value: "172.18.0.200"}},
				Conditions: []metav1.Condition{accepted("Accepted"), accepted("Programmed")}}},
		route,
	}
}

// gatewayPodObject is the Gateway's data-plane Pod (GEP-1762's label).
func gatewayPodObject() *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gw-envoy-1", Namespace: "default",
		Labels: map[string]string{gwv1.GatewayNameLabelKey: "gw"}},
		Spec:   corev1.PodSpec{NodeName: "node-a"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.9"}}
}

// TestFrontdoorCommand: httproute/NAME traces the route's backend from the
// gateway's Pod; a policy that keeps that Pod out exits 3 naming it.
func TestFrontdoorCommand(t *testing.T) {
	out, errOut, run := frontdoorCmd(append(objects(true), gatewayPodObject()), nil, gatewayObjects("web")...)
	err := run("httproute/store", "--no-node", "-o", "json")
	if code := ExitCode(err); code != ExitOK {
		t.Fatalf("exit %d (%v)\n%s\n%s", code, err, out, errOut)
	}
	var tr report.ServiceTrace
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatal(err)
	}
	if tr.Kind != report.Kind || tr.Frontdoor == nil || tr.Layers[0].Name != report.LayerFrontdoor || tr.Metadata.Client != "pod/default/gw-envoy-1" {
		t.Fatalf("trace %+v", tr)
	}
	if !strings.Contains(errOut.String(), "from the gateway's Pod default/gw-envoy-1 (--from overrides)") {
		t.Errorf("stderr %q does not say which Pod is the client", errOut)
	}

	deny := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web-from-frontend", Namespace: "default"},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}}}}}}
	out, _, run = frontdoorCmd(append(objects(true), gatewayPodObject(), deny), nil, gatewayObjects("web")...)
	err = run("httproute/store", "--no-node", "--color", "never")
	if code := ExitCode(err); code != ExitLayerFailed {
		t.Fatalf("exit %d (%v)\n%s", code, err, out)
	}
	if !strings.Contains(out.String(), "fails at the policy layer") || !strings.Contains(out.String(), "gw-envoy-1") {
		t.Errorf("output does not name the policy and the gateway Pod:\n%s", out)
	}
}

// TestFrontdoorCommandList: a route to two Services prints a
// ServiceTraceList; --save and -o svg refuse it (one trace each).
func TestFrontdoorCommandList(t *testing.T) {
	canary := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web-canary", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.21", ClusterIPs: []string{"10.96.0.21"},
			Selector: map[string]string{"app": "web-canary"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	core := append(objects(true), canary)
	out, errOut, run := frontdoorCmd(core, nil, gatewayObjects("web", "web-canary")...)
	err := run("httproute/store", "--no-node", "-o", "json")
	// web-canary selects no Pod: its trace fails, so the command exits 3.
	if code := ExitCode(err); code != ExitLayerFailed {
		t.Fatalf("exit %d (%v)\n%s\n%s", code, err, out, errOut)
	}
	var list report.ServiceTraceList
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != report.ListKind || len(list.Items) != 2 || list.Items[0].Service.Name != "web" || list.Items[1].Service.Name != "web-canary" {
		t.Fatalf("list %s %d items", list.Kind, len(list.Items))
	}
	if list.Items[0].Verdict.Status != report.StatusWarn && list.Items[0].Verdict.Status != report.StatusPass {
		t.Errorf("web: %+v", list.Items[0].Verdict)
	}
	for _, args := range [][]string{{"-o", "svg"}, {"--save", t.TempDir() + "/b"}} {
		_, _, run := frontdoorCmd(core, nil, gatewayObjects("web", "web-canary")...)
		if err := run(append([]string{"httproute/store", "--no-node"}, args...)...); ExitCode(err) != ExitUsage {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
}

// TestFrontdoorCommandErrors: a front door that does not exist, a kind the
// cluster does not serve, --watch, a bad --gateway-pods.
func TestFrontdoorCommandErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"httproute/nosuch", "--no-node"}, ExitError, "httproute nosuch not found in namespace default"},
		{[]string{"ingress/nosuch", "--no-node"}, ExitError, "ingress nosuch not found in namespace default"},
		{[]string{"httproute/store", "--watch"}, ExitUsage, "--watch follows one Service"},
		{[]string{"httproute/store", "--gateway-pods", "a=(b"}, ExitUsage, "invalid --gateway-pods"},
	}
	for _, tt := range tests {
		_, _, run := frontdoorCmd(objects(true), nil, gatewayObjects("web")...)
		err := run(tt.args...)
		if ExitCode(err) != tt.code || err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%v: exit %d, err %v; want %d with %q", tt.args, ExitCode(err), err, tt.code, tt.msg)
		}
	}
}

// TestFrontdoorCommandIngress: ingress/NAME with --gateway-pods finds the
// controller's Pod in another namespace and traces from it.
func TestFrontdoorCommandIngress(t *testing.T) {
	ctrl := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "ingress-nginx-controller-1", Namespace: "ingress-nginx",
		Labels: map[string]string{"app.kubernetes.io/name": "ingress-nginx"}},
		Spec: corev1.PodSpec{NodeName: "node-a"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: networkingv1.IngressSpec{IngressClassName: ptr("nginx"), DefaultBackend: &networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}
	class := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx"}, Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	out, errOut, run := frontdoorCmd(append(objects(true), ctrl, ing, class), nil)
	err := run("ingress/shop", "--no-node", "--gateway-pods", "app.kubernetes.io/name=ingress-nginx", "--color", "never")
	if code := ExitCode(err); code != ExitOK {
		t.Fatalf("exit %d (%v)\n%s\n%s", code, err, out, errOut)
	}
	for _, want := range []string{"default/web via Ingress default/shop", "pod ingress-nginx-controller-1 -> ingress", "frontdoor"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestFrontdoorCompletion: after TYPE/ the shell gets that kind's names.
func TestFrontdoorCompletion(t *testing.T) {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"}}
	for _, tt := range []struct{ typed, want string }{
		{"httproute/st", "httproute/store"},
		{"gateway/", "gateway/gw"},
		{"ing/s", "ing/shop"},
		{"svc/w", "svc/web"},
	} {
		out, _, run := frontdoorCmd(append(objects(true), ing), nil, gatewayObjects("web")...)
		if err := run("__complete", tt.typed); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tt.want+"\n") {
			t.Errorf("%s: completions\n%s\nlack %s", tt.typed, out, tt.want)
		}
	}
}
