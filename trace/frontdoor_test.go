package trace

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakegateway"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

const (
	envoyController = "gateway.envoyproxy.io/gatewayclass-controller"
	gatewayPodName  = "envoy-gw-7d9f"
)

func cond(t string, ok bool, reason, msg string) metav1.Condition {
	st := metav1.ConditionTrue
	if !ok {
		st = metav1.ConditionFalse
	}
	return metav1.Condition{Type: t, Status: st, Reason: reason, Message: msg}
}

func gatewayClass(name, controller string, accepted bool) *gwv1.GatewayClass {
	return &gwv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:   gwv1.GatewayClassSpec{ControllerName: gwv1.GatewayController(controller)},
		Status: gwv1.GatewayClassStatus{Conditions: []metav1.Condition{cond("Accepted", accepted, "Accepted", "")}}}
}

// gateway is default/gw of class eg: one HTTP listener on port 80 for
// *.example.com that admits routes from every namespace, programmed, with
// an address.
func gateway(mut ...func(*gwv1.Gateway)) *gwv1.Gateway {
	all := gwv1.NamespacesFromAll
	gw := &gwv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "default"},
		Spec: gwv1.GatewaySpec{GatewayClassName: "eg", Listeners: []gwv1.Listener{{
			Name: "http", Port: 80, Protocol: gwv1.HTTPProtocolType, Hostname: ptr(gwv1.Hostname("*.example.com")),
			AllowedRoutes: &gwv1.AllowedRoutes{Namespaces: &gwv1.RouteNamespaces{From: &all}}}}},
		Status: gwv1.GatewayStatus{
			Addresses:  []gwv1.GatewayStatusAddress{{Value: "172.18.0.200"}},
			Conditions: []metav1.Condition{cond("Accepted", true, "Accepted", ""), cond("Programmed", true, "Programmed", "")},
			Listeners: []gwv1.ListenerStatus{{Name: "http", AttachedRoutes: 1, Conditions: []metav1.Condition{
				cond("Accepted", true, "Accepted", ""), cond("Programmed", true, "Programmed", ""), cond("ResolvedRefs", true, "ResolvedRefs", "")}}}}}
	for _, m := range mut {
		m(gw)
	}
	return gw
}

// httpRoute is default/store for shop.example.com on gw, sending to web:80,
// accepted by Envoy Gateway.
func httpRoute(mut ...func(*frontdoor.Route)) *frontdoor.Route {
	r := &frontdoor.Route{Kind: frontdoor.KindHTTPRoute,
		ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: "default", Generation: 1},
		Spec: frontdoor.RouteSpec{
			ParentRefs: []gwv1.ParentReference{{Name: "gw"}},
			Hostnames:  []gwv1.Hostname{"shop.example.com"},
			Rules:      []frontdoor.RouteRule{{BackendRefs: []gwv1.BackendRef{backendRef("", "web", 80)}}},
		},
		Status: gwv1.RouteStatus{Parents: []gwv1.RouteParentStatus{{ParentRef: gwv1.ParentReference{Name: "gw"},
			ControllerName: envoyController,
			Conditions:     []metav1.Condition{cond("Accepted", true, "Accepted", ""), cond("ResolvedRefs", true, "ResolvedRefs", "")}}}},
	}
	for _, m := range mut {
		m(r)
	}
	return r
}

func backendRef(ns, name string, port int32) gwv1.BackendRef {
	b := gwv1.BackendRef{BackendObjectReference: gwv1.BackendObjectReference{Name: gwv1.ObjectName(name), Port: ptr(gwv1.PortNumber(port))}}
	if ns != "" {
		b.Namespace = ptr(gwv1.Namespace(ns))
	}
	return b
}

// routeStatus replaces the route's conditions for gw.
func routeStatus(conds ...metav1.Condition) func(*frontdoor.Route) {
	return func(r *frontdoor.Route) { r.Status.Parents[0].Conditions = conds }
}

