// Package expect computes what kube-proxy on one node should program for a
// Service: for every Service port and IP family, which endpoints serve
// ClusterIP traffic and which serve NodePort, externalIP and load-balancer
// traffic on that node. It is the backend-neutral half of the node checks,
// the role pkg/proxy/topology.go plays for kube-proxy's proxiers: the trace's
// iptables, nftables, IPVS, Cilium and Calico judges compare what a node
// programmed against the same PortExpectation. The package does no I/O,
// never prints and decides nothing about faults.
//
// # What it reads
//
// Only what kube-proxy itself sees: the Service, its EndpointSlices, the
// node's name and the node's topology labels (of which
// topology.kubernetes.io/zone is read). Where the zone comes from when the
// Node object was not read is the caller's business; when it is not known,
// ChoicesForNode tries each zone the endpoints are hinted for.
//
// # What it follows
//
// kube-proxy v1.37 (k8s.io/kubernetes v1.37.2), file by file:
//
//   - service.go: pkg/proxy/servicechangetracker.go serviceToServiceMap and
//     proxyutil.ShouldSkipService (ExternalName and headless Services, and
//     Services carrying the service.kubernetes.io/service-proxy-name label,
//     which the informer filters out, are skipped), one proxier per IP
//     family, and the externalIPs and load-balancer ingress IPs (in VIP mode)
//     of the proxier's own family that, with a NodePort, make a port
//     externally accessible in that family (pkg/proxy/serviceport.go
//     newBaseServiceInfo).
//   - endpointslicecache.go: pkg/proxy/endpointslicecache.go
//     endpointInfoByServicePort and addEndpoints: a slice port joins the
//     Service port whose name and protocol it carries, nil names and nil or
//     zero port numbers are skipped, an endpoint is its first address, the
//     ready and serving conditions default to true and terminating to false,
//     and of duplicate ip:port copies the last non-terminating one wins, else
//     the first terminating one. Slices labelled
//     service.kubernetes.io/headless are not listed by kube-proxy's informer
//     (cmd/kube-proxy/app/server.go) and are ignored.
//   - topology.go: pkg/proxy/topology.go CategorizeEndpoints,
//     topologyModeFromHints and availableForTopology, with
//     PreferSameTrafficDistribution on (locked in v1.37): node hints, then
//     zone hints, filter the Cluster endpoints only when every ready endpoint
//     carries them and one matches this node; with no ready endpoint, serving
//     terminating endpoints stand in; Local endpoints are this node's ready
//     ones, else its serving terminating ones; hasAnyEndpoints is kube-proxy's.
//     Endpoint lists are sorted by endpoint string, as kube-proxy sorts them.
//   - programmer.go: each programmer's own reading (Rules). kube-proxy's
//     iptables and nftables proxiers take CategorizeEndpoints as is; its IPVS
//     proxier's syncEndpoint gives a Local-policy virtual server with no
//     local endpoint the Cluster endpoints; the Cilium agent filters by zone
//     hints only with enable-service-topology (both are choices); Felix's
//     eBPF proxy selects by FilterEpsByTrafficDistribution and writes Ready
//     endpoints only (felix/bpf/proxy/syncer.go). ExpectForProgrammer and
//     ChoicesForProgrammer take the rules; ExpectForNode is kube-proxy's.
//   - choices.go: what the inputs leave open. kube-proxy reads a Service's
//     slices from a Go map, so which copy of a duplicate endpoint it keeps
//     depends on the read order; when two copies in different slices compete
//     and differ in what CategorizeEndpoints reads, every order that can
//     matter is tried. With an unknown zone every hinted zone is tried, and a
//     zone no endpoint is hinted for. kube-proxy programs exactly one of the
//     Choices; the caller picks the one the programmed rules fit.
//
// # What it does not model
//
// The rules themselves (chains, sets, virtual servers, BPF maps): those are
// the programmed package's business, beside this one. Nor session
// affinity, the health-check NodePort servers or conntrack cleanup.
package expect
