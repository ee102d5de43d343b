package report

// PRT codes match the Service's ports against the Pods and the
// EndpointSlices (service layer).
const (
	CodePortNumeric         = "PRT001"
	CodePortNameUnresolved  = "PRT002"
	CodePortProtocol        = "PRT003"
	CodePortMissingInSlices = "PRT004"
	CodePortNamedResolved   = "PRT005"
	CodePortSliceProtocol   = "PRT006"
)

var prtCatalog = []CheckSpec{
	// PRT: Service ports against Pods and EndpointSlices.
	{Code: CodePortNumeric, Layer: LayerService, Severity: SeverityInfo, Title: "Numeric targetPort",
		Message:  "port {port} forwards to container port {targetPort}/{protocol} (numeric: no containerPort declaration is needed)",
		NextStep: "kubectl get pods -n {namespace} -l {selectorArg} -o wide"},
	{Code: CodePortNameUnresolved, Layer: LayerService, Severity: SeverityError, Title: "Named targetPort not found",
		Message:  "port {port} targets the container port named {targetPort}, which {count} of {total} selected Pods do not declare: {pods}",
		NextStep: "kubectl get pod {firstPod} -n {namespace} -o jsonpath='{.spec.containers[*].ports}'"},
	{Code: CodePortProtocol, Layer: LayerService, Severity: SeverityError, Title: "Protocol mismatch",
		Message:  "port {port} is {protocol}, but the container port {targetPort} on {pods} is {podProtocol}",
		NextStep: "kubectl get pod {firstPod} -n {namespace} -o jsonpath='{.spec.containers[*].ports}'"},
	{Code: CodePortMissingInSlices, Layer: LayerEndpoints, Severity: SeverityError, Title: "Port missing in EndpointSlices",
		Message:  "Service port {port} has no port named \"{name}\" in any EndpointSlice (slice ports: {slicePorts}), so kube-proxy has no endpoint for it",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o yaml"},
	{Code: CodePortNamedResolved, Layer: LayerService, Severity: SeverityInfo, Title: "Named targetPort resolves",
		Message:  "port {port} targets {targetPort}, declared on all {total} selected Pods as {resolved}",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o wide"},
	{Code: CodePortSliceProtocol, Layer: LayerEndpoints, Severity: SeverityError, Title: "Slice port protocol mismatch",
		Message:  "Service port {port} is {protocol}, but {count} endpoints carry the port named \"{name}\" as {sliceProtocol}: kube-proxy matches name and protocol, so the port has no endpoint",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o yaml"},
}