// gatewayPod is the gateway's data-plane Pod, labelled as GEP-1762 asks.
func gatewayPod() *corev1.Pod {
	p := pod(gatewayPodName, "envoy", "10.244.1.9", "node-a")
	p.Labels = map[string]string{gwv1.GatewayNameLabelKey: "gw", "app.kubernetes.io/name": "envoy"}
	return p
}

type frontdoorCase struct {
	entry   frontdoor.Entry
	core    []runtime.Object
	gateway []any
	secrets []string
	served  map[string]string
	// gatewayPods is --gateway-pods.
	gatewayPods string
}

// traceFrontdoor reads the front door, traces each backend Service from the
// gateway's first data-plane Pod (as the command does when --from is not
// given) with --no-node, and returns one trace per backend.
func traceFrontdoor(t *testing.T, c frontdoorCase) (*frontdoor.Input, []*report.ServiceTrace) {
	t.Helper()
	if c.served == nil {
		c.served = fakegateway.ServedV1
	}
	client := fake.NewClientset(c.core...)
	rd := fakegateway.Reader(client, c.served, c.secrets, c.gateway...)
	fd, err := rd.Read(context.Background(), c.entry, frontdoor.ReadOptions{FindDataPlane: true, GatewayPods: c.gatewayPods})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Now: fixedNow, NoNode: true, Version: "test"}
	if dp := fd.DataPlane; dp != nil && len(dp.Pods) > 0 {
		ns, name, _ := strings.Cut(dp.Pods[0], "/")
		p, err := client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		opts.From = report.PolicyClientFromPod(p)
	}
	backends := frontdoor.Services(fd)
	if len(backends) == 0 {
		backends = []string{""}
	}
	var out []*report.ServiceTrace
	for _, b := range backends {
		in, nr, bopts, err := CollectBackend(context.Background(), client, fd, b, opts)
		if err != nil {
			t.Fatal(err)
		}
		tr := Assemble(in, nr, bopts)
		assertFrontdoorCatalogued(t, tr)
		out = append(out, tr)
	}
	return fd, out
}

// assertFrontdoorCatalogued: the frontdoor layer comes first, then the
// layers of any trace, and every check is catalogued on its own layer with
// its placeholders filled.
func assertFrontdoorCatalogued(t *testing.T, tr *report.ServiceTrace) {
	t.Helper()
	if len(tr.Layers) == 0 || tr.Layers[0].Name != report.LayerFrontdoor {
		t.Fatalf("first layer is not frontdoor: %+v", tr.Layers)
	}
	rest := &report.ServiceTrace{Layers: tr.Layers[1:]}
	assertCatalogued(t, rest)
	for _, c := range tr.Layers[0].Checks {
		spec, ok := report.Catalog[c.Code]
		if !ok || (spec.Layer != "" && spec.Layer != report.LayerFrontdoor) {
			t.Errorf("check %s does not belong on the frontdoor layer", c.Code)
		}
		for _, s := range []string{c.Message, c.NextStep} {
			if m := placeholder.FindString(s); m != "" {
				t.Errorf("check %s left placeholder %s in %q", c.Code, m, s)
			}
		}
	}
}

// frontdoorCodes is the codes of a layer's checks with the given status.
func frontdoorCodes(tr *report.ServiceTrace, layer report.LayerName, status report.Status) []string {
	var out []string
	for _, c := range tr.Layer(layer).Checks {
		if c.Status == status {
			out = append(out, c.Code)
		}
	}
	return out
}

func findCheck(tr *report.ServiceTrace, layer report.LayerName, code string) *report.Check {
	for i, c := range tr.Layer(layer).Checks {
		if c.Code == code {
			return &tr.Layer(layer).Checks[i]
		}
	}
	return nil
}

func withNetworkPolicy(objs []runtime.Object, np networkingv1.NetworkPolicy) []runtime.Object {
	return append(objs, &np)
}

