package report

// SVC codes judge the Service object (service layer).
const (
	CodeSvcNotFound         = "SVC001"
	CodeSvcType             = "SVC002"
	CodeSvcHeadless         = "SVC003"
	CodeSvcExternalName     = "SVC004"
	CodeSvcNoSelector       = "SVC005"
	CodeSvcSelectorNoPods   = "SVC006"
	CodeSvcProxyName        = "SVC007"
	CodeSvcSessionAffinity  = "SVC008"
	CodeSvcETPLocal         = "SVC009"
	CodeSvcITPLocal         = "SVC010"
	CodeSvcTopology         = "SVC011"
	CodeSvcTopologyNoHints  = "SVC012"
	CodeSvcPublishNotReady  = "SVC013"
	CodeSvcIPFamilies       = "SVC014"
	CodeSvcLBPending        = "SVC015"
	CodeSvcSelectorMatches  = "SVC016"
	CodeSvcPortFilterAbsent = "SVC017"
	CodeSvcSlicesIgnored    = "SVC018"
	CodeSvcNamespaceMissing = "SVC019"
	CodeSvcSeveralWorkloads = "SVC020"
	CodeSvcSourceRanges     = "SVC021"
)

var svcCatalog = []CheckSpec{
	// SVC: the Service object.
	{Code: CodeSvcNotFound, Layer: LayerService, Severity: SeverityError, Title: "Service not found",
		Message:  "Service {service} not found in namespace {namespace}{closest}",
		NextStep: "kubectl get services -n {namespace}"},
	{Code: CodeSvcType, Layer: LayerService, Severity: SeverityInfo, Title: "Service type",
		Message:  "{type} Service: {applies}",
		NextStep: "kubectl get service {service} -n {namespace} -o wide"},
	{Code: CodeSvcHeadless, Layer: LayerService, Severity: SeverityInfo, Title: "Headless Service",
		Message:  "headless Service (clusterIP: None): no virtual IP and no kube-proxy rules; DNS returns the ready Pod IPs and clients connect to them directly",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o wide"},
	{Code: CodeSvcExternalName, Layer: LayerService, Severity: SeverityInfo, Title: "ExternalName Service",
		Message:  "ExternalName Service: cluster DNS answers {fqdn} with a CNAME to {externalName}; there are no endpoints and no kube-proxy rules",
		NextStep: "kubectl run -it --rm dnscheck --image=busybox:1.36 --restart=Never -- nslookup {fqdn}"},
	{Code: CodeSvcNoSelector, Layer: LayerService, Severity: SeverityInfo, Title: "No selector",
		Message:  "the Service has no selector: no controller creates its EndpointSlices, they must be managed by hand or by another controller ({slices} found)",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service}"},
	{Code: CodeSvcSelectorNoPods, Layer: LayerService, Severity: SeverityError, Title: "Selector matches no Pods",
		Message:  "selector {selector} matches no Pods in namespace {namespace}{closest}{elsewhere}",
		NextStep: "kubectl get pods -n {namespace} --show-labels"},
	{Code: CodeSvcProxyName, Layer: LayerService, Severity: SeverityWarning, Title: "Ignored by kube-proxy",
		Message:  "label service.kubernetes.io/service-proxy-name={proxyName}: kube-proxy ignores a Service with this label, whatever its value{owner}",
		NextStep: "kubectl get service {service} -n {namespace} --show-labels"},
	{Code: CodeSvcSessionAffinity, Layer: LayerService, Severity: SeverityInfo, Title: "Session affinity",
		Message:  "sessionAffinity ClientIP with timeout {timeout}s: a client keeps reaching the same endpoint while it sends traffic within the timeout",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath='{.spec.sessionAffinityConfig}'"},
	{Code: CodeSvcETPLocal, Layer: LayerService, Severity: SeverityWarning, Title: "externalTrafficPolicy Local",
		Message:  "externalTrafficPolicy Local: external traffic arriving on {count} of {total} nodes is dropped there, because they have no local endpoint kube-proxy can use (ready, or serving while terminating){lbNote}",
		NextStep: "kubectl get pods -n {namespace} -l {selectorArg} -o wide"},
	{Code: CodeSvcITPLocal, Layer: LayerService, Severity: SeverityWarning, Title: "internalTrafficPolicy Local",
		Message:  "internalTrafficPolicy Local: in-cluster clients on {count} of {total} nodes get no answer, because those nodes have no local endpoint kube-proxy can use (ready, or serving while terminating)",
		NextStep: "kubectl get pods -n {namespace} -l {selectorArg} -o wide"},
	{Code: CodeSvcTopology, Layer: LayerService, Severity: SeverityInfo, Title: "Topology-aware routing",
		Message:  "{setting}: {hinted} of {total} endpoints carry hints; kube-proxy prefers endpoints by those hints",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o yaml"},
	{Code: CodeSvcTopologyNoHints, Layer: LayerService, Severity: SeverityWarning, Title: "Topology hints missing",
		Message:  "{setting}, but {unhinted} of {total} ready endpoints have no {hintKind} hint, so kube-proxy ignores hints and spreads traffic over all endpoints",
		NextStep: "kubectl get events -n {namespace} --field-selector involvedObject.name={service}"},
	{Code: CodeSvcPublishNotReady, Layer: LayerService, Severity: SeverityInfo, Title: "publishNotReadyAddresses",
		Message:  "publishNotReadyAddresses is true: Pods get traffic and DNS records before they are Ready",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath='{.spec.publishNotReadyAddresses}'"},
	{Code: CodeSvcIPFamilies, Layer: LayerService, Severity: SeverityInfo, Title: "IP families",
		Message:  "IP families {families} (policy {policy})",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath='{.spec.clusterIPs}'"},
	{Code: CodeSvcLBPending, Layer: LayerService, Severity: SeverityWarning, Title: "Load balancer pending",
		Message:  "type LoadBalancer but status.loadBalancer has no ingress address yet: only the NodePorts work",
		NextStep: "kubectl describe service {service} -n {namespace}"},
	{Code: CodeSvcSourceRanges, Layer: LayerService, Severity: SeverityWarning, Title: "Source ranges drop in-cluster clients",
		Message:  "loadBalancerSourceRanges {ranges}: kube-proxy filters the load-balancer IP on every node too, so {who} get no answer when they connect to the load-balancer IP or the name that resolves to it; the ClusterIP is not filtered",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath={.spec.loadBalancerSourceRanges}"},
	{Code: CodeSvcSeveralWorkloads, Layer: LayerService, Severity: SeverityWarning, Title: "Selector spans several workloads",
		Message:  "the selector {selector} matches the Pods of {count} workloads: {workloads}; each gets a share of the traffic, so clients reach the wrong app part of the time unless that is intended",
		NextStep: "kubectl get pods -n {namespace} -l {selector} -L app.kubernetes.io/name -o wide"},
	{Code: CodeSvcSelectorMatches, Layer: LayerService, Severity: SeverityInfo, Title: "Selector matches Pods",
		Message:  "selector {selector} matches {count} Pods",
		NextStep: "kubectl get pods -n {namespace} -l {selectorArg} -o wide"},
	{Code: CodeSvcSlicesIgnored, Layer: LayerService, Severity: SeverityError, Title: "EndpointSlices ignored by kube-proxy",
		Message:  "{count} of {total} EndpointSlices carry the label service.kubernetes.io/headless ({slices}): kube-proxy watches only slices without it, so it ignores their {endpoints} endpoint(s){impact}",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -L service.kubernetes.io/headless,endpointslice.kubernetes.io/managed-by"},
	{Code: CodeSvcNamespaceMissing, Layer: LayerService, Severity: SeverityError, Title: "Namespace not found",
		Message:  "namespace {namespace} does not exist, so neither does Service {service} in it{closest}",
		NextStep: "kubectl get namespaces"},
	{Code: CodeSvcPortFilterAbsent, Layer: LayerService, Severity: SeverityError, Title: "Port not in Service",
		Message:  "--port {port} matches no port of Service {service} (ports: {ports})",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath='{.spec.ports}'"},
}
