package report

// DNS codes judge the Service's name: what the API says the cluster DNS
// should answer, and what it answered a node or the client Pod.
const (
	CodeDNSExpected      = "DNS001"
	CodeDNSNoClusterDNS  = "DNS002"
	CodeDNSNoEndpoints   = "DNS003"
	CodeDNSLiveQuery     = "DNS004"
	CodeDNSHeadlessEmpty = "DNS005"
	CodeDNSExternalIP    = "DNS006"
	CodeDNSClusterDNSOK  = "DNS007"

	CodeDNSLiveOK       = "DNS010"
	CodeDNSLiveWrong    = "DNS011"
	CodeDNSLiveNXDomain = "DNS012"
	CodeDNSLiveFailed   = "DNS013"
	CodeDNSLiveTCPDiff  = "DNS014"
	CodeDNSLiveSlow     = "DNS015"
	// CodeDNSExternalUnresolved: an ExternalName's CNAME comes back with no
	// address for its target.
	CodeDNSExternalUnresolved = "DNS016"

	// Judged from inside the --from Pod's network namespace (the client's
	// own view), and an endpoint Pod reaching itself (hairpin).
	CodeDNSClientResolves   = "DNS020"
	CodeDNSClientElsewhere  = "DNS021"
	CodeDNSClientNoAnswer   = "DNS022"
	CodeDNSClientUnreadable = "DNS023"

	// A timeout that is not evidence: the collector on that node ran late (a
	// starved node) or its time ran out before it could try again. Emitted
	// with status unknown: the layer is undetermined there, not failed.
	CodeDNSLiveInconclusive = "DNS024"
)

var dnsCatalog = []CheckSpec{
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
	{Code: CodeDNSLiveInconclusive, Layer: LayerDNS, Severity: SeverityWarning, Title: "DNS query inconclusive on a slow node",
		Message:  "the {transport} query for {name} {type} to {server} timed out ({error}), but {why}; the DNS server is not judged by this query",
		NextStep: lateCollectorNextStepCmd},
}
