// Package trace judges a Service: it reads what the Kubernetes API says
// (Input, Collect), decides what each inspected node should program and
// compares it with what the node's collector observed, and assembles the
// verdict into a report.ServiceTrace (Assemble, Run). It is cobra-free and
// never prints: cmd/ wires it to flags, render/ turns its result into text,
// JSON or YAML.
//
// The files follow the layers they judge: checks_*.go are the checks the API
// alone decides; node_datapath.go compares a node's datapath with what
// kube-proxy would program, whichever backend programmed it, and
// node_iptables.go, node_nftables.go, node_ipvs.go and node_ebpf.go turn each
// backend's observation into that backend-neutral form.
package trace