func healthyGatewayAPI() []any {
	return []any{gatewayClass("eg", envoyController, true), gateway(), httpRoute()}
}

func httpRouteEntry() frontdoor.Entry {
	return frontdoor.Entry{Kind: frontdoor.KindHTTPRoute, Namespace: "default", Name: "store"}
}

// TestFrontdoorHealthyRoute: a route accepted on a programmed Gateway, whose
// backend resolves, passes the frontdoor layer with no failure; the trace
// follows the backend Service from the gateway's Pod.
func TestFrontdoorHealthyRoute(t *testing.T) {
	_, trs := traceFrontdoor(t, frontdoorCase{entry: httpRouteEntry(),
		core: append(healthy(), gatewayPod()), gateway: healthyGatewayAPI()})
	if len(trs) != 1 {
		t.Fatalf("%d traces, want 1", len(trs))
	}
	tr := trs[0]
	l := tr.Layer(report.LayerFrontdoor)
	if l.Status != report.StatusPass {
		t.Fatalf("frontdoor %s (%s): %+v", l.Status, l.Reason, l.Checks)
	}
	for _, code := range []string{report.CodeGWGatewayReady, report.CodeGWRouteAccepted, report.CodeGWListenerMatched,
		report.CodeGWBackendResolved, report.CodeGWDataPlaneClient} {
		if findCheck(tr, report.LayerFrontdoor, code) == nil {
			t.Errorf("no %s on the frontdoor layer", code)
		}
	}
	if tr.Verdict.Status != report.StatusPass {
		t.Errorf("verdict %+v", tr.Verdict)
	}
	if tr.Metadata.Client != "pod/default/"+gatewayPodName {
		t.Errorf("client %q, want the gateway Pod", tr.Metadata.Client)
	}
	if tr.Metadata.Port != "80" {
		t.Errorf("port %q: the trace should follow the port the route sends to", tr.Metadata.Port)
	}
	f := tr.Frontdoor
	if f == nil || f.Kind != "HTTPRoute" || len(f.Backends) != 1 || !f.Backends[0].Traced || f.Class != "eg" {
		t.Errorf("frontdoor summary %+v", f)
	}
	if !strings.Contains(tr.Verdict.Summary, "default/web via HTTPRoute default/store") {
		t.Errorf("summary %q does not name the way in", tr.Verdict.Summary)
	}
}

