package report

// LayerFrontdoor judges what stands in front of the Service: the Gateway
// API route or the Ingress a trace started at, its Gateway or IngressClass,
// and how its backends resolve to Services. It is not "route": that name
// is the node layer judging the route from a node to a Pod (RT codes), and
// a packet meets the front door before either. It is first in a trace's
// Layers when, and only when, the trace started at a front door, so a
// Service trace keeps the layers (and the documents) it always had.
const LayerFrontdoor LayerName = "frontdoor"

// Frontdoor says where a trace that started at a route, a Gateway or an
// Ingress came in, and which backend Services it resolved to. The trace's
// Service is one of Backends (Traced); the command traces every backend
// Service and prints one ServiceTrace for each.
type Frontdoor struct {
	// Kind is HTTPRoute, GRPCRoute, TLSRoute, TCPRoute, Gateway or Ingress.
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Gateways are the parent Gateways (namespace/name) of a route, or the
	// Gateway itself; Class is the GatewayClass or IngressClass.
	Gateways []string `json:"gateways,omitempty"`
	Class    string   `json:"class,omitempty"`
	// Backends are every backend the front door names, in the order it names
	// them, Services or not.
	Backends []FrontdoorBackend `json:"backends,omitempty"`
}

// FrontdoorBackend is one backend a route rule or an Ingress path names.
type FrontdoorBackend struct {
	// Kind is Service unless the backendRef names another kind (not traced).
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Port is the port the front door sends to, a number or (Ingress) a
	// Service port name; empty when none is given.
	Port string `json:"port,omitempty"`
	// Weight is the backendRef's weight (1 when unset); -1 for an Ingress,
	// which has none.
	Weight int32 `json:"weight"`
	// Traced is true for the backend this ServiceTrace traces.
	Traced bool `json:"traced,omitempty"`
}

// Subject names what a trace's verdict is about: the Service, or, for a trace
// that started at a front door, the Service and the way in ("default/web via
// HTTPRoute default/store"; the front door alone when it sends to no
// Service). It is plain ASCII: the text view prints it in ASCII mode too.
func (t *ServiceTrace) Subject() string {
	svc := t.Service.Namespace + "/" + t.Service.Name
	f := t.Frontdoor
	if f == nil {
		return svc
	}
	entry := f.Kind + " " + f.Namespace + "/" + f.Name
	if t.Service.Name == "" {
		return entry
	}
	return svc + " via " + entry
}

// ListKind is the kind of the document that holds several traces: one per
// backend Service of a front door that sends to more than one.
const ListKind = "ServiceTraceList"

// ServiceTraceList is several ServiceTraces in one document, the way kubectl
// prints several objects as a List.
type ServiceTraceList struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Items      []*ServiceTrace `json:"items"`
}

// NewServiceTraceList wraps traces.
func NewServiceTraceList(traces []*ServiceTrace) *ServiceTraceList {
	return &ServiceTraceList{APIVersion: APIVersion, Kind: ListKind, Items: traces}
}
