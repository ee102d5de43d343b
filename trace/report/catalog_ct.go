package report

// CT codes judge each node's connection tracking.
const (
	CodeCTHealthy      = "CT001"
	CodeCTInsertFailed = "CT002"
	CodeCTDrops        = "CT003"
	CodeCTTableFull    = "CT004"
	CodeCTStaleFlows   = "CT005"
	CodeCTSkew         = "CT006"
	CodeCTUnreadable   = "CT007"
	CodeCTUnNATedUDP   = "CT008"

	// Failure modes users meet most on a node while every rule is right.
	CodeCTInvalid          = "CT009"
	CodeCTDNSRace          = "CT010"
	CodeCTDNSRaceMitigated = "CT011"
)

var ctCatalog = []CheckSpec{
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
	{Code: CodeCTInvalid, Layer: LayerConntrack, Severity: SeverityWarning, Title: "conntrack INVALID packets",
		Message:  "conntrack marked {delta} packet(s) INVALID during a {interval}ms sample (total {total}); nf_conntrack_tcp_be_liberal={liberal}: {behaviour}",
		NextStep: "kubectl debug node/{node} -it --profile=netadmin --image=<an image with conntrack> -- conntrack -S"},
	{Code: CodeCTDNSRace, Layer: LayerConntrack, Severity: SeverityWarning, Title: "DNS lost to the conntrack insert race",
		Message:  "insert_failed rose by {delta} during a {interval}ms sample while the node holds {dnsFlows} UDP flow(s) to the cluster DNS ({dnsUnreplied} never answered): {client} parallel A and AAAA queries from one UDP socket race in conntrack's insert and one of them is dropped, so lookups stall for the resolver's 5 s timeout; dnsConfig.options single-request-reopen (glibc) or use-vc on the clients, or NodeLocal DNSCache, avoid it",
		NextStep: "kubectl explain pod.spec.dnsConfig.options"},
	{Code: CodeCTDNSRaceMitigated, Layer: LayerConntrack, Severity: SeverityInfo, Title: "DNS insert race mitigated",
		Message:  "insert_failed rose by {delta} during a {interval}ms sample with {dnsFlows} UDP flow(s) to the cluster DNS on the node, but the client {client} resolves with {mitigation}, which keeps its A and AAAA queries from racing (glibc; musl ignores these options)",
		NextStep: nodeSvcCmd},
}