// TestFrontdoorFaults: each fault is named on the layer it belongs to, with
// the controller's own reason quoted where the controller gave one.
func TestFrontdoorFaults(t *testing.T) {
	frontendOnly := withNetworkPolicy(append(healthy(), gatewayPod()), allowFromFrontend())
	// The Service's selector has a typo: it matches no Pod.
	typoWeb := append(without(healthy(), "svc", "web"),
		service("web", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"app": "wbe"} }), gatewayPod())
	tests := []struct {
		name      string
		c         frontdoorCase
		layer     report.LayerName // the first failing layer
		code      string           // the verdict's code
		quote     string           // in the verdict's likely cause
		frontdoor report.Status
	}{
		{
			name: "no listener matches the hostname",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(func(r *frontdoor.Route) { r.Spec.Hostnames = []gwv1.Hostname{"shop.example.org"} },
					routeStatus(cond("Accepted", false, "NoMatchingListenerHostname", "no listener hostname matches the route's hostnames"),
						cond("ResolvedRefs", true, "ResolvedRefs", "")))}},
			layer: report.LayerFrontdoor, code: report.CodeGWRouteNotAccepted, quote: "NoMatchingListenerHostname",
			frontdoor: report.StatusFail,
		},
		{
			name: "backendRef to a missing Service",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(func(r *frontdoor.Route) { r.Spec.Rules[0].BackendRefs[0].Name = "webb" },
					routeStatus(cond("Accepted", true, "Accepted", ""),
						cond("ResolvedRefs", false, "BackendNotFound", "service default/webb not found")))}},
			layer: report.LayerFrontdoor, code: report.CodeGWRefsNotResolved, quote: "BackendNotFound",
			frontdoor: report.StatusFail,
		},
		{
			name: "backendRef to a port the Service lacks",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(func(r *frontdoor.Route) { r.Spec.Rules[0].BackendRefs[0].Port = ptr(gwv1.PortNumber(8443)) },
					routeStatus(cond("Accepted", true, "Accepted", ""), cond("ResolvedRefs", true, "ResolvedRefs", "")))}},
			layer: report.LayerFrontdoor, code: report.CodeGWBackendPort, quote: "port 8443",
			frontdoor: report.StatusFail,
		},
		{
			name: "cross-namespace backend without ReferenceGrant",
			c: frontdoorCase{entry: frontdoor.Entry{Kind: frontdoor.KindHTTPRoute, Namespace: "shop", Name: "store"}, core: healthy(),
				gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
					httpRoute(func(r *frontdoor.Route) {
						r.Namespace = "shop"
						r.Spec.ParentRefs[0].Namespace = ptr(gwv1.Namespace("default"))
						r.Status.Parents[0].ParentRef.Namespace = ptr(gwv1.Namespace("default"))
						r.Spec.Rules[0].BackendRefs[0] = backendRef("default", "web", 80)
					}, routeStatus(cond("Accepted", true, "Accepted", ""),
						cond("ResolvedRefs", false, "RefNotPermitted", "backend ref to default/web not permitted by any ReferenceGrant")))}},
			layer: report.LayerFrontdoor, code: report.CodeGWRefsNotResolved, quote: "RefNotPermitted",
			frontdoor: report.StatusFail,
		},
		{
			name:  "policy admits only app=frontend, not the gateway's Pods",
			c:     frontdoorCase{entry: httpRouteEntry(), core: frontendOnly, gateway: healthyGatewayAPI()},
			layer: report.LayerPolicy, code: report.CodeNPDenied, quote: gatewayPodName,
			frontdoor: report.StatusPass,
		},
		{
			name:  "the Service's own fault behind a healthy route",
			c:     frontdoorCase{entry: httpRouteEntry(), core: typoWeb, gateway: healthyGatewayAPI()},
			layer: report.LayerService, code: report.CodeSvcSelectorNoPods, quote: "app=wbe",
			frontdoor: report.StatusPass,
		},
		{
			name: "no controller wrote the route's status",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, false), gateway(),
				httpRoute(func(r *frontdoor.Route) { r.Status = gwv1.RouteStatus{} })}},
			layer: report.LayerFrontdoor, code: report.CodeGWClassNotAccepted, quote: "GatewayClass eg",
			frontdoor: report.StatusFail,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, trs := traceFrontdoor(t, tt.c)
			tr := trs[0]
			if got := tr.Layer(report.LayerFrontdoor).Status; got != tt.frontdoor {
				t.Errorf("frontdoor layer %s, want %s: %+v", got, tt.frontdoor, tr.Layer(report.LayerFrontdoor).Checks)
			}
			v := tr.Verdict
			if v.FirstFailingLayer != tt.layer || v.Code != tt.code {
				t.Fatalf("verdict fails at %s with %s (%s), want %s with %s", v.FirstFailingLayer, v.Code, v.LikelyCause, tt.layer, tt.code)
			}
			if !strings.Contains(v.LikelyCause+v.Summary, tt.quote) {
				t.Errorf("verdict %q / %q does not quote %q", v.Summary, v.LikelyCause, tt.quote)
			}
		})
	}
}

