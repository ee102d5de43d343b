package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// CheckSpec is a catalog entry. Code is stable: never renumber or reuse one;
// a code no judge emits any more keeps its entry. Message and NextStep are
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
// SVC and PRT (service), EPS and POD (endpoints), DNS (dns), DP (datapath),
// CT (conntrack), RT (route) and NP (policy): add a constant and an entry.
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
var Catalog = buildCatalog(slices.Concat(apiSideCatalog, nodeCatalog, policyCatalog, failModeCatalog, clientCatalog, lateCatalog))

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

// Node-layer catalog codes: what a collector Pod saw on a node, judged
// against the Service and its EndpointSlices. They are part of the one
// Catalog, so docs, golden files and bots see a single list.
const (
	CodeNodeCollectorFailed       = "DP001"
	CodeDPOwner                   = "DP002"
	CodeDPProxyUnreachable        = "DP003"
	CodeDPProxyUnhealthy          = "DP004"
	CodeDPProxyStaleSync          = "DP005"
	CodeDPNoRules                 = "DP006"
	CodeDPMissingEndpoints        = "DP007"
	CodeDPStaleEndpoints          = "DP008"
	CodeDPWrongDNATPort           = "DP009"
	CodeDPUnequalShares           = "DP010"
	CodeDPAffinityMissing         = "DP011"
	CodeDPAffinityExtra           = "DP012"
	CodeDPETPLocalNoLocal         = "DP013"
	CodeDPLeftovers               = "DP014"
	CodeDPRulesMatch              = "DP015"
	CodeDPRejectWithEPs           = "DP016"
	CodeDPIgnoredByProxy          = "DP017"
	CodeDPEBPFOwner               = "DP018"
	CodeDPClusterIPFails          = "DP019"
	CodeDPNodePortMissing         = "DP020"
	CodeDPSectionError            = "DP021"
	CodeDPRejectNoEndpoints       = "DP022"
	CodeDPAffinityTimeout         = "DP023"
	CodeDPAffinityOK              = "DP024"
	CodeDPEBPFUnreadable          = "DP025"
	CodeDPIPVSDeprecated          = "DP026"
	CodeDPDroppedByDesign         = "DP027"
	CodeDPExternalMissing         = "DP028"
	CodeDPExternalWrong           = "DP029"
	CodeDPNodePortFails           = "DP030"
	CodeDPHealthCheck             = "DP031"
	CodeDPHealthCheckOK           = "DP032"
	CodeDPIPVSNotOnDummy          = "DP033"
	CodeDPIPVSSetReject           = "DP034"
	CodeDPIPVSSetMissing          = "DP035"
	CodeDPIPVSSysctl              = "DP036"
	CodeDPIPVSDraining            = "DP037"
	CodeDPIPVSExternalRealServers = "DP038"
	CodeDPIPVSETPLocalFallback    = "DP039"
	CodeDPEBPFLayoutUnknown       = "DP040"
	CodeDPEBPFInactiveBackends    = "DP041"
	CodeDPEBPFMaglevTable         = "DP042"
	CodeDPEBPFBrokenSlot          = "DP043"
	CodeDPEBPFExternal            = "DP044"
	CodeDPEBPFQuarantined         = "DP045"
	CodeDPEBPFMaintenance         = "DP046"
	CodeDPSyncPending             = "DP059"
	CodeDPIPVSExternalMissing     = "DP063"
	CodeDPIPVSNodePortPartial     = "DP064"
	CodeDPIPVSITPLocalFallback    = "DP065"

	CodeCTHealthy      = "CT001"
	CodeCTInsertFailed = "CT002"
	CodeCTDrops        = "CT003"
	CodeCTTableFull    = "CT004"
	CodeCTStaleFlows   = "CT005"
	CodeCTSkew         = "CT006"
	CodeCTUnreadable   = "CT007"
	CodeCTUnNATedUDP   = "CT008"

	CodeRTHealthy        = "RT001"
	CodeRTNoRoute        = "RT002"
	CodeRTDeviceDown     = "RT003"
	CodeRTForwardOff     = "RT004"
	CodeRTRPFilter       = "RT005"
	CodeRTUnreadable     = "RT006"
	CodeRTPodTimeout     = "RT007"
	CodeRTPodsReached    = "RT008"
	CodeRTPolicyExplains = "RT009"
	// CodeRTPolicyUndetermined: probes failed where the policies' answer
	// for the prober is undetermined (RT031 is the client's own).
	CodeRTPolicyUndetermined = "RT030"

	CodeEpsRefused         = "EPS012"
	CodeEpsListening       = "EPS013"
	CodeEpsLoopbackOnly    = "EPS014"
	CodeEpsNotListening    = "EPS015"
	CodeEpsSocketsUnread   = "EPS016"
	CodeEpsAcceptOverflow  = "EPS018"
	CodeEpsOtherFamilyOnly = "EPS019"

	CodeDNSLiveOK       = "DNS010"
	CodeDNSLiveWrong    = "DNS011"
	CodeDNSLiveNXDomain = "DNS012"
	CodeDNSLiveFailed   = "DNS013"
	CodeDNSLiveTCPDiff  = "DNS014"
	CodeDNSLiveSlow     = "DNS015"
	// CodeDNSExternalUnresolved: an ExternalName's CNAME comes back with no
	// address for its target.
	CodeDNSExternalUnresolved = "DNS016"
)

