package report

// NP codes judge the NetworkPolicies and admin tiers between the client
// and the backends, and whether the nodes enforce them.
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
	CodeNPFamilyDenied       = "NP023"

	// Judged from inside the --from Pod's network namespace (the client's
	// own view), and an endpoint Pod reaching itself (hairpin).
	CodeNPClientDropSeen    = "NP011"
	CodeNPClientNotEnforced = "NP012"
)

var npCatalog = []CheckSpec{
	{Code: CodeNPNone, Layer: LayerPolicy, Severity: SeverityInfo, Title: "No NetworkPolicy",
		Message:  "no NetworkPolicy in namespace {namespace} selects the backend Pods: they accept traffic from any source",
		NextStep: "kubectl get networkpolicies -n {namespace}"},
	{Code: CodeNPAdmitted, Layer: LayerPolicy, Severity: SeverityInfo, Title: "Client admitted",
		Message:  "{line}",
		NextStep: "kubectl get networkpolicies -n {namespace} -o yaml"},
	{Code: CodeNPDenied, Layer: LayerPolicy, Severity: SeverityError, Title: "NetworkPolicy denies the client",
		Message:  "{line}; denying: {policies}",
		NextStep: "kubectl describe networkpolicy -n {namespace} {firstPolicy}"},
	{Code: CodeNPFamilyDenied, Layer: LayerPolicy, Severity: SeverityWarning, Title: "NetworkPolicy denies one IP family",
		Message:  "the client is admitted over {admitted} but not over {family}, from its address {ips}: {line}; denying: {policies}. A dual-stack client that connects over {family} (the Service's {family} ClusterIP, or an AAAA/A answer it prefers) is dropped",
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
	{Code: CodeNPClientDropSeen, Layer: LayerPolicy, Severity: SeverityError, Title: "Client's traffic dropped by NetworkPolicy",
		Message:  "from pod {clientNamespace}/{client}'s network namespace, {targets} got no answer, and the NetworkPolicies {policies} deny this client there: the drop is enforced",
		NextStep: "kubectl describe networkpolicy -n {namespace}"},
	{Code: CodeNPClientNotEnforced, Layer: LayerPolicy, Severity: SeverityWarning, Title: "NetworkPolicy not enforced",
		Message:  "the NetworkPolicies {policies} deny pod {clientNamespace}/{client} at {targets}, yet it connected from its own network namespace: nothing on the path enforces them (a CNI without NetworkPolicy support, or its policy agent down)",
		NextStep: "kubectl get pods -n kube-system -o wide"},
}