// TestFrontdoorOwnFindings: what svctrace finds itself beside the
// controller's word: the missing Service, the missing port, the missing
// grant, and a route no controller judged.
func TestFrontdoorOwnFindings(t *testing.T) {
	grant := &gwv1.ReferenceGrant{ObjectMeta: metav1.ObjectMeta{Name: "shop-to-web", Namespace: "default"},
		Spec: gwv1.ReferenceGrantSpec{
			From: []gwv1.ReferenceGrantFrom{{Group: gwv1.GroupName, Kind: "HTTPRoute", Namespace: "shop"}},
			To:   []gwv1.ReferenceGrantTo{{Group: "", Kind: "Service"}}}}
	crossNS := func(r *frontdoor.Route) {
		r.Namespace = "shop"
		r.Spec.ParentRefs[0].Namespace = ptr(gwv1.Namespace("default"))
		r.Status.Parents[0].ParentRef.Namespace = ptr(gwv1.Namespace("default"))
		r.Spec.Rules[0].BackendRefs[0] = backendRef("default", "web", 80)
	}
	shopEntry := frontdoor.Entry{Kind: frontdoor.KindHTTPRoute, Namespace: "shop", Name: "store"}
	tests := []struct {
		name   string
		c      frontdoorCase
		fail   []string // FAIL codes on the frontdoor layer, in order
		has    string   // a code that must be there
		quote  string   // in that check's message
		status report.Status
	}{
		{
			name: "missing Service, in the controller's words too",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(func(r *frontdoor.Route) { r.Spec.Rules[0].BackendRefs[0].Name = "webb" },
					routeStatus(cond("Accepted", true, "Accepted", ""), cond("ResolvedRefs", false, "BackendNotFound", "service default/webb not found")))}},
			fail: []string{report.CodeGWRefsNotResolved, report.CodeGWBackendNotFound},
			has:  report.CodeGWBackendNotFound, quote: "says BackendNotFound", status: report.StatusFail,
		},
		{
			name: "port the Service lacks",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(func(r *frontdoor.Route) { r.Spec.Rules[0].BackendRefs[0].Port = ptr(gwv1.PortNumber(8443)) })}},
			fail: []string{report.CodeGWBackendPort},
			has:  report.CodeGWBackendPort, quote: "exposes only http 80/TCP", status: report.StatusFail,
		},
		{
			name: "cross-namespace without a grant",
			c: frontdoorCase{entry: shopEntry, core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(crossNS)}},
			fail: []string{report.CodeGWNoReferenceGrant},
			has:  report.CodeGWNoReferenceGrant, quote: "no ReferenceGrant in default", status: report.StatusFail,
		},
		{
			name: "cross-namespace with a grant",
			c: frontdoorCase{entry: shopEntry, gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(crossNS), grant}, core: append(healthy(), gatewayPod())},
			has: report.CodeGWReferenceGrantFound, quote: "default/shop-to-web", status: report.StatusPass,
		},
		{
			name: "no controller, and none runs for the class",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{
				gatewayClass("eg", envoyController, true), gateway(func(g *gwv1.Gateway) { g.Spec.GatewayClassName = "traefik" }),
				gatewayClass("traefik", "traefik.io/gateway-controller", false),
				httpRoute(func(r *frontdoor.Route) { r.Status = gwv1.RouteStatus{} })}},
			has: report.CodeGWNoController, quote: "not accepted by any controller; the Gateway's GatewayClass traefik names controllerName traefik.io/gateway-controller, and no GatewayClass with that controllerName is Accepted",
			status: report.StatusFail,
		},
		{
			name: "no controller, though the class is accepted",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(func(r *frontdoor.Route) { r.Status = gwv1.RouteStatus{} })}},
			fail: []string{report.CodeGWNoController},
			has:  report.CodeGWNoController, quote: "GatewayClass eg is Accepted by " + envoyController, status: report.StatusFail,
		},
		{
			name: "every backend weighs 0",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
				httpRoute(func(r *frontdoor.Route) { r.Spec.Rules[0].BackendRefs[0].Weight = ptr(int32(0)) })}},
			fail: []string{report.CodeGWRuleNoWeight},
			has:  report.CodeGWRuleNoWeight, quote: "weight 0", status: report.StatusFail,
		},
		{
			name: "sectionName names a listener that takes no HTTPRoute",
			c: frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true),
				gateway(func(g *gwv1.Gateway) {
					g.Spec.Listeners = append(g.Spec.Listeners, gwv1.Listener{Name: "tls", Port: 443, Protocol: gwv1.TLSProtocolType})
				}),
				httpRoute(func(r *frontdoor.Route) {
					r.Spec.ParentRefs[0].SectionName = ptr(gwv1.SectionName("tls"))
					r.Status.Parents[0].ParentRef.SectionName = ptr(gwv1.SectionName("tls"))
					r.Status.Parents[0].Conditions = []metav1.Condition{cond("Accepted", false, "NotAllowedByListeners", "no listener allows HTTPRoute")}
				})}},
			fail: []string{report.CodeGWRouteNotAccepted, report.CodeGWNoListener},
			has:  report.CodeGWNoListener, quote: "listener tls (TLS) does not take HTTPRoute", status: report.StatusFail,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireFrontdoor(t, tt.c, tt.status, tt.fail, tt.has, tt.quote)
		})
	}
}

