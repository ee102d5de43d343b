// Package collectors is the node side of svctrace: the runtime every node
// reader shares (RunSection, UnavailableError, error classes) and what the
// collector reports about itself (capabilities, resources). The readers are
// its subpackages (iptables, nftables, ipvs, ebpf, conntrack, route, dns,
// probe, sockets, proxy). Collectors observe, trace judges: nothing in this
// tree decides whether what it saw is right; it reports what is there, with
// the raw evidence, so that trace/ can compare it with the Service and its
// EndpointSlices.
//
// What the collector and the plugin exchange (the request, the observation
// and every section's types) is the versioned package collectors/api/v1alpha1;
// the plugin imports only that, never this package or a reader.
package collectors