// nodeSvcCmd is the next step that re-runs svctrace on one node with the
// full evidence.
const nodeSvcCmd = "kubectl svctrace {service} -n {namespace} --node {node} -o yaml"

var nodeCatalog = []CheckSpec{
	{Code: CodeNodeCollectorFailed, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Node not inspected",
		Message:  "node {node} could not be inspected: {reason}; its datapath, conntrack and route layers are unknown",
		NextStep: "kubectl describe node {node}"},
	{Code: CodeDPOwner, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Datapath owner",
		Message:  "{owner}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPProxyUnreachable, Layer: LayerDatapath, Severity: SeverityWarning, Title: "kube-proxy not answering",
		Message:  "kube-proxy does not answer on {address} ({error}); it may be down, or bound elsewhere",
		NextStep: "kubectl get pods -n kube-system -o wide --field-selector spec.nodeName={node}"},
	{Code: CodeDPProxyUnhealthy, Layer: LayerDatapath, Severity: SeverityError, Title: "kube-proxy unhealthy",
		Message:  "kube-proxy /healthz reports unhealthy (last update {lastUpdated}, now {currentTime})",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPProxyStaleSync, Layer: LayerDatapath, Severity: SeverityWarning, Title: "kube-proxy sync stale",
		Message:  "kube-proxy last synced its rules {age} ago while changes are queued since {queuedAge}; new endpoints are not programmed",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPNoRules, Layer: LayerDatapath, Severity: SeverityError, Title: "No rules for the Service",
		Message:  "{datapath} holds no rules for {port}: {why}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPMissingEndpoints, Layer: LayerDatapath, Severity: SeverityError, Title: "Endpoints missing from the rules",
		Message:  "{datapath} for {port} lacks {count} endpoint(s) the EndpointSlices list as usable: {endpoints}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPStaleEndpoints, Layer: LayerDatapath, Severity: SeverityError, Title: "Stale endpoints in the rules",
		Message:  "{datapath} for {port} still sends traffic to {count} endpoint(s) that are not usable any more: {endpoints} ({programmer} has not synced since they changed)",
		NextStep: nodeSvcCmd},
	{Code: CodeDPWrongDNATPort, Layer: LayerDatapath, Severity: SeverityError, Title: "Wrong DNAT target",
		Message:  "{datapath} for {port} rewrites to {got}, but the EndpointSlice says {want}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPUnequalShares, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Unequal endpoint shares",
		Message:  "{datapath} for {port} gives endpoints unequal shares of new connections: {shares}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPAffinityMissing, Layer: LayerDatapath, Severity: SeverityError, Title: "Session affinity not programmed",
		Message:  "the Service asks for sessionAffinity ClientIP ({timeout}s), but {datapath} for {port} has no affinity rules",
		NextStep: nodeSvcCmd},
	{Code: CodeDPAffinityExtra, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Stale session affinity",
		Message:  "{datapath} for {port} keeps session-affinity rules ({detail}) that the Service no longer asks for",
		NextStep: nodeSvcCmd},
	{Code: CodeDPETPLocalNoLocal, Layer: LayerDatapath, Severity: SeverityWarning, Title: "NodePort dropped on this node",
		Message:  "externalTrafficPolicy Local and no local ready endpoint: external traffic to NodePort {nodePort} on this node is dropped",
		NextStep: "kubectl get pods -n {namespace} -o wide --field-selector spec.nodeName={node}"},
	{Code: CodeDPLeftovers, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Leftover rules of another datapath",
		Message:  "{datapath} is active, but {other} also holds kube-proxy state ({evidence}); an admin listing the wrong one sees stale or no rules",
		NextStep: nodeSvcCmd},
	{Code: CodeDPRulesMatch, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Rules match the API",
		Message:  "{datapath} programs {port} with the {count} endpoint(s) the EndpointSlices say it should",
		NextStep: nodeSvcCmd},
	{Code: CodeDPRejectWithEPs, Layer: LayerDatapath, Severity: SeverityError, Title: "Service rejected despite endpoints",
		Message:  "{datapath} rejects {port} as having no endpoints, but the EndpointSlices list usable ones",
		NextStep: nodeSvcCmd},
	{Code: CodeDPIgnoredByProxy, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Not kube-proxy's Service",
		Message:  "no kube-proxy rules, as expected: the Service carries service.kubernetes.io/service-proxy-name",
		NextStep: nodeSvcCmd},
	{Code: CodeDPEBPFOwner, Layer: LayerDatapath, Severity: SeverityInfo, Title: "eBPF datapath",
		Message:  "{owner} owns the Service datapath; kube-proxy rules are not expected ({detail})",
		NextStep: nodeSvcCmd},
	{Code: CodeDPClusterIPFails, Layer: LayerDatapath, Severity: SeverityError, Title: "ClusterIP does not answer",
		Message:  "{frontend} fails ({error}) while {okCount} endpoint(s) answer directly: the node's Service datapath is at fault",
		NextStep: nodeSvcCmd},
	{Code: CodeDPNodePortMissing, Layer: LayerDatapath, Severity: SeverityError, Title: "NodePort not programmed",
		Message:  "{datapath} has no rule for NodePort {nodePort} of {port}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPSectionError, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Datapath not readable",
		Message:  "the collector could not read {section}: {error}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPEBPFUnreadable, Layer: LayerDatapath, Severity: SeverityWarning, Title: "eBPF maps not decoded",
		Message:  "{datapath} owns the Service on this node but the collector could not read its maps ({error}); the ports it could not read are not judged",
		NextStep: "kubectl -n kube-system exec ds/cilium -- cilium-dbg service list"},
	{Code: CodeDPEBPFLayoutUnknown, Layer: LayerDatapath, Severity: SeverityWarning, Title: "eBPF map layout unknown",
		Message:  "{datapath} owns the Service datapath on this node, but svctrace {detail}; no kube-proxy verdict applies and this node's ports are not judged",
		NextStep: "kubectl -n kube-system exec ds/cilium -- cilium-dbg service list"},
	{Code: CodeDPEBPFInactiveBackends, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Backends kept out of selection",
		Message:  "{datapath} keeps {count} backend(s) of {port} in {frontend} but selects none of them for new connections: {backends}",
		NextStep: "kubectl -n kube-system exec ds/cilium -- cilium-dbg service list"},
	{Code: CodeDPEBPFMaglevTable, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Maglev table not usable",
		Message:  "{datapath} load-balances {port} ({frontend}) with Maglev, but {detail}: the endpoint shares are judged from the backend slots instead",
		NextStep: "kubectl -n kube-system exec ds/cilium -- cilium-dbg bpf lb maglev list"},
	{Code: CodeDPEBPFBrokenSlot, Layer: LayerDatapath, Severity: SeverityError, Title: "Backend slot leads nowhere",
		Message:  "{datapath} {frontend} for {port}: {detail}; new connections that pick that slot find no backend and are dropped",
		NextStep: "kubectl -n kube-system exec ds/cilium -- cilium-dbg bpf lb list"},
	{Code: CodeDPEBPFExternal, Layer: LayerDatapath, Severity: SeverityError, Title: "eBPF external frontend differs from the API",
		Message:  "{datapath} {frontend} for {port} {detail}",
		NextStep: "kubectl -n kube-system exec ds/cilium -- cilium-dbg service list"},
	{Code: CodeDPEBPFQuarantined, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Backends quarantined by the health checker",
		Message:  "{datapath} sends no new connections of {port} to {endpoints}, which the EndpointSlices list as ready: its health checker quarantined them",
		NextStep: "kubectl -n kube-system exec ds/cilium -- cilium-dbg service list"},
	{Code: CodeDPEBPFMaintenance, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Backends in maintenance",
		Message:  "{datapath} sends no new connections of {port} to {endpoints}, which the EndpointSlices list as ready: they are in maintenance (set through its service API)",
		NextStep: "kubectl -n kube-system exec ds/cilium -- cilium-dbg service list"},
	{Code: CodeDPSyncPending, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Datapath not synced yet",
		Message:  "{port} on {datapath}: {what}, but {programmer} and the API may be at different points of the Service's latest change ({why}); this clears on its own within a sync",
		NextStep: "kubectl svctrace {service} -n {namespace} --node {node} (a few seconds later; if it still shows this, read {programmer}'s log)"},
	{Code: CodeDPIPVSDeprecated, Layer: LayerDatapath, Severity: SeverityInfo, Title: "IPVS mode deprecated",
		Message:  "kube-proxy runs in IPVS mode; kube-proxy v1.37 says: the ipvs proxier has been deprecated and will be disabled by default in Kubernetes 1.40 and removed in Kubernetes 1.43, migrate to the nftables proxier",
		NextStep: "kubectl -n kube-system get configmap kube-proxy -o yaml"},
	{Code: CodeDPNodePortFails, Layer: LayerDatapath, Severity: SeverityError, Title: "NodePort does not answer",
		Message:  "{frontend} fails from {from} while {okCount} endpoint(s) its kube-proxy sends it to answer directly: this node's NodePort datapath is at fault",
		NextStep: nodeSvcCmd},
	{Code: CodeDPHealthCheck, Layer: LayerDatapath, Severity: SeverityError, Title: "Health check node port disagrees",
		Message:  "kube-proxy's health check at {address} {detail}, but the EndpointSlices put {want} ready endpoint(s) on this node: load balancers steer by this answer",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o wide"},
	{Code: CodeDPHealthCheckOK, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Health check node port agrees",
		Message:  "kube-proxy's health check at {address} answers HTTP {status} for the {want} ready endpoint(s) on this node",
		NextStep: nodeSvcCmd},
	{Code: CodeDPExternalMissing, Layer: LayerDatapath, Severity: SeverityError, Title: "External path not programmed",
		Message:  "{datapath} has no external chain for {port}: NodePort, externalIP and load-balancer traffic on this node reaches no endpoint (externalTrafficPolicy {policy})",
		NextStep: nodeSvcCmd},
	{Code: CodeDPExternalWrong, Layer: LayerDatapath, Severity: SeverityError, Title: "External path differs from the API",
		Message:  "{datapath} sends NodePort, externalIP and load-balancer traffic for {port} ({chain}) {detail}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPDroppedByDesign, Layer: LayerDatapath, Severity: SeverityWarning, Title: "ClusterIP dropped here by design",
		Message:  "internalTrafficPolicy Local: {datapath} drops {port} for clients on this node by design, because none of the Service's endpoints that kube-proxy can use runs here ({how}); this is the policy working, not a datapath fault",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o wide"},
	{Code: CodeDPIPVSNotOnDummy, Layer: LayerDatapath, Severity: SeverityError, Title: "Service address not on kube-ipvs0",
		Message:  "{addresses} not bound on this node ({link}): traffic from Pods to it is routed away instead of delivered locally, so {datapath} never sees it for {port}",
		NextStep: "kubectl debug node/{node} -it --image=busybox -- ip addr show dev kube-ipvs0"},
	{Code: CodeDPIPVSSetReject, Layer: LayerDatapath, Severity: SeverityError, Title: "Service missing from kube-proxy's ipsets",
		Message:  "{entries}: the iptables chain KUBE-IPVS-FILTER rejects new connections to {port} on this node because the entry is missing",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPIPVSSetMissing, Layer: LayerDatapath, Severity: SeverityWarning, Title: "ipset entry missing",
		Message:  "kube-proxy's ipsets lack entries of {port}: {entries}",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPIPVSSysctl, Layer: LayerDatapath, Severity: SeverityWarning, Title: "IPVS sysctl not as kube-proxy sets it",
		Message:  "{settings}",
		NextStep: "kubectl debug node/{node} -it --image=busybox -- sysctl net.ipv4.vs"},
	{Code: CodeDPIPVSDraining, Layer: LayerDatapath, Severity: SeverityInfo, Title: "IPVS real servers draining",
		Message:  "{datapath} keeps {count} real server(s) of {port} at weight 0 (graceful termination: no new connections; kube-proxy deletes each once its connections end, checking every minute): {servers}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPIPVSExternalRealServers, Layer: LayerDatapath, Severity: SeverityError, Title: "External virtual server has wrong real servers",
		Message:  "{datapath} {frontend} of {port} (externalTrafficPolicy {policy}) lacks {missing} and holds {extra}",
		NextStep: nodeSvcCmd},
	{Code: CodeDPIPVSExternalMissing, Layer: LayerDatapath, Severity: SeverityError, Title: "External virtual server not programmed",
		Message:  "{datapath} has no virtual server {frontend} for {port}: traffic to it on this node is not load-balanced to any endpoint",
		NextStep: nodeSvcCmd},
	{Code: CodeDPIPVSNodePortPartial, Layer: LayerDatapath, Severity: SeverityWarning, Title: "NodePort missing on some node addresses (IPVS)",
		Message:  "{datapath} serves NodePort {nodePort} of {port} on {found} but has no virtual server on {missing}: clients using those addresses are not served (unless kube-proxy's nodePortAddresses leaves them out on purpose)",
		NextStep: nodeSvcCmd},
	{Code: CodeDPIPVSITPLocalFallback, Layer: LayerDatapath, Severity: SeverityWarning, Title: "ClusterIP falls back to other nodes (IPVS)",
		Message:  "internalTrafficPolicy Local and no local ready endpoint: kube-proxy's IPVS mode sends this node's ClusterIP traffic for {port} to other nodes' endpoints, because the Service is also reachable from outside (NodePort, externalIP or LB IP); iptables and nftables modes drop it",
		NextStep: "kubectl get endpointslices -n {namespace} -l kubernetes.io/service-name={service} -o wide"},
	{Code: CodeDPIPVSETPLocalFallback, Layer: LayerDatapath, Severity: SeverityWarning, Title: "NodePort falls back to other nodes (IPVS)",
		Message:  "externalTrafficPolicy Local and no local ready endpoint: kube-proxy's IPVS mode sends traffic to NodePort {nodePort} on this node to other nodes' endpoints without masquerading, so external clients get replies from Pod addresses and drop them (only Pods on this node are served)",
		NextStep: "kubectl get pods -n {namespace} -o wide --field-selector spec.nodeName={node}"},
	{Code: CodeDPRejectNoEndpoints, Layer: LayerDatapath, Severity: SeverityInfo, Title: "No-endpoint reject programmed",
		Message:  "{datapath} rejects {port}, as it should: the Service has no usable endpoint",
		NextStep: nodeSvcCmd},
	{Code: CodeDPAffinityTimeout, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Session affinity timeout differs",
		Message:  "{datapath} for {port} keeps a client on its endpoint for {programmed}s, but the Service's sessionAffinityConfig asks for {timeout}s: kube-proxy has not applied the Service's current timeout",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPAffinityOK, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Session affinity programmed",
		Message:  "session affinity ClientIP {timeout} s programmed on node {node} ({datapath}, {port})",
		NextStep: nodeSvcCmd},

	{Code: CodeCTHealthy, Layer: LayerConntrack, Severity: SeverityInfo, Title: "conntrack healthy",
		Message:  "conntrack {count}/{max} entries, no insert failures or drops during a {interval}ms sample; {flows} flow(s) to the Service",
		NextStep: nodeSvcCmd},
	{Code: CodeCTInsertFailed, Layer: LayerConntrack, Severity: SeverityWarning, Title: "conntrack insert failures",
		Message:  "insert_failed rose by {delta} during a {interval}ms sample (total {total}): connections are being lost to NAT races (clash_resolve {clash})",
		NextStep: nodeSvcCmd},
	{Code: CodeCTDrops, Layer: LayerConntrack, Severity: SeverityError, Title: "conntrack dropping",
		Message:  "conntrack dropped {delta} packets (early_drop {early}) during a {interval}ms sample: the table is full or under pressure",
		NextStep: nodeSvcCmd},
	{Code: CodeCTTableFull, Layer: LayerConntrack, Severity: SeverityWarning, Title: "conntrack table nearly full",
		Message:  "conntrack table at {percent}% ({count}/{max}); new connections are dropped when it fills",
		NextStep: nodeSvcCmd},
	{Code: CodeCTStaleFlows, Layer: LayerConntrack, Severity: SeverityWarning, Title: "Flows pinned to gone backends",
		Message:  "{count} conntrack flow(s) to the Service are still NATed to backends that are no longer endpoints: {backends}; those connections hang until they time out",
		NextStep: nodeSvcCmd},
	{Code: CodeCTSkew, Layer: LayerConntrack, Severity: SeverityInfo, Title: "Connection skew",
		Message:  "{share}% of {total} flows to {frontend} go to {backend}: long-lived connections stay where they were first balanced (kube-proxy balances new connections, not requests)",
		NextStep: nodeSvcCmd},
	{Code: CodeCTUnreadable, Layer: LayerConntrack, Severity: SeverityWarning, Title: "conntrack not readable",
		Message:  "the collector could not read conntrack: {error}",
		NextStep: nodeSvcCmd},

	{Code: CodeCTUnNATedUDP, Layer: LayerConntrack, Severity: SeverityError, Title: "UDP flows pinned past the Service",
		Message:  "{count} unreplied UDP conntrack flow(s) to {frontends} were never NATed: they were created before the Service had rules or endpoints, and every later datagram of those clients matches them and skips the Service's DNAT, so those clients get no answer while they keep sending (kube-proxy's conntrack cleanup should have removed them)",
		NextStep: "kubectl debug node/{node} -it --profile=netadmin --image=<an image with conntrack> -- conntrack -D -p udp --orig-dst <ClusterIP>"},
	{Code: CodeRTHealthy, Layer: LayerRoute, Severity: SeverityInfo, Title: "Routes to Pods",
		Message:  "routes to {count} Pod IP(s) via {devices}; ip_forward={forward}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTNoRoute, Layer: LayerRoute, Severity: SeverityError, Title: "No route to Pod",
		Message:  "no usable route to {ips}: {detail}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTDeviceDown, Layer: LayerRoute, Severity: SeverityError, Title: "Route device down",
		Message:  "the route to {ips} uses {device}, which is {state}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTForwardOff, Layer: LayerRoute, Severity: SeverityError, Title: "IP forwarding off",
		Message:  "net.ipv4.ip_forward={forward}: the node does not forward Service traffic to Pods{pods}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTRPFilter, Layer: LayerRoute, Severity: SeverityWarning, Title: "Strict reverse-path filter",
		Message:  "rp_filter is strict on {device}: the kernel applies max(conf.all.rp_filter={all}, conf.{device}.rp_filter={deviceValue}) = 1, so replies that arrive on another interface than the route back are dropped",
		NextStep: nodeSvcCmd},
	{Code: CodeRTUnreadable, Layer: LayerRoute, Severity: SeverityWarning, Title: "Routes not readable",
		Message:  "the collector could not read routes: {error}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTPodTimeout, Layer: LayerRoute, Severity: SeverityError, Title: "Pod IP unreachable",
		Message:  "connections to {targets} time out or are unreachable; the packets do not get to the Pod or back",
		NextStep: nodeSvcCmd},
	{Code: CodeRTPodsReached, Layer: LayerRoute, Severity: SeverityInfo, Title: "Pods reachable",
		Message:  "{count} endpoint(s) answered a direct connection{sample}",
		NextStep: nodeSvcCmd},
	{Code: CodeRTPolicyUndetermined, Layer: LayerRoute, Severity: SeverityWarning, Title: "Probes failed where the policy is undetermined",
		Message:  "node {node}'s probes to {targets} failed, and whether the policies {policies} admit this node there is undetermined ({reason}): a policy drop and a path fault are equally possible, so neither is named",
		NextStep: "kubectl svctrace {service} -n {namespace} --from pod/<client> -o yaml  # a client Pod's own view"},
	{Code: CodeRTPolicyExplains, Layer: LayerRoute, Severity: SeverityInfo, Title: "Probes kept out by NetworkPolicy",
		Message:  "{targets}: no answer to this node's probes, and the NetworkPolicies {policies} do not admit this node's address there; the node is not the client, so this is not counted as a route or datapath fault (these probes cannot tell one from the policy's drop); the policy layer judges the client",
		NextStep: "kubectl describe networkpolicy -n {namespace}"},

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

	{Code: CodeDNSLiveOK, Layer: LayerDNS, Severity: SeverityInfo, Title: "DNS answers",
		Message:  "{server} answers {name} {type} with {answers} over {transports} from {nodes} ({latency} ms)",
		NextStep: "kubectl run -it --rm dnscheck --image=busybox:1.36 --restart=Never -- nslookup {fqdn}"},
	{Code: CodeDNSLiveWrong, Layer: LayerDNS, Severity: SeverityError, Title: "DNS answer is wrong",
		Message:  "{server} answers {name} {type} with {answers}, expected {expected}",
		NextStep: "kubectl -n kube-system logs -l k8s-app=kube-dns --tail=50"},
	{Code: CodeDNSLiveNXDomain, Layer: LayerDNS, Severity: SeverityError, Title: "DNS name does not exist",
		Message:  "{server} answers {rcode} for {name} {type}",
		NextStep: "kubectl -n kube-system logs -l k8s-app=kube-dns --tail=50"},
	{Code: CodeDNSLiveFailed, Layer: LayerDNS, Severity: SeverityError, Title: "DNS query failed",
		Message:  "the {transport} query for {name} {type} to {server} failed: {error}",
		NextStep: "kubectl -n kube-system get pods -l k8s-app=kube-dns -o wide"},
	{Code: CodeDNSExternalUnresolved, Layer: LayerDNS, Severity: SeverityError, Title: "ExternalName target does not resolve",
		Message:  "{server} answers {name} with a CNAME to {target} but with no address for {target} ({queries}): a client resolving {name} gets nothing to connect to",
		NextStep: "kubectl -n kube-system get configmap coredns -o yaml  # names outside the cluster are resolved through its forward plugin"},
	{Code: CodeDNSLiveTCPDiff, Layer: LayerDNS, Severity: SeverityWarning, Title: "DNS differs over UDP and TCP",
		Message:  "{server} answers {name} {type} differently over UDP ({udp}) and TCP ({tcp})",
		NextStep: "kubectl -n kube-system get pods -l k8s-app=kube-dns -o wide"},
	{Code: CodeDNSLiveSlow, Layer: LayerDNS, Severity: SeverityWarning, Title: "DNS slow",
		Message:  "{server} took {latency} ms to answer {name} over {transport}",
		NextStep: "kubectl -n kube-system top pods -l k8s-app=kube-dns"},
}

// Policy catalog codes.
const (
	CodeNPNone          = "NP001"
	CodeNPAdmitted      = "NP002"
	CodeNPDenied        = "NP003"
	CodeNPIsolated      = "NP004"
	CodeNPNothingAdmits = "NP005"
	CodeNPEnforcement   = "NP006"
	CodeNPEgressDenied  = "NP007"
	CodeNPUndecided     = "NP008"
	CodeNPDNSDenied     = "NP009"
	CodeNPDNSTCPDenied  = "NP010"
	// CodeNPKindNotEvaluated: policy kinds svctrace does not evaluate
	// exist where they could decide the traffic.
	CodeNPKindNotEvaluated = "NP013"
	// Enforcement as seen on the nodes holding isolated backend Pods.
	CodeNPEnforced           = "NP020"
	CodeNPNotEnforced        = "NP021"
	CodeNPEnforcementUnknown = "NP022"
)

var policyCatalog = []CheckSpec{
	{Code: CodeNPNone, Layer: LayerPolicy, Severity: SeverityInfo, Title: "No NetworkPolicy",
		Message:  "no NetworkPolicy in namespace {namespace} selects the backend Pods: they accept traffic from any source",
		NextStep: "kubectl get networkpolicies -n {namespace}"},
	{Code: CodeNPAdmitted, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Client admitted",
		Message:  "{line}",
		NextStep: "kubectl get networkpolicies -n {namespace} -o yaml"},
	{Code: CodeNPDenied, Layer: LayerPolicy, Severity: SeverityError, Title: "NetworkPolicy denies the client",
		Message:  "{line}; denying: {policies}",
		NextStep: "kubectl describe networkpolicy -n {namespace} {firstPolicy}"},
	{Code: CodeNPIsolated, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Backends isolated",
		Message:  "{isolated} of {total} backend Pod/port pairs are isolated by {policies}; admitted sources: {sources}",
		NextStep: "kubectl describe networkpolicy -n {namespace} {firstPolicy}"},
	{Code: CodeNPNothingAdmits, Layer: LayerPolicy, Severity: SeverityError, Title: "No source admitted",
		Message:  "{policies} isolate the backend Pods and no ingress rule admits any source on the target port",
		NextStep: "kubectl describe networkpolicy -n {namespace} {firstPolicy}"},
	{Code: CodeNPEnforcement, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Enforcement depends on the CNI",
		Message:  "{note}",
		NextStep: "kubectl get pods -n kube-system -o wide"},
	{Code: CodeNPEgressDenied, Layer: LayerPolicy, Severity: SeverityError, Title: "Client egress denied",
		Message:  "the client's own egress policies do not let it reach {target}: {reason}",
		NextStep: "kubectl get networkpolicies -n {clientNamespace} -o yaml"},
	{Code: CodeNPDNSDenied, Layer: LayerPolicy, Severity: SeverityError, Title: "Client egress blocks DNS",
		Message:  "the client's egress policies do not admit the cluster DNS (UDP {udp}, TCP {tcp}): every name lookup of the Service fails before a packet reaches it; {reason}",
		NextStep: "kubectl get networkpolicies -n {clientNamespace} -o yaml"},
	{Code: CodeNPDNSTCPDenied, Layer: LayerPolicy, Severity: SeverityWarning, Title: "Client egress blocks DNS over TCP",
		Message:  "the client's egress policies admit the cluster DNS over UDP but not TCP (UDP {udp}, TCP {tcp}): answers too large for UDP (truncated, retried over TCP) fail; {reason}",
		NextStep: "kubectl get networkpolicies -n {clientNamespace} -o yaml"},
	{Code: CodeNPEnforced, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Policies enforced on the node",
		Message:  "NetworkPolicies are enforced on node {node} by {enforcer} (filter chains {chains} seen); it holds isolated backend Pods {pods}",
		NextStep: "kubectl get pods -n kube-system -o wide --field-selector spec.nodeName={node}"},
	{Code: CodeNPNotEnforced, Layer: LayerPolicy, Severity: SeverityWarning, Title: "No policy enforcer on the node",
		Message:  "no NetworkPolicy enforcer is seen on node {node} (its iptables filter tables hook only kube-proxy's, the kubelet's and CNI plugins' chains, its nf_tables tables are only iptables-nft's and kube-proxy's, no Cilium or Calico datapath): {policies} select backend Pods {pods} there but are not enforced, so traffic they deny still arrives",
		NextStep: "kubectl get pods -n kube-system -o wide --field-selector spec.nodeName={node}"},
	{Code: CodeNPEnforcementUnknown, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Enforcement on the node not determined",
		Message:  "whether NetworkPolicies are enforced on node {node} (isolated backend Pods {pods}) is not known: {reason}",
		NextStep: "kubectl get pods -n kube-system -o wide --field-selector spec.nodeName={node}"},
	{Code: CodeNPKindNotEvaluated, Layer: LayerPolicy, Severity: SeverityWarning, Title: "Policy kinds not evaluated",
		Message:  "policies of kinds svctrace does not evaluate exist where they may decide traffic to the backends: {kinds}; whether the client is admitted is undetermined",
		NextStep: "kubectl get ciliumnetworkpolicies,ciliumclusterwidenetworkpolicies -A  # Calico: kubectl get networkpolicies.crd.projectcalico.org,globalnetworkpolicies.crd.projectcalico.org -A"},
	{Code: CodeNPUndecided, Layer: LayerPolicy, Severity: SeverityWarning, Title: "Policy outcome undecided",
		Message:  "{line}",
		NextStep: "kubectl get networkpolicies -n {namespace} -o yaml"},
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
