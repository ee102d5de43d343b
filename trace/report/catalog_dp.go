package report

// DP codes judge what each node's datapath programmed for the Service
// (kube-proxy's iptables, nftables or IPVS rules, Cilium's or Calico's eBPF
// maps) against what it should program, and the probes through its
// frontends.
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
	CodeDPRejectShadowed          = "DP071"
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
	CodeDPExternalAddressMissing  = "DP072"

	// Judged from inside the --from Pod's network namespace (the client's
	// own view), and an endpoint Pod reaching itself (hairpin).
	CodeDPClientClusterIPFails = "DP055"
	CodeDPHairpinOK            = "DP056"
	CodeDPHairpinFails         = "DP057"
	CodeDPHairpinNotSelected   = "DP058"
	// CodeDPClientDroppedByDesign: the named client's node drops the
	// ClusterIP by design (DP027 there), so this client's traffic fails.
	CodeDPClientDroppedByDesign = "DP070"

	// Failure modes users meet most on a node while every rule is right.
	CodeDPMasqMissing  = "DP047"
	CodeDPSourceLost   = "DP048"
	CodeDPSourceKept   = "DP049"
	CodeDPMasqExternal = "DP050"
	CodeDPMasqNoRule   = "DP051"
	CodeDPMasqNoJump   = "DP052"

	// A timeout that is not evidence: the collector on that node ran late (a
	// starved node) or its time ran out before it could try again. Emitted
	// with status unknown: the layer is undetermined there, not failed.
	CodeDPProbeInconclusive = "DP060"
)

var dpCatalog = []CheckSpec{
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
	{Code: CodeDPRejectShadowed, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Stale REJECT behind the DNAT",
		Message:  "{datapath} still holds kube-proxy's \"has no endpoints\" REJECT for {port} beside its DNAT to {count} endpoint(s); the filter table sees packets only after the DNAT, so it rejects nothing now. {why}",
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
	{Code: CodeDPExternalAddressMissing, Layer: LayerDatapath, Severity: SeverityError, Title: "externalIP or load-balancer IP not programmed",
		Message:  "{datapath} has no entry for {frontend} of {port} in {table}: traffic to that address on this node is not sent to the Service's endpoints",
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
	{Code: CodeDPClientClusterIPFails, Layer: LayerDatapath, Severity: SeverityError, Title: "ClusterIP fails from the client",
		Message:  "from pod {clientNamespace}/{client}'s network namespace, {frontend} fails while {okCount} endpoint(s) it may use answer the same client directly: node {node}'s datapath does not carry this client's Service traffic",
		NextStep: "kubectl svctrace {service} -n {namespace} --node {node} -o yaml"},
	{Code: CodeDPClientDroppedByDesign, Layer: LayerDatapath, Severity: SeverityError, Title: "Client's node drops the ClusterIP by design",
		Message:  "{client} runs on node {node}, where the Service's ClusterIP traffic is dropped by design (DP027: internalTrafficPolicy Local and no endpoint kube-proxy can use on {node}): every connection this client makes to the ClusterIP fails; the Service's endpoints run on {endpointNodes}",
		NextStep: "kubectl get service {service} -n {namespace} -o jsonpath='{.spec.internalTrafficPolicy}'  # Local serves only clients on nodes with an endpoint"},
	{Code: CodeDPHairpinOK, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Hairpin works",
		Message:  "pod {clientNamespace}/{client} reached itself ({self}) through {frontend} in {attempts} connection(s), seen from {peer}; {rules}",
		NextStep: clientNetnsCmd},
	{Code: CodeDPHairpinFails, Layer: LayerDatapath, Severity: SeverityError, Title: "Endpoint cannot reach itself through the Service",
		Message:  "pod {clientNamespace}/{client} connecting to {frontend}: {failed} of {attempts} connection(s) failed ({error}) and none reached the Pod itself ({self}); the ones the datapath sends back to the Pod are lost (hairpin): {rules}",
		NextStep: "kubectl svctrace {service} -n {namespace} --node {node} -o yaml"},
	{Code: CodeDPHairpinNotSelected, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Hairpin not exercised",
		Message:  "pod {clientNamespace}/{client}'s {attempts} connection(s) to {frontend} all went to other endpoints: hairpin to {self} was not exercised; {rules}",
		NextStep: clientNetnsCmd},
	{Code: CodeDPMasqMissing, Layer: LayerDatapath, Severity: SeverityError, Title: "Masquerade mark chain missing",
		Message:  "{datapath}: {detail}, so Service traffic that must be masqueraded keeps its source, and replies from Pods on other nodes bypass this node and are dropped by the client",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPSourceLost, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Client source IP is masqueraded",
		Message:  "externalTrafficPolicy Cluster on {port}: {datapath} marks external traffic for masquerade ({rule}), so Pods see this node's address, not the client's (SNAT); externalTrafficPolicy Local keeps it",
		NextStep: nodeSvcCmd},
	{Code: CodeDPSourceKept, Layer: LayerDatapath, Severity: SeverityInfo, Title: "Client source IP is kept",
		Message:  "externalTrafficPolicy Local on {port}: {datapath} sends external traffic only to this node's endpoints without masquerading, so Pods see the client's address (traffic from the node itself is still masqueraded)",
		NextStep: nodeSvcCmd},
	{Code: CodeDPMasqExternal, Layer: LayerDatapath, Severity: SeverityError, Title: "External traffic not masqueraded",
		Message:  "externalTrafficPolicy Cluster on {port}, but {datapath}'s external chain {chain} does not mark traffic for masquerade: packets forwarded to Pods on other nodes keep the client's source, the Pod replies directly, and the client drops the reply",
		NextStep: nodeSvcCmd},
	{Code: CodeDPMasqNoRule, Layer: LayerDatapath, Severity: SeverityError, Title: "Masquerade rule missing",
		Message:  "{datapath}: {detail}, so packets kube-proxy marks for masquerade ({mark}) leave this node with their source unchanged: replies from Pods on other nodes, and hairpin replies, go straight back to a client that never sent to them and are dropped",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPMasqNoJump, Layer: LayerDatapath, Severity: SeverityError, Title: "Masquerade chain not reached",
		Message:  "{datapath}: {detail}, so nothing kube-proxy marks for masquerade ({mark}) is masqueraded: replies from Pods on other nodes, and hairpin replies, go straight back to a client that never sent to them and are dropped",
		NextStep: "kubectl logs -n kube-system -l k8s-app=kube-proxy --tail=50"},
	{Code: CodeDPProbeInconclusive, Layer: LayerDatapath, Severity: SeverityWarning, Title: "Frontend probe inconclusive on a slow node",
		Message:  "{frontend} timed out, but {why}; the node's Service datapath is not judged by these probes",
		NextStep: lateCollectorNextStepCmd},
}
