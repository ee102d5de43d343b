package report

// Codes of the frontdoor layer: GW for a Gateway API route and its Gateway,
// ING for an Ingress. Where a controller wrote a condition, the message
// quotes its reason and message: the controller is the authority on what
// it accepted, svctrace only finds the object it names.
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

	CodeINGClass            = "ING001"
	CodeINGClassNotFound    = "ING002"
	CodeINGNoClass          = "ING003"
	CodeINGBackendNotFound  = "ING004"
	CodeINGBackendPort      = "ING005"
	CodeINGTLSSecretMissing = "ING006"
	CodeINGNoAddress        = "ING007"
	CodeINGBackendResolved  = "ING008"
	CodeINGResourceBackend  = "ING009"
	CodeINGSeveralDefaults  = "ING010"
	CodeINGTLSSecrets       = "ING011"
	CodeINGNoBackend        = "ING012"
	CodeINGAddress          = "ING013"
)

var frontdoorCatalog = []CheckSpec{
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

	// ING: an Ingress, its IngressClass, rules, default backend and TLS.
	{Code: CodeINGClass, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "IngressClass",
		Message:  "Ingress {ingress} is handled by IngressClass {class} (controller {controller}){how}",
		NextStep: "kubectl get ingressclass {class} -o yaml"},
	{Code: CodeINGClassNotFound, Layer: LayerFrontdoor, Severity: SeverityError, Title: "IngressClass not found",
		Message:  "Ingress {ingress} names IngressClass {class}, which does not exist: no controller serves it",
		NextStep: "kubectl get ingressclasses"},
	{Code: CodeINGNoClass, Layer: LayerFrontdoor, Severity: SeverityError, Title: "No IngressClass",
		Message:  "Ingress {ingress} names no IngressClass and no IngressClass is marked default: no controller is bound to serve it{legacy}",
		NextStep: "kubectl get ingressclasses"},
	{Code: CodeINGBackendNotFound, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Backend Service not found",
		Message:  "{path} of Ingress {ingress} sends to Service {backend}, which does not exist",
		NextStep: "kubectl get services -n {namespace}"},
	{Code: CodeINGBackendPort, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Backend port not on the Service",
		Message:  "{path} of Ingress {ingress} sends to port {port} of Service {backend}, which exposes only {ports}",
		NextStep: "kubectl get service {backendName} -n {namespace} -o jsonpath='{.spec.ports}'"},
	{Code: CodeINGTLSSecretMissing, Layer: LayerFrontdoor, Severity: SeverityError, Title: "TLS Secret not found",
		Message:  "Ingress {ingress} terminates TLS for {hosts} with Secret {secret}, which does not exist: the controller serves its default certificate or no TLS at all",
		NextStep: "kubectl get secrets -n {namespace} --field-selector metadata.name={secret}"},
	{Code: CodeINGNoAddress, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "Ingress has no address",
		Message:  "Ingress {ingress} has no status.loadBalancer address: its controller has not admitted it (or does not publish addresses)",
		NextStep: "kubectl describe ingress {name} -n {namespace}"},
	{Code: CodeINGBackendResolved, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "Backend resolves",
		Message:  "{path} sends to Service {backend} port {port}",
		NextStep: "kubectl get service {backendName} -n {namespace} -o wide"},
	{Code: CodeINGResourceBackend, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "Resource backend not traced",
		Message:  "{path} of Ingress {ingress} sends to a {backendKind} resource backend, not a Service: it is not traced",
		NextStep: "kubectl get ingress {name} -n {namespace} -o yaml"},
	{Code: CodeINGSeveralDefaults, Layer: LayerFrontdoor, Severity: SeverityWarning, Title: "Several default IngressClasses",
		Message:  "{count} IngressClasses are marked default ({classes}): the API server rejects new Ingresses without a class until one is left",
		NextStep: "kubectl get ingressclasses -o custom-columns=NAME:.metadata.name,DEFAULT:.metadata.annotations.ingressclass\\.kubernetes\\.io/is-default-class"},
	{Code: CodeINGTLSSecrets, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "TLS Secrets exist",
		Message:  "the TLS Secret(s) {secrets} of Ingress {ingress} exist (their content is not read)",
		NextStep: "kubectl get secrets -n {namespace}"},
	{Code: CodeINGNoBackend, Layer: LayerFrontdoor, Severity: SeverityError, Title: "Ingress has no backend",
		Message:  "Ingress {ingress} has no rule path and no default backend: the controller has nothing to send its traffic to",
		NextStep: "kubectl get ingress {name} -n {namespace} -o yaml"},
	{Code: CodeINGAddress, Layer: LayerFrontdoor, Severity: SeverityInfo, Title: "Ingress address",
		Message:  "Ingress {ingress} is published at {addresses}",
		NextStep: "kubectl get ingress {name} -n {namespace}"},
}
