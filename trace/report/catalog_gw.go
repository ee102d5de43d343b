package report

// GW codes (frontdoor layer): a Gateway API route, its parent Gateways and
// GatewayClass, its backendRefs, and the gateway's data-plane Pods. Where
// a controller wrote a condition the message quotes its reason and
// message: the controller is the authority on what it accepted, svctrace
// only finds the object it names.
const (
	CodeGWRouteAccepted       = "GW001"
	CodeGWRouteNotAccepted    = "GW002"
	CodeGWRefsNotResolved     = "GW003"
	CodeGWNoController        = "GW004"
	CodeGWParentNotFound      = "GW005"
	CodeGWGatewayNotReady     = "GW006"
	CodeGWClassNotAccepted    = "GW007"
	CodeGWNoAddress           = "GW008"
	CodeGWNoListener          = "GW009"
	CodeGWListenerNotReady    = "GW010"
	CodeGWListenerMatched     = "GW011"
	CodeGWBackendNotFound     = "GW012"
	CodeGWBackendPort         = "GW013"
	CodeGWNoReferenceGrant    = "GW014"
	CodeGWBackendZeroWeight   = "GW015"
	CodeGWRuleNoWeight        = "GW016"
	CodeGWBackendNotService   = "GW017"
	CodeGWBackendResolved     = "GW018"
	CodeGWStatusStale         = "GW019"
	CodeGWGatewayReady        = "GW020"
	CodeGWDataPlaneClient     = "GW021"
	CodeGWNoDataPlane         = "GW022"
	CodeGWNoRoutes            = "GW023"
	CodeGWBackendPortMissing  = "GW024"
	CodeGWClassNotFound       = "GW025"
	CodeGWReferenceGrantFound = "GW026"
)

