package report

// EPS codes judge the EndpointSlices and, read on the nodes, whether the
// endpoint Pods listen and accept (endpoints layer).
const (
	CodeEpsCounts           = "EPS001"
	CodeEpsNoSlices         = "EPS002"
	CodeEpsNoReady          = "EPS003"
	CodeEpsTerminatingOnly  = "EPS004"
	CodeEpsNotReady         = "EPS005"
	CodeEpsForeignManager   = "EPS006"
	CodeEpsPodGone          = "EPS007"
	CodeEpsGhostIP          = "EPS008"
	CodeEpsReadyPodMissing  = "EPS009"
	CodeEpsFamilyMissing    = "EPS010"
	CodeEpsTargetUnverified = "EPS011"
	CodeEpsUnownedIP        = "EPS017"

	CodeEpsRefused         = "EPS012"
	CodeEpsListening       = "EPS013"
	CodeEpsLoopbackOnly    = "EPS014"
	CodeEpsNotListening    = "EPS015"
	CodeEpsSocketsUnread   = "EPS016"
	CodeEpsAcceptOverflow  = "EPS018"
	CodeEpsOtherFamilyOnly = "EPS019"
)

var epsCatalog = []CheckSpec{
	// EPS: EndpointSlices.
	{Code: CodeEpsCounts, Layer: LayerEndpoints, Severity: SeverityInfo, Title: "Endpoints",
		Message:  "{total} endpoints in {slices} EndpointSlice(s): {ready} ready, {serving} serving, {terminating} terminating",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o wide"},
	{Code: CodeEpsNoSlices, Layer: LayerEndpoints, Severity: SeverityError, Title: "No EndpointSlices",
		Message:  "no EndpointSlice carries the label kubernetes.io/service-name={service}{why}",
		NextStep: "kubectl get endpointslices -n {namespace} --show-labels"},
	{Code: CodeEpsNoReady, Layer: LayerEndpoints, Severity: SeverityError, Title: "No ready endpoints", Symptom: true,
		Message:  "no ready or serving endpoint for {port}: {impact}",
		NextStep: "kubectl get pods -n {namespace} -l {selectorArg} -o wide"},
	{Code: CodeEpsTerminatingOnly, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Only terminating endpoints",
		Message:  "no ready endpoint for {port}; kube-proxy falls back to {count} serving but terminating endpoints until they are gone",
		NextStep: "kubectl get pods -n {namespace} -l {selectorArg} -o wide"},
	{Code: CodeEpsNotReady, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Endpoints not ready",
		Message:  "{count} of {total} endpoints are not ready and get no traffic",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o wide"},
	{Code: CodeEpsForeignManager, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "EndpointSlice not managed by the controller",
		Message:  "{count} EndpointSlices are managed by {managers}, not endpointslice-controller.k8s.io: {slices}",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -L endpointslice.kubernetes.io/managed-by"},
	{Code: CodeEpsPodGone, Layer: LayerEndpoints, Severity: SeverityError, Title: "Endpoint Pod gone",
		Message:  "{count} endpoints point at Pods that no longer exist: {endpoints}",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o yaml"},
	{Code: CodeEpsUnownedIP, Layer: LayerEndpoints, Severity: SeverityError, Title: "Endpoint IP owned by no Pod",
		Message:  "{count} endpoint(s) name no Pod and sit in a node's Pod CIDR ({cidrs}), but no Pod has that IP: {ips}; traffic sent there goes nowhere (a hand-made EndpointSlice left behind, or its Pod replaced)",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o yaml"},
	{Code: CodeEpsGhostIP, Layer: LayerEndpoints, Severity: SeverityError, Title: "Ghost endpoint IP",
		Message:  "{count} endpoints carry an IP their Pod no longer has: {endpoints}",
		NextStep: "kubectl get pods -n {namespace} -o wide"},
	{Code: CodeEpsReadyPodMissing, Layer: LayerEndpoints, Severity: SeverityError, Title: "Ready Pod missing from EndpointSlices",
		Message:  "{count} Ready Pods match the selector but are in no EndpointSlice: {pods}",
		NextStep: "kubectl get events -n {namespace} --field-selector involvedObject.name={service}"},
	{Code: CodeEpsFamilyMissing, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "IP family without endpoints",
		Message:  "the Service has IP family {family}, but no EndpointSlice of addressType {family} has a ready endpoint: clients using {family} fail",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service}"},
	{Code: CodeEpsTargetUnverified, Layer: LayerEndpoints, Severity: SeverityInfo, Title: "Endpoint Pods not verified",
		Message:  "{count} endpoint Pods outside the selector were not looked up (limit {limit}): {endpoints}",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o yaml"},
	{Code: CodeEpsAcceptOverflow, Layer: LayerEndpoints, Severity: SeverityWarning, Title: "Accept queue overflowed",
		Message:  "pod {pod}'s network namespace dropped {overflows} connection attempt(s) on a full accept queue since it started (TcpExt ListenOverflows; ListenDrops {drops}), and {waiting} connection(s) wait to be accepted on port {port} now: under load, connections time out while the Pod is Ready and its probes pass",
		NextStep: "kubectl exec -n {namespace} {pod} -- cat /proc/net/netstat"},
	{Code: CodeEpsRefused, Layer: LayerEndpoints, Severity: SeverityError, Title: "Endpoint refuses connections",
		Message:  "{targets} refused a connection: nothing listens on the target port (wrong port, or the app listens only on 127.0.0.1){hint}",
		NextStep: "kubectl get pods -n {namespace} -o wide"},
	// EPS013–EPS016 come from the endpoint Pods' own socket tables, read on
	// their node by the collector (sockets section, hostPID). When they
	// explain a refused probe, they stand for it and EPS012 is not repeated.
	{Code: CodeEpsListening, Layer: LayerEndpoints, Severity: SeverityInfo, Title: "Endpoints listen",
		Message:  "{count} endpoint port(s) have a listener on the Pod IP or a wildcard address: {targets}",
		NextStep: nodeSvcCmd},
	{Code: CodeEpsLoopbackOnly, Layer: LayerEndpoints, Severity: SeverityError, Title: "Listens only on loopback",
		Message:  "pod {pod} listens on {port}/{protocol} only on {addresses}, so connections to its Pod IP {ip} are refused: the app must listen on 0.0.0.0 (or the Pod IP){probe}",
		NextStep: "kubectl describe pod {pod} -n {namespace}"},
	{Code: CodeEpsOtherFamilyOnly, Layer: LayerEndpoints, Severity: SeverityError, Title: "Listens on one IP family only",
		Message: "pod {pod} listens on {port}/{protocol} only on {addresses} ({listenFamily} only), so connections to its {family} endpoint {target} are refused: " +
			"the app must listen on [::] (both families, net.ipv6.bindv6only=0) or on its {family} address too, or the Service must not offer {family}{probe}",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath='{.spec.ipFamilies}'"},
	{Code: CodeEpsNotListening, Layer: LayerEndpoints, Severity: SeverityError, Title: "Nothing listens on the target port",
		Message:  "nothing in pod {pod} listens on {target} (the EndpointSlice's port{portName}); it listens on {listening}: the Service's targetPort and the app's port differ{probe}",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath='{.spec.ports}'"},
	{Code: CodeEpsSocketsUnread, Layer: LayerEndpoints, Severity: SeverityInfo, Title: "Sockets not read",
		Message:  "the listening sockets of {pods} were not read: {reason}",
		NextStep: nodeSvcCmd},
}
