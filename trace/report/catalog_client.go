package report

// Codes of the checks judged from inside the --from Pod's network namespace
// (the client's own view) and of an endpoint Pod reaching itself (hairpin).
const (
	CodeRTClientProbed     = "RT020"
	CodeRTClientSkipped    = "RT021"
	CodeRTClientTimeout    = "RT022"
	CodeRTClientClearsNode = "RT023"
	// CodeRTClientPolicyUndetermined: the client's connections fail where
	// the policies' answer for it is undetermined.
	CodeRTClientPolicyUndetermined = "RT031"

	CodeDPClientClusterIPFails = "DP055"
	CodeDPHairpinOK            = "DP056"
	CodeDPHairpinFails         = "DP057"
	CodeDPHairpinNotSelected   = "DP058"
	// CodeDPClientDroppedByDesign: the named client's node drops the
	// ClusterIP by design (DP027 there), so this client's traffic fails.
	CodeDPClientDroppedByDesign = "DP070"

	CodeNPClientDropSeen    = "NP011"
	CodeNPClientNotEnforced = "NP012"

	CodeDNSClientResolves   = "DNS020"
	CodeDNSClientElsewhere  = "DNS021"
	CodeDNSClientNoAnswer   = "DNS022"
	CodeDNSClientUnreadable = "DNS023"
)

const clientNetnsCmd = "kubectl svctrace {service} -n {namespace} --from pod/{clientNamespace}/{client} --client-netns -o yaml"

var clientCatalog = []CheckSpec{
	{Code: CodeRTClientProbed, Layer: LayerRoute, Severity: SeverityInfo, Title: "Probed from the client Pod",
		Message:  "probed from inside pod {clientNamespace}/{client}'s network namespace ({netns}, process {pid} {command}) by the collector on node {node} (profile {profile}): {summary}",
		NextStep: clientNetnsCmd},
	{Code: CodeRTClientSkipped, Layer: LayerRoute, Severity: SeverityInfo, Title: "Client Pod's own view not probed",
		Message:  "every probe ran from node {node}'s network namespace, not from pod {clientNamespace}/{client}'s: {reason}",
		NextStep: clientNetnsCmd},
	{Code: CodeRTClientTimeout, Layer: LayerRoute, Severity: SeverityError, Title: "Client cannot reach the Pods",
		Message:  "from pod {clientNamespace}/{client}'s network namespace, connections to {targets} time out or are unreachable, and no NetworkPolicy denies this client there: the packets from this client do not get to the Pods or back",
		NextStep: clientNetnsCmd},
	{Code: CodeRTClientPolicyUndetermined, Layer: LayerRoute, Severity: SeverityError, Title: "Client's connections fail, policy undetermined",
		Message:  "from pod {clientNamespace}/{client}'s network namespace, {targets} got no answer, and whether the policies {policies} admit this client there is undetermined ({reason}): an enforced policy and a path fault are equally possible, so neither is named",
		NextStep: clientNetnsCmd},
	{Code: CodeRTClientClearsNode, Layer: LayerRoute, Severity: SeverityInfo, Title: "Client reaches what the node could not",
		Message:  "node {node}'s own probes to {targets} failed where the NetworkPolicies keep the node out, and pod {clientNamespace}/{client} reached them from its namespace: those node probe failures are not faults",
		NextStep: clientNetnsCmd},

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

	{Code: CodeNPClientDropSeen, Layer: LayerPolicy, Severity: SeverityError, Title: "Client's traffic dropped by NetworkPolicy",
		Message:  "from pod {clientNamespace}/{client}'s network namespace, {targets} got no answer, and the NetworkPolicies {policies} deny this client there: the drop is enforced",
		NextStep: "kubectl describe networkpolicy -n {namespace}"},
	{Code: CodeNPClientNotEnforced, Layer: LayerPolicy, Severity: SeverityWarning, Title: "NetworkPolicy not enforced",
		Message:  "the NetworkPolicies {policies} deny pod {clientNamespace}/{client} at {targets}, yet it connected from its own network namespace: nothing on the path enforces them (a CNI without NetworkPolicy support, or its policy agent down)",
		NextStep: "kubectl get pods -n kube-system -o wide"},

	{Code: CodeDNSClientResolves, Layer: LayerDNS, Severity: SeverityInfo, Title: "Client's resolver finds the Service",
		Message:  "pod {clientNamespace}/{client}'s resolver ({libcNote}nameservers {servers}, search {search}, ndots {ndots}) answers {name} with {answered} {addrs}; queries sent: {queries}",
		NextStep: clientNetnsCmd},
	{Code: CodeDNSClientElsewhere, Layer: LayerDNS, Severity: SeverityWarning, Title: "Short name resolves elsewhere",
		Message:  "pod {clientNamespace}/{client}'s resolver (search {search}, ndots {ndots}) answers {name} with {answered} {addrs}, not the Service {fqdn}: the client reaches another Service; queries sent: {queries}",
		NextStep: "kubectl get pod -n {clientNamespace} {client} -o jsonpath='{.spec.dnsConfig}'"},
	{Code: CodeDNSClientNoAnswer, Layer: LayerDNS, Severity: SeverityError, Title: "Service name does not resolve from the client",
		Message:  "pod {clientNamespace}/{client}'s resolver (nameservers {servers}, search {search}, ndots {ndots}) got no address for {name}; queries sent: {queries}",
		NextStep: "kubectl get pod -n {clientNamespace} {client} -o jsonpath='{.spec.dnsConfig}'"},
	{Code: CodeDNSClientUnreadable, Layer: LayerDNS, Severity: SeverityWarning, Title: "Client's resolver configuration unread",
		Message:  "{error}",
		NextStep: "kubectl exec -n {clientNamespace} {client} -- cat /etc/resolv.conf"},
}
