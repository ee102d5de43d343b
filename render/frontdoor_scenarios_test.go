package render

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// The front door scenarios render a trace that started at a route or an
// Ingress: the frontdoor layer first, the gateway hop in the path.
func init() {
	scenarios = append(scenarios,
		scenario{name: "httproute-healthy", in: func() *input.Input { return withFrontdoor(baseInput(), httpRouteInput()) },
			opts: trace.Options{NoNode: true, From: gatewayClient()}},
		scenario{name: "httproute-not-accepted", in: func() *input.Input {
			fd := httpRouteInput()
			r := &fd.Routes[0]
			r.Spec.Hostnames = []gwv1.Hostname{"shop.example.org"}
			r.Status.Parents[0].Conditions = []metav1.Condition{
				condition("Accepted", false, "NoMatchingListenerHostname", "no matching listener hostname"),
				condition("ResolvedRefs", true, "ResolvedRefs", "")}
			return withFrontdoor(baseInput(), fd)
		}, opts: trace.Options{NoNode: true, From: gatewayClient()}},
		scenario{name: "ingress-tls-missing", in: func() *input.Input { return withFrontdoor(baseInput(), ingressInput()) },
			opts: trace.Options{NoNode: true}},
	)
}

func condition(t string, ok bool, reason, msg string) metav1.Condition {
	st := metav1.ConditionTrue
	if !ok {
		st = metav1.ConditionFalse
	}
	return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg}
}

func withFrontdoor(in *input.Input, fd *frontdoor.Input) *input.Input {
	fd.Services = map[string]*corev1.Service{"default/web": in.Service}
	in.Frontdoor = fd
	return in
}

func gatewayClient() *report.PolicyClient {
	p := pod("envoy-gw-7d9f", "10.244.1.9", "node-a")
	p.Labels = map[string]string{gwv1.GatewayNameLabelKey: "gw"}
	return report.PolicyClientFromPod(&p)
}

// httpRouteInput is default/store on Gateway default/gw (class eg), for
// shop.example.com, to web:80, accepted and resolved.
func httpRouteInput() *frontdoor.Input {
	all := gwv1.NamespacesFromAll
	port := gwv1.PortNumber(80)
	return &frontdoor.Input{
		Entry: frontdoor.Entry{Kind: frontdoor.KindHTTPRoute, Namespace: "default", Name: "store"},
		GatewayClasses: []gwv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "eg"},
			Spec:   gwv1.GatewayClassSpec{ControllerName: "gateway.envoyproxy.io/gatewayclass-controller"},
			Status: gwv1.GatewayClassStatus{Conditions: []metav1.Condition{condition("Accepted", true, "Accepted", "")}}}},
		Gateways: []gwv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default"},
			Spec: gwv1.GatewaySpec{GatewayClassName: "eg", Listeners: []gwv1.Listener{{Name: "http", Port: 80,
				Protocol: gwv1.HTTPProtocolType, Hostname: ptr(gwv1.Hostname("*.example.com")),
				AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}}}},
			Status: gwv1.GatewayStatus{Addresses: []gwv1.GatewayStatusAddress{{Value: "172.18.0.200"}},
				Conditions: []metav1.Condition{condition("Accepted", true, "Accepted", ""), condition("Programmed", true, "Programmed", "")}}}},
		Routes: []frontdoor.Route{{Kind: frontdoor.KindHTTPRoute, ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: "default"},
			Spec: frontdoor.RouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw"}}, Hostnames: []gwv1.Hostname{"shop.example.com"},
				Rules: []frontdoor.RouteRule{{BackendRefs: []gwv1.BackendRef{{BackendObjectReference: gwv1.BackendObjectReference{
					Name: "web", Port: &port}}}}}},
			Status: gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "gw"},
				ControllerName: "gateway.envoyproxy.io/gatewayclass-controller",
				Conditions:     []metav1.Condition{condition("Accepted", true, "Accepted", ""), condition("ResolvedRefs", true, "ResolvedRefs", "")}}}}}},
		DataPlane: &frontdoor.DataPlane{Selector: gwv1.GatewayNameLabelKey + "=gw", Namespace: "default",
			Source: "Gateway default/gw", Pods: []string{"default/envoy-gw-7d9f"}},
	}
}

// ingressInput is default/shop of class nginx, whose TLS Secret is missing.
func ingressInput() *frontdoor.Input {
	return &frontdoor.Input{
		Entry: frontdoor.Entry{Kind: frontdoor.KindIngress, Namespace: "default", Name: "shop"},
		Ingress: &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
			Spec: networkingv1.IngressSpec{IngressClassName: ptr("nginx"),
				TLS: []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
				Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
					HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/",
						Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
							Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}}},
			Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
				Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "172.18.0.201"}}}}},
		IngressClasses: []networkingv1.IngressClass{{ObjectMeta: metav1.ObjectMeta{Name: "nginx"},
			Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}},
		TLSSecrets: map[string]bool{"shop-tls": false},
		DataPlane:  &frontdoor.DataPlane{Source: "none"},
	}
}

// TestFrontdoorPathStartsAtGateway: the path picture of a route's trace
// draws the gateway between the client and DNS, and points at it when the
// front door fails.
func TestFrontdoorPathStartsAtGateway(t *testing.T) {
	for _, sc := range scenarios {
		if !strings.HasPrefix(sc.name, "httproute-") {
			continue
		}
		var buf bytes.Buffer
		if err := Text(&buf, sc.trace(), TextOptions{}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(buf.String(), "\n")
		var names string
		for _, l := range lines {
			if strings.Contains(l, "pod envoy-gw-7d9f") {
				names = l
				break
			}
		}
		if !strings.Contains(names, "pod envoy-gw-7d9f ─▶ gateway") || strings.Index(names, "gateway") > strings.Index(names, "DNS") {
			t.Errorf("%s: path %q does not go client → gateway → DNS", sc.name, names)
		}
	}
}

// TestPrintListJSON: several backend traces are one ServiceTraceList, each
// item a whole ServiceTrace.
func TestPrintListJSON(t *testing.T) {
	var tr []*report.ServiceTrace
	for _, sc := range scenarios {
		if sc.name == "httproute-healthy" || sc.name == "httproute-not-accepted" {
			tr = append(tr, sc.trace())
		}
	}
	var buf bytes.Buffer
	if err := PrintList(&buf, tr, FormatJSON, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "list/httproute.json", buf.Bytes())
	if err := PrintList(&buf, tr, FormatSVG, TextOptions{}); err == nil {
		t.Error("-o svg of two traces did not fail")
	}
}

// TestListGoldenMatchesSchema validates the ServiceTraceList golden against
// its schema, whose items are ServiceTraces.
func TestListGoldenMatchesSchema(t *testing.T) {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	for _, name := range []string{"servicetrace.v1alpha1.json", "servicetracelist.v1alpha1.json"} {
		f, err := os.Open(filepath.Join("../docs/schema", name))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.AddResource("https://svctrace.dev/schema/"+name, doc); err != nil {
			t.Fatal(err)
		}
	}
	sch, err := c.Compile("https://svctrace.dev/schema/servicetracelist.v1alpha1.json")
	if err != nil {
		t.Fatal(err)
	}
	validateJSONFile(t, sch, "testdata/list/httproute.json")
}
