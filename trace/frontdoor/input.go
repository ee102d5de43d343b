package frontdoor

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Kinds a trace can start at besides a Service.
const (
	KindHTTPRoute = "HTTPRoute"
	KindGRPCRoute = "GRPCRoute"
	KindTLSRoute  = "TLSRoute"
	KindTCPRoute  = "TCPRoute"
	KindGateway   = "Gateway"
	KindIngress   = "Ingress"
)

// RouteKinds are the Gateway API route kinds svctrace reads, in the order a
// Gateway's attached routes are listed.
var RouteKinds = []string{KindHTTPRoute, KindGRPCRoute, KindTLSRoute, KindTCPRoute}

// Entry is the object a trace starts at.
type Entry struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Input is what the API says about one front door: the objects every GW and
// ING check reads. Read fills it; a saved trace keeps it (add fields, never
// rename them).
type Input struct {
	Entry Entry `json:"entry"`

	// Routes are the entry route, or every route attached to the entry
	// Gateway. Gateways are their parent Gateways that exist (or the entry
	// Gateway), GatewayClasses those Gateways' classes that exist.
	Routes         []Route             `json:"routes,omitempty"`
	Gateways       []gwv1.Gateway      `json:"gateways,omitempty"`
	GatewayClasses []gwv1.GatewayClass `json:"gatewayClasses,omitempty"`
	// ReferenceGrants are the grants of the namespaces a route's
	// cross-namespace backends live in.
	ReferenceGrants []gwv1.ReferenceGrant `json:"referenceGrants,omitempty"`
	// NamespaceLabels are the labels of the routes' namespaces, read only
	// when a listener admits routes by namespace selector.
	NamespaceLabels map[string]map[string]string `json:"namespaceLabels,omitempty"`

	// Ingress is the entry Ingress; IngressClasses every IngressClass (the
	// default one is found among them); TLSSecrets whether each of its TLS
	// Secrets exists, by name (read as metadata only, never their data).
	Ingress        *networkingv1.Ingress       `json:"ingress,omitempty"`
	IngressClasses []networkingv1.IngressClass `json:"ingressClasses,omitempty"`
	TLSSecrets     map[string]bool             `json:"tlsSecrets,omitempty"`

	// Services are the backend Services, by namespace/name; a nil value
	// records one that does not exist.
	Services map[string]*corev1.Service `json:"services,omitempty"`

	// DataPlane is where the gateway's Pods were looked for; nil when they
	// were not (--from was given).
	DataPlane *DataPlane `json:"dataPlane,omitempty"`

	// Gaps are the reads that failed; each makes the frontdoor layer unknown
	// at least.
	Gaps []Gap `json:"gaps,omitempty"`
}

// Route is any Gateway API route, read into the fields every route kind
// shares: parentRefs, hostnames (absent on TCPRoute), the rules' backendRefs
// and the per-parent status. An HTTPRoute's backendRefs carry filters
// besides, which the front door does not judge.
type Route struct {
	Kind              string `json:"kind"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              RouteSpec        `json:"spec"`
	Status            gwv1.RouteStatus `json:"status"`
}

// RouteSpec is the part of a route's spec the front door judges.
type RouteSpec struct {
	ParentRefs []gwv1.ParentReference `json:"parentRefs,omitempty"`
	Hostnames  []gwv1.Hostname        `json:"hostnames,omitempty"`
	Rules      []RouteRule            `json:"rules,omitempty"`
}

// RouteRule is one rule's name and backendRefs.
type RouteRule struct {
	Name        *gwv1.SectionName `json:"name,omitempty"`
	BackendRefs []gwv1.BackendRef `json:"backendRefs,omitempty"`
}

// DataPlane is the search for the gateway's data-plane Pods: the selector,
// where it looked, and the running Pods it found (namespace/name, sorted).
// The first one is the trace's client.
type DataPlane struct {
	Selector string `json:"selector"`
	// Namespace is where the Pods were looked for, "" for every namespace.
	Namespace string   `json:"namespace,omitempty"`
	Pods      []string `json:"pods,omitempty"`
	// Source says where the selector came from: the --gateway-pods flag,
	// or the Gateway's labels (GEP-1762's gateway-name label and
	// spec.infrastructure.labels).
	Source string `json:"source"`
}

// Gap is one read that failed.
type Gap struct {
	Verb      string `json:"verb"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Forbidden bool   `json:"forbidden,omitempty"`
	Error     string `json:"error"`
	// Impact says what could not be judged because of it.
	Impact string `json:"impact"`
}

// serviceKey is the Services map key.
func serviceKey(namespace, name string) string { return namespace + "/" + name }
