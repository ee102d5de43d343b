// Package trace judges a Service: it reads what the Kubernetes API says
// (input.Fetch, Collect), plans which nodes to inspect (plan.PlanNodes),
// decides what each inspected node should program and compares it with
// what the node's collector observed, and assembles the verdict into a
// report.ServiceTrace (Assemble, Run). It is cobra-free and never prints:
// cmd/ wires it to flags, render/ turns its result into text, JSON or YAML.
//
// Around it, the sub-packages it is built from, none of which imports it:
// input holds the API reads and Input (a bundle's input.json); plan the
// node plan and the report the node side returns (package nodes implements
// it); expect what each node's programmer (kube-proxy per mode, the Cilium
// agent, Felix) should program there, per IP family (pkg/proxy/topology.go's
// role); programmed what the node did program, read into one
// backend-neutral form, the only package that knows the datapath layouts;
// netpol the NetworkPolicy evaluation; frontdoor the route, Gateway or
// Ingress in front of a Service and its checks (GW, ING); report the result
// model and the catalog, one file per code prefix.
//
// The files of trace follow the layers they judge, and a check code's
// prefix names the file that emits it (trace/layout_test.go):
//
//	run.go           Run, Collect, Assemble and the verdict
//	frontdoor.go     a trace started at a front door: each backend Service, the frontdoor layer first
//	judge.go         the API judge and its gaps (API codes)
//	service.go       the Service object (SVC)
//	ports.go         its ports against Pods and EndpointSlices (PRT)
//	endpoints.go     the EndpointSlices (EPS)
//	pods.go          the selected Pods (POD)
//	dns.go           the expected and the live DNS answers (DNS)
//	node.go          the node judge: one observation, layer by layer
//	datapath.go      expectation against programmed rules, every backend (DP)
//	ipvs.go          what only IPVS virtual servers carry (DP)
//	ebpf.go          what only Cilium's and Calico's eBPF maps carry (DP)
//	masquerade.go    KUBE-MARK-MASQ and the POSTROUTING masquerade (DP)
//	synclag.go       the one sync-lag excuse every datapath finding shares
//	slicechanges.go  what an EndpointSlice change during the read excuses
//	conntrack.go     connection tracking (CT)
//	route.go         routes, neighbours, overlays, path MTU (RT)
//	probes.go        the node's probes through frontends and to Pods
//	sockets.go       whether the endpoint Pods listen and accept (EPS)
//	clientpod.go     the --from Pod's own view, for every layer it crosses
//	policy.go        NetworkPolicies, admin tiers, enforcement (NP)
//	explain.go       chaining a symptom to the finding that causes it
//	reachability.go  the node × endpoint grid (report.EndpointMatrix)
//	shares.go        each node's endpoint shares (report.ShareTable)
//	endpointlists.go endpoint lists shared by evidence in a large trace
//	lateness.go      a collector that answered late
package trace
