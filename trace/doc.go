// Package trace judges a Service: it reads what the Kubernetes API says
// (Input, Collect), decides what each inspected node should program and
// compares it with what the node's collector observed, and assembles the
// verdict into a report.ServiceTrace (Assemble, Run). It is cobra-free and
// never prints: cmd/ wires it to flags, render/ turns its result into text,
// JSON or YAML.
//
// The files follow the layers they judge: checks_*.go are the checks the API
// alone decides; what each node's programmer (kube-proxy per mode, the
// Cilium agent, Felix) should program there, per IP family, is the expect
// package's (pkg/proxy/topology.go's role, with each programmer's own
// selection rules); what the node did program, read into one
// backend-neutral form, is the programmed package's, the only one that
// knows the datapath layouts. node_datapath.go compares the two for every
// backend, node_ipvs.go and node_ebpf.go add what only IPVS virtual servers
// and the eBPF maps carry, and node_sync.go holds the one sync-lag excuse
// every datapath finding shares. report holds the result model and the
// catalog, netpol the NetworkPolicy evaluation.
package trace
