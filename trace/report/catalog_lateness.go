package report

// Codes of probes and DNS queries that timed out where a timeout is not
// evidence: the collector on that node ran late (a starved node), or its
// time ran out before it could try again. They are emitted with status
// unknown: the layer is undetermined on that node, not failed.
const (
	CodeDPProbeInconclusive  = "DP060"
	CodeRTProbeInconclusive  = "RT026"
	CodeDNSLiveInconclusive  = "DNS024"
	lateCollectorNextStepCmd = "kubectl describe node {node}  # a node short of CPU answers late: trace again when it is less busy"
)

var lateCatalog = []CheckSpec{
	{Code: CodeDPProbeInconclusive, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Frontend probe inconclusive on a slow node",
		Message:  "{frontend} timed out, but {why}; the node's Service datapath is not judged by these probes",
		NextStep: lateCollectorNextStepCmd},
	{Code: CodeRTProbeInconclusive, Layer: LayerRoute, Severity: SeverityWarning, Title: "Endpoint probe inconclusive on a slow node",
		Message:  "connections to {targets} timed out, but {why}; whether the packets get to the Pods is not judged from this node",
		NextStep: lateCollectorNextStepCmd},
	{Code: CodeDNSLiveInconclusive, Layer: LayerDNS, Severity: SeverityWarning, Title: "DNS query inconclusive on a slow node",
		Message:  "the {transport} query for {name} {type} to {server} timed out ({error}), but {why}; the DNS server is not judged by this query",
		NextStep: lateCollectorNextStepCmd},
}