// requireFrontdoor traces c and checks its first trace's frontdoor layer:
// its status, its FAIL codes (when fail is not nil) and that check has says
// quote.
func requireFrontdoor(t *testing.T, fc frontdoorCase, status report.Status, fail []string, has, quote string) {
	t.Helper()
	_, trs := traceFrontdoor(t, fc)
	tr := trs[0]
	l := tr.Layer(report.LayerFrontdoor)
	if l.Status != status {
		t.Errorf("frontdoor %s, want %s: %+v", l.Status, status, l.Checks)
	}
	if fail != nil {
		if got := frontdoorCodes(tr, report.LayerFrontdoor, report.StatusFail); strings.Join(got, ",") != strings.Join(fail, ",") {
			t.Errorf("FAIL codes %v, want %v", got, fail)
		}
	}
	c := findCheck(tr, report.LayerFrontdoor, has)
	if c == nil {
		t.Fatalf("no %s: %+v", has, l.Checks)
	}
	if !strings.Contains(c.Message, quote) {
		t.Errorf("%s says %q, want it to contain %q", has, c.Message, quote)
	}
}

// TestFrontdoorBackendMissingIsTracedToo: the missing backend Service is
// still traced, so its own layer says "not found" beside the route's finding.
func TestFrontdoorBackendMissingIsTracedToo(t *testing.T) {
	_, trs := traceFrontdoor(t, frontdoorCase{entry: httpRouteEntry(), core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
		httpRoute(func(r *frontdoor.Route) { r.Spec.Rules[0].BackendRefs[0].Name = "webb" })}})
	if findCheck(trs[0], report.LayerService, report.CodeSvcNotFound) == nil {
		t.Errorf("no SVC001 on the service layer: %+v", trs[0].Layer(report.LayerService))
	}
	if trs[0].Verdict.FirstFailingLayer != report.LayerFrontdoor {
		t.Errorf("first failing layer %s, want frontdoor", trs[0].Verdict.FirstFailingLayer)
	}
}

// TestFrontdoorSeveralBackends: a route that splits traffic is traced once
// per backend Service, each trace marking its own backend.
func TestFrontdoorSeveralBackends(t *testing.T) {
	canary := service("web-canary")
	objs := append(healthy(), canary)
	_, trs := traceFrontdoor(t, frontdoorCase{entry: httpRouteEntry(), core: objs, gateway: []any{gatewayClass("eg", envoyController, true), gateway(),
		httpRoute(func(r *frontdoor.Route) {
			b := backendRef("", "web-canary", 80)
			b.Weight = ptr(int32(10))
			r.Spec.Rules[0].BackendRefs[0].Weight = ptr(int32(90))
			r.Spec.Rules[0].BackendRefs = append(r.Spec.Rules[0].BackendRefs, b)
		})}})
	if len(trs) != 2 {
		t.Fatalf("%d traces, want 2", len(trs))
	}
	for i, want := range []string{"web", "web-canary"} {
		if trs[i].Service.Name != want {
			t.Errorf("trace %d is of %s, want %s", i, trs[i].Service.Name, want)
		}
		for _, b := range trs[i].Frontdoor.Backends {
			if b.Traced != (b.Name == want) {
				t.Errorf("trace %d marks %+v", i, b)
			}
		}
	}
	c := findCheck(trs[0], report.LayerFrontdoor, report.CodeGWBackendResolved)
	if c == nil || !strings.Contains(c.Message, "90%") {
		t.Errorf("share not shown: %+v", c)
	}
}

