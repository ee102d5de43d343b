// Package trace judges a Service: it reads what the Kubernetes API says
// (Input, Collect), decides what each inspected node should program and
// compares it with what the node's collector observed, and assembles the
// verdict into a report.ServiceTrace (Assemble, Run). It is cobra-free and
// never prints: cmd/ wires it to flags, render/ turns its result into text,
// JSON or YAML.
//
// The files follow the layers they judge: checks_*.go are the checks the API
// alone decides; what kube-proxy would program on each node is the
// expect package's (pkg/proxy/topology.go's role); node_datapath.go compares
// a node's datapath with it, whichever backend programmed it, and
// node_iptables.go, node_nftables.go, node_ipvs.go and node_ebpf.go turn each
// backend's observation into that backend-neutral form. report holds the
// result model and the catalog, netpol the NetworkPolicy evaluation.
package trace
