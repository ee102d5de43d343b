package trace

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// CheckSpec is a catalog entry. Code is stable: never renumber or reuse one;
// retire a code by leaving its entry with Retired set. Message and NextStep are
// templates whose {placeholders} are filled from Args when a check is emitted.
type CheckSpec struct {
	Code     string
	Layer    LayerName // "" for codes that can appear in any layer (API…)
	Severity Severity
	Title    string
	Message  string
	NextStep string
	// Symptom marks a finding that says that traffic fails but not why (no
	// ready endpoints); the verdict prefers a non-symptom finding as the cause.
	Symptom bool
}

// Args fill a template's {placeholders}.
type Args map[string]string

// Catalog codes. Layer prefixes: API (any layer: the API could not be read),
// SVC and PRT (service), EPS and POD (endpoints), DNS (dns). Issue 5 adds DP…,
// CT…, RT… and NP… for the node layers: add a constant and an entry below.
const (
	CodeAPIForbidden = "API001"
	CodeAPIError     = "API002"
	CodeAPINodes     = "API003"
	CodeAPIEvents    = "API004"

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

	CodePortNumeric         = "PRT001"
	CodePortNameUnresolved  = "PRT002"
	CodePortProtocol        = "PRT003"
	CodePortMissingInSlices = "PRT004"
	CodePortNamedResolved   = "PRT005"
	CodePortSliceProtocol   = "PRT006"

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

	CodePodPhase          = "POD001"
	CodePodNotReady       = "POD002"
	CodePodReadinessGates = "POD003"
	CodePodNodeNotReady   = "POD004"
	CodePodTerminating    = "POD005"
	CodePodCrashLoop      = "POD006"

	CodeDNSExpected      = "DNS001"
	CodeDNSNoClusterDNS  = "DNS002"
	CodeDNSNoEndpoints   = "DNS003"
	CodeDNSLiveQuery     = "DNS004"
	CodeDNSHeadlessEmpty = "DNS005"
	CodeDNSExternalIP    = "DNS006"
	CodeDNSClusterDNSOK  = "DNS007"
)

// Catalog is every check svctrace can emit, by code.
var Catalog = buildCatalog(slices.Concat(apiSideCatalog, nodeCatalog, policyCatalog))

// apiSideCatalog are the codes of the layers the API alone decides.
var apiSideCatalog = []CheckSpec{
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
		Message:  "selector {selector} matches no Pods in namespace {namespace}{closest}",
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
		Message:  "{setting}, but {unhinted} of {total} ready endpoints have no zone hint, so kube-proxy ignores hints and spreads traffic over all endpoints",
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

	// DNS (API side; the live query needs a node).
	{Code: CodeDNSExpected, Layer: LayerDNS, Severity: SeverityInfo, Title: "Expected DNS answer",
		Message:  "{fqdn} should resolve to {answer}",
		NextStep: "kubectl run -it --rm dnscheck --image=busybox:1.36 --restart=Never -- nslookup {fqdn}"},
	{Code: CodeDNSNoClusterDNS, Layer: LayerDNS, Severity: SeverityWarning, Title: "Cluster DNS Service not found",
		Message:  "Service kube-system/kube-dns not found: Pods cannot resolve {fqdn} unless the cluster DNS runs under another name",
		NextStep: "kubectl get services -n kube-system"},
	{Code: CodeDNSNoEndpoints, Layer: LayerDNS, Severity: SeverityError, Title: "Cluster DNS has no ready endpoints",
		Message:  "kube-system/kube-dns has no ready endpoint ({total} endpoints): no name in the cluster resolves",
		NextStep: "kubectl get pods -n kube-system -l k8s-app=kube-dns -o wide"},
	{Code: CodeDNSLiveQuery, Layer: LayerDNS, Severity: SeverityInfo, Title: "Live DNS query",
		Message:  "the live query of {fqdn} runs on a node: {reason}",
		NextStep: "kubectl run -it --rm dnscheck --image=busybox:1.36 --restart=Never -- nslookup {fqdn}"},
	{Code: CodeDNSHeadlessEmpty, Layer: LayerDNS, Severity: SeverityWarning, Title: "Headless name has no records",
		Message:  "headless Service with no ready endpoint: {fqdn} has no A/AAAA records (NXDOMAIN)",
		NextStep: "kubectl get pods -n {namespace} -l {selectorArg} -o wide"},
	{Code: CodeDNSExternalIP, Layer: LayerDNS, Severity: SeverityWarning, Title: "ExternalName is an IP",
		Message:  "externalName {externalName} is an IP address: DNS returns a CNAME to a name that looks like an IP, which most clients cannot resolve",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath='{.spec.externalName}'"},
	{Code: CodeDNSClusterDNSOK, Layer: LayerDNS, Severity: SeverityInfo, Title: "Cluster DNS",
		Message:  "kube-system/kube-dns {clusterIPs} has {ready} ready endpoints",
		NextStep: "kubectl get pods -n kube-system -l k8s-app=kube-dns -o wide"},
}

func buildCatalog(specs []CheckSpec) map[string]CheckSpec {
	m := make(map[string]CheckSpec, len(specs))
	for _, s := range specs {
		if _, dup := m[s.Code]; dup {
			panic("trace: duplicate catalog code " + s.Code) // caught by TestCatalog at build time
		}
		m[s.Code] = s
	}
	return m
}

// CatalogCodes returns every code, sorted.
func CatalogCodes() []string {
	codes := make([]string, 0, len(Catalog))
	for c := range Catalog {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}

// statusFor maps a finding's severity to its status.
func statusFor(s Severity) Status {
	switch s {
	case SeverityError:
		return StatusFail
	case SeverityWarning:
		return StatusWarn
	default:
		return StatusPass
	}
}

// NewCheck emits the catalog entry code with its templates filled from args.
// An unknown code panics: it is a programming error that the catalog test and
// every unit test catch.
func NewCheck(code string, args Args, fields ...Field) Check {
	spec, ok := Catalog[code]
	if !ok {
		panic(fmt.Sprintf("trace: check code %q is not in the catalog", code))
	}
	c := Check{
		Code:     spec.Code,
		Severity: spec.Severity,
		Status:   statusFor(spec.Severity),
		Title:    spec.Title,
		Message:  fill(spec.Message, args),
		NextStep: fill(spec.NextStep, args),
	}
	if len(fields) > 0 {
		c.Evidence = &Evidence{Fields: fields}
	}
	return c
}

// fill replaces {key} with args[key]. Keys that are not in args stay as they
// are, so kubectl jsonpath braces in next steps survive.
func fill(tmpl string, args Args) string {
	if len(args) == 0 {
		return tmpl
	}
	pairs := make([]string, 0, 2*len(args))
	for k, v := range args {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}