// TestFrontdoorGatewayEntry: gateway/NAME judges the Gateway and the routes
// attached to it, and traces their backends.
func TestFrontdoorGatewayEntry(t *testing.T) {
	other := httpRoute(func(r *frontdoor.Route) {
		r.Name = "elsewhere"
		r.Spec.ParentRefs[0].Name = "other-gw"
	})
	fd, trs := traceFrontdoor(t, frontdoorCase{entry: frontdoor.Entry{Kind: frontdoor.KindGateway, Namespace: "default", Name: "gw"},
		core: append(healthy(), gatewayPod()), gateway: append(healthyGatewayAPI(), other)})
	if len(fd.Routes) != 1 || fd.Routes[0].Name != "store" {
		t.Fatalf("attached routes %+v", fd.Routes)
	}
	if len(trs) != 1 || trs[0].Service.Name != "web" || trs[0].Layer(report.LayerFrontdoor).Status != report.StatusPass {
		t.Fatalf("traces %+v", trs)
	}
	// A Gateway nobody routes through.
	_, trs = traceFrontdoor(t, frontdoorCase{entry: frontdoor.Entry{Kind: frontdoor.KindGateway, Namespace: "default", Name: "gw"},
		core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gateway()}})
	tr := trs[0]
	if findCheck(tr, report.LayerFrontdoor, report.CodeGWNoRoutes) == nil || tr.Service.Name != "" {
		t.Fatalf("empty Gateway: %+v", tr.Layer(report.LayerFrontdoor))
	}
	if l := tr.Layer(report.LayerService); l.Status != report.StatusSkipped {
		t.Errorf("service layer %s, want skipped with no backend", l.Status)
	}
	if tr.Verdict.Status != report.StatusWarn || !strings.Contains(tr.Verdict.Summary, "Gateway default/gw") {
		t.Errorf("verdict %+v", tr.Verdict)
	}
}

// TestFrontdoorRouteKinds: each route kind is found at whatever version the
// cluster serves it (TCPRoute at v1alpha2 here), and a kind whose CRD is
// not installed is an error naming it, not a guess.
func TestFrontdoorRouteKinds(t *testing.T) {
	tcp := &frontdoor.Route{Kind: frontdoor.KindTCPRoute, ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: frontdoor.RouteSpec{ParentRefs: []gwv1.ParentReference{{Name: "gw", SectionName: ptr(gwv1.SectionName("tcp"))}},
			Rules: []frontdoor.RouteRule{{BackendRefs: []gwv1.BackendRef{backendRef("", "web", 80)}}}}}
	gw := gateway(func(g *gwv1.Gateway) {
		g.Spec.Listeners = append(g.Spec.Listeners, gwv1.Listener{Name: "tcp", Port: 5432, Protocol: gwv1.TCPProtocolType})
	})
	_, trs := traceFrontdoor(t, frontdoorCase{entry: frontdoor.Entry{Kind: frontdoor.KindTCPRoute, Namespace: "default", Name: "db"},
		core: healthy(), gateway: []any{gatewayClass("eg", envoyController, true), gw, tcp}})
	if c := findCheck(trs[0], report.LayerFrontdoor, report.CodeGWListenerMatched); c == nil || !strings.Contains(c.Message, "tcp (TCP 5432") {
		t.Errorf("TCPRoute listener: %+v", trs[0].Layer(report.LayerFrontdoor).Checks)
	}

	served := map[string]string{"Gateway": "v1", "GatewayClass": "v1", frontdoor.KindHTTPRoute: "v1"}
	rd := fakegateway.Reader(fake.NewClientset(), served, nil)
	_, err := rd.Read(context.Background(), frontdoor.Entry{Kind: frontdoor.KindGRPCRoute, Namespace: "default", Name: "x"}, frontdoor.ReadOptions{})
	var notServed *frontdoor.NotServedError
	if !errors.As(err, &notServed) {
		t.Errorf("GRPCRoute not served: err %v", err)
	}
	_, err = rd.Read(context.Background(), frontdoor.Entry{Kind: frontdoor.KindHTTPRoute, Namespace: "default", Name: "x"}, frontdoor.ReadOptions{})
	var notFound *frontdoor.NotFoundError
	if !errors.As(err, &notFound) || err.Error() != "httproute x not found in namespace default" {
		t.Errorf("missing route: err %v", err)
	}
}

