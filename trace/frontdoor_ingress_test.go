package trace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func ingressClass(name string, isDefault bool) *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
	if isDefault {
		c.Annotations = map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}
	}
	return c
}

// ingress is default/shop of class nginx: shop.example.com/ to web's port
// http, TLS from Secret shop-tls, published at 172.18.0.201.
func ingress(mut ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	pathType := networkingv1.PathTypePrefix
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: "default"},
		Spec: networkingv1.IngressSpec{
			IngressClassName: ptr("nginx"),
			TLS:              []networkingv1.IngressTLS{{Hosts: []string{"shop.example.com"}, SecretName: "shop-tls"}},
			Rules: []networkingv1.IngressRule{{Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{
				HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &pathType,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web",
						Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}},
		},
		Status: networkingv1.IngressStatus{LoadBalancer: networkingv1.IngressLoadBalancerStatus{
			Ingress: []networkingv1.IngressLoadBalancerIngress{{IP: "172.18.0.201"}}}},
	}
	for _, m := range mut {
		m(ing)
	}
	return ing
}

func ingressCase(core ...runtime.Object) frontdoorCase {
	return frontdoorCase{entry: frontdoor.Entry{Kind: frontdoor.KindIngress, Namespace: "default", Name: "shop"},
		core: append(healthy(), core...), secrets: []string{"default/shop-tls"}}
}

// TestFrontdoorIngress: an Ingress's class, backends and TLS Secrets, each
// fault on the frontdoor layer, a healthy one with no failure.
func TestFrontdoorIngress(t *testing.T) {
	tests := []struct {
		name   string
		c      frontdoorCase
		fail   []string
		has    string
		quote  string
		status report.Status
	}{
		{name: "healthy", c: ingressCase(ingressClass("nginx", false), ingress()),
			has: report.CodeINGBackendResolved, quote: "path shop.example.com/ sends to Service default/web port http",
			status: report.StatusWarn}, // GW022: an IngressClass names no Pods
		{name: "missing IngressClass", c: ingressCase(ingressClass("traefik", true), ingress()),
			fail: []string{report.CodeINGClassNotFound}, has: report.CodeINGClassNotFound, quote: "names IngressClass nginx, which does not exist",
			status: report.StatusFail},
		{name: "no class and no default", c: ingressCase(ingressClass("nginx", false), ingress(func(i *networkingv1.Ingress) { i.Spec.IngressClassName = nil })),
			fail: []string{report.CodeINGNoClass}, has: report.CodeINGNoClass, quote: "no IngressClass is marked default",
			status: report.StatusFail},
		{name: "the default class", c: ingressCase(ingressClass("nginx", true), ingress(func(i *networkingv1.Ingress) { i.Spec.IngressClassName = nil })),
			has: report.CodeINGClass, quote: "the cluster's default IngressClass", status: report.StatusWarn},
		{name: "unknown service port name", c: ingressCase(ingressClass("nginx", false), ingress(func(i *networkingv1.Ingress) {
			i.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name = "https"
		})),
			fail: []string{report.CodeINGBackendPort}, has: report.CodeINGBackendPort, quote: "port https of Service default/web, which exposes only http 80/TCP",
			status: report.StatusFail},
		{name: "missing TLS secret", c: func() frontdoorCase {
			c := ingressCase(ingressClass("nginx", false), ingress())
			c.secrets = nil
			return c
		}(),
			fail: []string{report.CodeINGTLSSecretMissing}, has: report.CodeINGTLSSecretMissing, quote: "Secret shop-tls, which does not exist",
			status: report.StatusFail},
		{name: "missing backend Service", c: ingressCase(ingressClass("nginx", false), ingress(func(i *networkingv1.Ingress) {
			i.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "fallback",
				Port: networkingv1.ServiceBackendPort{Number: 80}}}
		})),
			fail: []string{report.CodeINGBackendNotFound}, has: report.CodeINGBackendNotFound, quote: "the default backend of Ingress default/shop sends to Service default/fallback",
			status: report.StatusFail},
		{name: "no address", c: ingressCase(ingressClass("nginx", false), ingress(func(i *networkingv1.Ingress) { i.Status = networkingv1.IngressStatus{} })),
			has: report.CodeINGNoAddress, quote: "no status.loadBalancer address", status: report.StatusWarn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fail := tt.fail
			if fail == nil {
				fail = []string{}
			}
			requireFrontdoor(t, tt.c, tt.status, fail, tt.has, tt.quote)
		})
	}
}

// TestFrontdoorIngressGatewayPods: with --gateway-pods the controller's Pods
// are found in any namespace and become the client; a NetworkPolicy that
// admits only the frontend then fails the policy layer naming that Pod.
func TestFrontdoorIngressGatewayPods(t *testing.T) {
	ctrl := pod("ingress-nginx-controller-5c8d", "ingress-nginx", "10.244.2.7", "node-b")
	ctrl.Namespace = "ingress-nginx"
	ctrl.Labels = map[string]string{"app.kubernetes.io/name": "ingress-nginx"}
	np := allowFromFrontend()
	c := ingressCase(ingressClass("nginx", false), ingress(), ctrl, &np,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ingress-nginx"}})
	c.gatewayPods = "app.kubernetes.io/name=ingress-nginx"
	_, trs := traceFrontdoor(t, c)
	tr := trs[0]
	if l := tr.Layer(report.LayerFrontdoor); l.Status != report.StatusPass {
		t.Errorf("frontdoor %s: %+v", l.Status, l.Checks)
	}
	if tr.Metadata.Client != "pod/ingress-nginx/ingress-nginx-controller-5c8d" {
		t.Errorf("client %q", tr.Metadata.Client)
	}
	v := tr.Verdict
	if v.FirstFailingLayer != report.LayerPolicy || v.Code != report.CodeNPDenied || !strings.Contains(v.LikelyCause, "ingress-nginx-controller-5c8d") {
		t.Errorf("verdict %+v", v)
	}
}

// TestFrontdoorInputTrimmed: what a saved trace keeps of the front door has
// no managed fields and no last-applied copy, like the rest of input.json.
func TestFrontdoorInputTrimmed(t *testing.T) {
	ing := ingress(func(i *networkingv1.Ingress) {
		i.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":{}}`, "keep": "me"}
		i.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	})
	fd, _ := traceFrontdoor(t, ingressCase(ingressClass("nginx", false), ing))
	if a := fd.Ingress.Annotations; a[corev1.LastAppliedConfigAnnotation] != "" || a["keep"] != "me" || fd.Ingress.ManagedFields != nil {
		t.Errorf("ingress metadata %+v", fd.Ingress.ObjectMeta)
	}
	route := httpRoute(func(r *frontdoor.Route) {
		r.Annotations = map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":{}}`}
	})
	fd, _ = traceFrontdoor(t, frontdoorCase{entry: httpRouteEntry(), core: healthy(),
		gateway: []any{gatewayClass("eg", envoyController, true), gateway(), route}})
	if fd.Routes[0].Annotations[corev1.LastAppliedConfigAnnotation] != "" {
		t.Errorf("route kept its last-applied copy")
	}
}
