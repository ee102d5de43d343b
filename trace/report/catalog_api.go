package report

// API codes belong to no layer of their own: reading the cluster failed,
// and the layer that needed the data is unknown.
const (
	CodeAPIForbidden = "API001"
	CodeAPIError     = "API002"
	CodeAPINodes     = "API003"
	CodeAPIEvents    = "API004"
)

var apiCatalog = []CheckSpec{
	// API: reading the cluster failed; the layer that needed the data is unknown.
	{Code: CodeAPIForbidden, Severity: SeverityError, Title: "Permission missing",
		Message:  "cannot {verb} {resource} in {scope} (forbidden): {impact}",
		NextStep: "kubectl auth can-i {verb} {resource} {scopeFlag}"},
	{Code: CodeAPIError, Severity: SeverityError, Title: "API request failed",
		Message:  "cannot {verb} {resource} in {scope}: {error}; {impact}",
		NextStep: "kubectl get {resource} {scopeFlag}"},
	{Code: CodeAPINodes, Severity: SeverityInfo, Title: "Nodes not readable",
		Message:  "cannot {verb} nodes ({error}): node readiness and per-node traffic-policy checks were skipped",
		NextStep: "kubectl auth can-i {verb} nodes"},
	{Code: CodeAPIEvents, Severity: SeverityInfo, Title: "Events not readable",
		Message:  "cannot list events in namespace {namespace} ({error}): the kubelet's probe failure messages are not shown",
		NextStep: "kubectl auth can-i list events -n {namespace}"},
}
