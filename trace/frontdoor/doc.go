// Package frontdoor judges what stands in front of a Service: a Gateway API
// route (HTTPRoute, GRPCRoute, TLSRoute, TCPRoute) with its parent Gateways
// and GatewayClass, or an Ingress with its IngressClass. It answers from the
// API alone: does a controller accept the route, does a listener admit it,
// does every backend resolve to a Service port the Service exposes, is a
// cross-namespace backend granted, does the Ingress have a class, its TLS
// Secrets and an address. It also finds the gateway's data-plane Pods, which
// the trace then uses as its client (--from), so the policy layer judges
// the traffic the gateway really sends.
//
// Files:
//   - input.go: Input, what the API said (a saved trace's part of input.json).
//   - read.go: Read, the API reads, through the discovery, dynamic and
//     metadata clients for the CRDs and Secrets, the typed one for the rest.
//   - gateway.go: the GW checks of a route and its Gateways.
//   - listener.go: which listeners admit a route, hostname intersection.
//   - backends.go: a route's backendRefs against Services and ReferenceGrants.
//   - ingress.go: the ING checks of an Ingress.
//   - judge.go: Judge, Backends, the entry points the trace package calls.
//
// It imports report and never trace: the trace package prepends the
// frontdoor layer and traces each backend Service as it traces any Service.
package frontdoor
