package report

// POD codes say why a selected Pod does or does not receive traffic
// (endpoints layer).
const (
	CodePodPhase          = "POD001"
	CodePodNotReady       = "POD002"
	CodePodReadinessGates = "POD003"
	CodePodNodeNotReady   = "POD004"
	CodePodTerminating    = "POD005"
	CodePodCrashLoop      = "POD006"
)

var podCatalog = []CheckSpec{
	// POD: why a selected Pod does or does not receive traffic.
	{Code: CodePodPhase, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Pod not running",
		Message:  "Pod {pod} is {phase}{detail}",
		NextStep: "kubectl describe pod {pod} -n {namespace}"},
	{Code: CodePodNotReady, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Pod not Ready",
		Message:  "Pod {pod} is not Ready{detail}",
		NextStep: "kubectl describe pod {pod} -n {namespace}"},
	{Code: CodePodReadinessGates, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Readiness gates unmet",
		Message:  "Pod {pod} waits for readiness gates: {gates}",
		NextStep: "kubectl get pod {pod} -n {namespace} -o jsonpath='{.status.conditions}'"},
	{Code: CodePodNodeNotReady, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Pod on NotReady node",
		Message:  "Pod {pod} runs on node {node}, which is not Ready{detail}",
		NextStep: "kubectl describe node {node}"},
	{Code: CodePodTerminating, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Pod terminating",
		Message:  "Pod {pod} is being deleted (since {since}); it leaves the endpoints",
		NextStep: "kubectl get pod {pod} -n {namespace} -o wide"},
	{Code: CodePodCrashLoop, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Container crash-looping",
		Message:  "Pod {pod}: container {container} is in CrashLoopBackOff ({restarts} restarts){detail}",
		NextStep: "kubectl logs {pod} -n {namespace} -c {container} --previous"},
}
