package report

// ING codes (frontdoor layer): an Ingress, its IngressClass, rules, default
// backend, TLS Secrets and address.
const (
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

var ingCatalog = []CheckSpec{
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