// TestFrontdoorSurvivesJSON: a saved trace keeps the front door, so
// analyze judges the frontdoor layer the same offline.
func TestFrontdoorSurvivesJSON(t *testing.T) {
	client := fake.NewClientset(healthy()...)
	rd := fakegateway.Reader(client, fakegateway.ServedV1, nil, healthyGatewayAPI()...)
	fd, err := rd.Read(context.Background(), httpRouteEntry(), frontdoor.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Now: fixedNow, NoNode: true, Version: "test"}
	in, _, opts, err := CollectBackend(context.Background(), client, fd, "default/web", opts)
	if err != nil {
		t.Fatal(err)
	}
	live := jsonOf(t, Assemble(in, nil, opts))
	var saved input.Input
	roundTrip(t, in, &saved)
	if offline := jsonOf(t, Assemble(&saved, nil, opts)); offline != live {
		t.Fatalf("offline result differs:\nlive:    %s\noffline: %s", live, offline)
	}
}

// TestFrontdoorForbiddenRead: a read the user may not make leaves the
// frontdoor layer unknown with the permission named, not failed with a
// "not found" it could not know.
func TestFrontdoorForbiddenRead(t *testing.T) {
	client := fake.NewClientset(healthy()...)
	route := httpRoute(func(r *frontdoor.Route) {
		r.Namespace = "shop"
		r.Spec.ParentRefs[0].Namespace = ptr(gwv1.Namespace("default"))
		r.Status.Parents[0].ParentRef.Namespace = ptr(gwv1.Namespace("default"))
		r.Spec.Rules[0].BackendRefs[0] = backendRef("default", "web", 80)
	})
	rd := fakegateway.Reader(client, fakegateway.ServedV1, nil, gatewayClass("eg", envoyController, true), gateway(), route)
	rd.Dynamic.(*dynamicfake.FakeDynamicClient).PrependReactor("list", "referencegrants", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: gwv1.GroupName, Resource: "referencegrants"}, "", nil)
	})
	fd, err := rd.Read(context.Background(), frontdoor.Entry{Kind: frontdoor.KindHTTPRoute, Namespace: "shop", Name: "store"}, frontdoor.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Now: fixedNow, NoNode: true}
	in, nr, opts, err := CollectBackend(context.Background(), client, fd, "default/web", opts)
	if err != nil {
		t.Fatal(err)
	}
	tr := Assemble(in, nr, opts)
	l := tr.Layer(report.LayerFrontdoor)
	if l.Status != report.StatusUnknown || findCheck(tr, report.LayerFrontdoor, report.CodeGWNoReferenceGrant) != nil {
		t.Fatalf("frontdoor %s: %+v", l.Status, l.Checks)
	}
	c := findCheck(tr, report.LayerFrontdoor, report.CodeAPIForbidden)
	if c == nil || c.NextStep != "kubectl auth can-i list referencegrants -n default" {
		t.Errorf("API001: %+v", c)
	}
}
