// Package programmed reads what a node's datapath programmed for a Service
// out of the node's collector observation, into one backend-neutral shape:
// a Port per Service port and IP family, with the endpoints its internal
// (ClusterIP) path chooses from and their shares, the no-endpoint verdicts,
// session affinity, and the external path (NodePort, externalIPs,
// load-balancer IPs). It is the role cilium's pkg/loadbalancer Frontend
// plays for its data sources: every backend writes the same record, one
// comparer in trace reads it.
//
// It is the only part of the judge that knows the datapath modes and their
// layouts, one file per backend:
//
//   - node.go: which datapath owns the Service on the node (Owner), and
//     Read, which picks the live backend per IP family and names the
//     leftovers of others. kube-proxy runs one proxier per family
//     (cmd/kube-proxy/app/server_linux.go createProxier: a
//     MetaProxier over an IPv4 and an IPv6 proxier), so in iptables mode
//     the IPv4 rules live in iptables and the IPv6 rules in ip6tables, each
//     with its own canary: the live backend is chosen per family, never
//     across families.
//   - programmer.go: what each mode's programmer is (kube-proxy, the Cilium
//     agent, Calico's Felix) and the selection rules it follows, for the
//     expectation (package expect) and the findings that name it.
//   - iptables.go: pkg/proxy/iptables/proxier.go's chains (KUBE-SVC, KUBE-SVL,
//     KUBE-SEP, the filter-table REJECT and DROP rules, and KUBE-EXT as the
//     port's external Frontend).
//   - nftables.go: pkg/proxy/nftables/proxier.go's table kube-proxy
//     (service-ips and service-nodeports maps, service-/local- chains,
//     no-endpoint-services, and external- as the port's external
//     Frontend).
//   - ipvs.go: pkg/proxy/ipvs/proxier.go's virtual servers.
//   - cilium.go: the Cilium agent's services, backends and Maglev maps
//     (pkg/loadbalancer's frontends, their scopes and backend slots).
//   - calico.go: Felix's eBPF NAT frontend and backend maps
//     (felix/bpf/nat).
//   - frontend.go: the entries external traffic enters by (IPVS virtual
//     servers, the eBPF agents' map entries, kube-proxy's external chain),
//     which every translator fills the same way.
//   - address.go: kube-proxy's iptables and nftables entries for each
//     externalIP and load-balancer IP (a KUBE-SERVICES rule, a service-ips
//     element), which become one Frontend per address the API lists
//     (AddressFrontends): the same per-address judgement as IPVS's.
//
// The package does no I/O and decides nothing about faults: what a
// translation finds odd (a slot that leads nowhere, a backend the agent
// withholds, a Maglev table it cannot use) is data on the Port, for the
// judge to report.
package programmed