var gwCatalog = []CheckSpec{
	// GW: a Gateway API route, its parent Gateways and its backendRefs.
	{Code: CodeGWRouteAccepted, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "Route accepted",
		Message:  "{route} is Accepted by {controller} on {parent} and its references resolve",
		NextStep: "kubectl get {resource} {name} -n {routeNamespace} -o jsonpath='{.status.parents}'"},
	{Code: CodeGWRouteNotAccepted, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Route not accepted",
		Message:  "{controller} did not accept {route} on {parent}: {reason}: {message}",
		NextStep: "kubectl describe {resource} {name} -n {routeNamespace}"},
	{Code: CodeGWRefsNotResolved, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Route references not resolved",
		Message:  "{controller} could not resolve the references of {route} on {parent}: {reason}: {message}",
		NextStep: "kubectl describe {resource} {name} -n {routeNamespace}"},
	{Code: CodeGWNoController, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Route not accepted by any controller",
		Message:  "no controller has written status for {route} on {parent}: it is not accepted by any controller; {classState}",
		NextStep: "kubectl get gatewayclass {class} -o yaml"},
	{Code: CodeGWParentNotFound, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Parent Gateway not found",
		Message:  "{route} names parent {parent}, which does not exist",
		NextStep: "kubectl get gateways -n {parentNamespace}"},
	{Code: CodeGWGatewayNotReady, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Gateway not ready",
		Message:  "Gateway {gateway} has {condition} {conditionStatus}: {reason}: {message}",
		NextStep: "kubectl describe gateway {gatewayName} -n {gatewayNamespace}"},
	{Code: CodeGWClassNotAccepted, Layer: LayerFrontdoor, Severity: SeverityError, Title: "GatewayClass not accepted",
		Message:  "GatewayClass {class} (controllerName {controller}) is not Accepted: {reason}: {message}",
		NextStep: "kubectl describe gatewayclass {class}"},
	{Code: CodeGWNoAddress, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "Gateway has no address",
		Message:  "Gateway {gateway} has no address in its status: clients outside the cluster have nothing to connect to yet",
		NextStep: "kubectl get gateway {gatewayName} -n {gatewayNamespace} -o jsonpath='{.status.addresses}'"},
	{Code: CodeGWNoListener, Layer: LayerFrontdoor, Severity: SeverityError, Title: "No listener admits the route",
		Message:  "no listener of Gateway {gateway} admits {route}{section}: {why}",
		NextStep: "kubectl get gateway {gatewayName} -n {gatewayNamespace} -o jsonpath='{.spec.listeners}'"},
	{Code: CodeGWListenerNotReady, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Listener not ready",
		Message:  "listener {listener} of Gateway {gateway} has {condition} {conditionStatus}: {reason}: {message}",
		NextStep: "kubectl describe gateway {gatewayName} -n {gatewayNamespace}"},
	{Code: CodeGWListenerMatched, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "Listener admits the route",
		Message:  "{route} attaches to Gateway {gateway} listener {listeners}",
		NextStep: "kubectl get gateway {gatewayName} -n {gatewayNamespace} -o jsonpath='{.status.listeners}'"},
	{Code: CodeGWBackendNotFound, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Backend Service not found",
		Message:  "{route} sends {share} of rule {rule} to Service {backend}, which does not exist{controllerSays}",
		NextStep: "kubectl get services -n {backendNamespace}"},
	{Code: CodeGWBackendPort, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Backend port not on the Service",
		Message:  "{route} sends rule {rule} to port {port} of Service {backend}, which exposes only {ports}{controllerSays}",
		NextStep: "kubectl get service {backendName} -n {backendNamespace} -o jsonpath='{.spec.ports}'"},
	{Code: CodeGWNoReferenceGrant, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Cross-namespace backend without ReferenceGrant",
		Message:  "{route} in namespace {routeNamespace} sends rule {rule} to Service {backend} in another namespace, and no ReferenceGrant in {backendNamespace} allows {kind} from {routeNamespace} to refer to it{controllerSays}",
		NextStep: "kubectl get referencegrants -n {backendNamespace} -o yaml"},
	{Code: CodeGWBackendZeroWeight, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "Backend gets no traffic",
		Message:  "backendRef {backend} of rule {rule} has weight 0: it gets 0% of the rule's traffic",
		NextStep: "kubectl get {resource} {name} -n {routeNamespace} -o jsonpath='{.spec.rules}'"},
	{Code: CodeGWRuleNoWeight, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Rule sends traffic nowhere",
		Message:  "every backendRef of rule {rule} of {route} has weight 0: its requests get an error from the gateway (HTTP 500 for HTTP and gRPC routes)",
		NextStep: "kubectl get {resource} {name} -n {routeNamespace} -o jsonpath='{.spec.rules}'"},
	{Code: CodeGWBackendNotService, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "Backend is not a Service",
		Message:  "backendRef {backend} of rule {rule} is a {backendKind}, not a Service: svctrace traces Services only, so it is not traced",
		NextStep: "kubectl get {resource} {name} -n {routeNamespace} -o jsonpath='{.spec.rules}'"},
	{Code: CodeGWBackendResolved, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "Backend resolves",
		Message:  "rule {rule} sends {share} to Service {backend} port {port}",
		NextStep: "kubectl get service {backendName} -n {backendNamespace} -o wide"},
	{Code: CodeGWStatusStale, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "Route status is stale",
		Message:  "{controller} last judged generation {observed} of {route}, which is now at generation {generation}: its conditions may not describe the current spec",
		NextStep: "kubectl get {resource} {name} -n {routeNamespace} -o yaml"},
	{Code: CodeGWGatewayReady, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "Gateway programmed",
		Message:  "Gateway {gateway} (GatewayClass {class}) is Accepted and Programmed at {addresses}",
		NextStep: "kubectl get gateway {gatewayName} -n {gatewayNamespace}"},
	{Code: CodeGWDataPlaneClient, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "Gateway data plane is the client",
		Message:  "the policy layer judges traffic from {pod}, one of {count} data-plane Pod(s) found by {selector}",
		NextStep: "kubectl get pods {selectorFlag} --show-labels"},
	{Code: CodeGWNoDataPlane, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "Gateway data plane not found",
		Message:  "{found}: the policy layer judges traffic from any client, not from the gateway's Pods; name them with --gateway-pods SELECTOR or --from pod/NAMESPACE/NAME",
		NextStep: "kubectl get pods {selectorFlag} --show-labels"},
	{Code: CodeGWNoRoutes, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "No route attached",
		Message:  "no {kinds} names Gateway {gateway} as a parent: it has nothing to send traffic to",
		NextStep: "kubectl get httproutes -A"},
	{Code: CodeGWBackendPortMissing, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Backend port not given",
		Message:  "backendRef to Service {backend} in rule {rule} of {route} has no port, which a Service backend requires",
		NextStep: "kubectl get {resource} {name} -n {routeNamespace} -o jsonpath='{.spec.rules}'"},
	{Code: CodeGWClassNotFound, Layer: LayerFrontdoor, Severity: SeverityError, Title: "GatewayClass not found",
		Message:  "Gateway {gateway} names GatewayClass {class}, which does not exist: no controller programs it",
		NextStep: "kubectl get gatewayclasses"},
	{Code: CodeGWReferenceGrantFound, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "ReferenceGrant allows the backend",
		Message:  "ReferenceGrant {grant} allows {kind} from {routeNamespace} to refer to Service {backend}",
		NextStep: "kubectl get referencegrants -n {backendNamespace} -o yaml"},
}
