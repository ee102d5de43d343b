package v1alpha1

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// RequestAPIVersion versions the JSON a plugin hands to svctrace-collector.
const RequestAPIVersion = "svctrace.dev/v1alpha1"

// Request names one Service as the API sees it, so that a collector on a node
// can look up exactly that Service's state and nothing else. The plugin fills
// it from the Service and its EndpointSlices; the collector never talks to the
// API server.
type Request struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"` // "CollectRequest"

	// NodeName is the Node the collector runs on, as kube-proxy knows it
	// (its --hostname-override); it decides which endpoints are local.
	NodeName string `json:"nodeName,omitempty"`

	Service ServiceSpec `json:"service"`

	// Endpoints is the union of the Service's EndpointSlices (all ports and
	// conditions), as the API reports them.
	Endpoints []Endpoint `json:"endpoints,omitempty"`

	// PodIPs are the addresses the route section looks up from this node:
	// usually the endpoint IPs, plus the client Pod's IP with --from.
	PodIPs []string `json:"podIPs,omitempty"`

	// ClusterDNS is the cluster DNS address to query (kube-system/kube-dns
	// ClusterIP), and ClusterDomain its suffix (default cluster.local).
	ClusterDNS    []string `json:"clusterDNS,omitempty"`
	ClusterDomain string   `json:"clusterDomain,omitempty"`

	// Sections limits what is collected; empty means every section.
	Sections []string `json:"sections,omitempty"`

	// ConntrackSampleMillis is the gap between the two conntrack statistics
	// samples (deltas, not totals). Zero means the collector's default: the
	// sample spans the collector's other sections, at least 300 ms and at
	// most DefaultConntrackSampleMillis.
	ConntrackSampleMillis int `json:"conntrackSampleMillis,omitempty"`

	// ProbeTimeoutMillis bounds every TCP/UDP probe. Zero means the default.
	ProbeTimeoutMillis int `json:"probeTimeoutMillis,omitempty"`

	// EndpointProbeLimit is how many endpoints are probed per Service port
	// (this node's first, then ready ones); zero means the default.
	EndpointProbeLimit int `json:"endpointProbeLimit,omitempty"`

	// NodeAddresses are node InternalIPs the Service's NodePorts are probed
	// at: this node's own (which also serves the health-check node port) and
	// another node's, reached across the node network as a load balancer or
	// an external client would.
	NodeAddresses []NodeAddress `json:"nodeAddresses,omitempty"`

	// Client is the --from Pod when it runs on this node: the probe section
	// then also probes from the Pod's own network namespace, when
	// Client.EnterNetns allows it.
	Client *ClientPod `json:"client,omitempty"`
}

// ClientPod is the Pod a trace starts from.
type ClientPod struct {
	Namespace string   `json:"namespace"`
	Name      string   `json:"name"`
	UID       string   `json:"uid"`
	IPs       []string `json:"ips,omitempty"`
	// EnterNetns is set only when the collector runs with the profile that
	// may enter another process's network namespace (setns needs SYS_ADMIN,
	// opening /proc/<pid>/ns/net of another user's process SYS_PTRACE).
	// Without it the collector records why the Pod's view was not probed.
	EnterNetns bool `json:"enterNetns,omitempty"`
	// Hairpin asks, when the Pod is one of the Service's endpoints, to
	// connect to the ClusterIP until the datapath sends the Pod to itself.
	Hairpin bool `json:"hairpin,omitempty"`
}

// NodeAddress is one node's address.
type NodeAddress struct {
	Node string `json:"node"`
	IP   string `json:"ip"`
}

// ServiceSpec is the part of a Service a node datapath is derived from.
type ServiceSpec struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Type      string `json:"type"` // ClusterIP, NodePort, LoadBalancer, ExternalName
	// ClusterIPs is empty or ["None"] for a headless Service.
	ClusterIPs            []string      `json:"clusterIPs,omitempty"`
	ExternalIPs           []string      `json:"externalIPs,omitempty"`
	LoadBalancerIPs       []string      `json:"loadBalancerIPs,omitempty"`
	ExternalName          string        `json:"externalName,omitempty"`
	Ports                 []ServicePort `json:"ports,omitempty"`
	SessionAffinity       string        `json:"sessionAffinity,omitempty"` // None or ClientIP
	AffinityTimeoutSecs   int32         `json:"affinityTimeoutSeconds,omitempty"`
	ExternalTrafficPolicy string        `json:"externalTrafficPolicy,omitempty"` // Cluster or Local
	InternalTrafficPolicy string        `json:"internalTrafficPolicy,omitempty"` // Cluster or Local
	HealthCheckNodePort   int32         `json:"healthCheckNodePort,omitempty"`
}

// ServicePort is one Service port. Name is empty for a single unnamed port;
// kube-proxy then names it "ns/name" with no colon.
type ServicePort struct {
	Name       string `json:"name,omitempty"`
	Protocol   string `json:"protocol"` // TCP, UDP, SCTP
	Port       int32  `json:"port"`
	NodePort   int32  `json:"nodePort,omitempty"`
	TargetPort string `json:"targetPort,omitempty"` // number or name, as in the Service
}

// Endpoint is one address of one EndpointSlice, with the port numbers the
// slice gives for each Service port name (key "" for an unnamed port).
type Endpoint struct {
	IP          string           `json:"ip"`
	Ports       map[string]int32 `json:"ports,omitempty"`
	Ready       bool             `json:"ready"`
	Serving     bool             `json:"serving"`
	Terminating bool             `json:"terminating"`
	NodeName    string           `json:"nodeName,omitempty"`
	Zone        string           `json:"zone,omitempty"`
	PodName     string           `json:"podName,omitempty"`
	// PodUID is the UID of the endpoint's Pod, for endpoints on the
	// request's node whose Pod the plugin read: the sockets section finds
	// the Pod's processes by it (their cgroup path).
	PodUID string `json:"podUID,omitempty"`
}

// RequestKind is the kind of a Request.
const RequestKind = "CollectRequest"

// Defaults for the request's optional knobs.
const (
	DefaultConntrackSampleMillis = 1000
	DefaultProbeTimeoutMillis    = 1000
	// DefaultEndpointProbeLimit keeps a large Service's probes inside the
	// collector's time budget: 64 unanswered probes at the default
	// concurrency (8) and timeout take 8 s; 5,000 would take over 10 min.
	DefaultEndpointProbeLimit = 64
	DefaultClusterDomain      = "cluster.local"
)

// Validate rejects a request the collector cannot act on: wrong
// apiVersion/kind, no Service name, unparsable addresses or ports, unknown
// sections. It does not judge the Service itself.
func (r *Request) Validate() error {
	var errs []error
	if r.APIVersion != RequestAPIVersion {
		errs = append(errs, fmt.Errorf("apiVersion %q: want %q", r.APIVersion, RequestAPIVersion))
	}
	if r.Kind != RequestKind {
		errs = append(errs, fmt.Errorf("kind %q: want %q", r.Kind, RequestKind))
	}
	if r.Service.Namespace == "" || r.Service.Name == "" {
		errs = append(errs, errors.New("service.namespace and service.name are required"))
	}
	for _, ip := range r.Service.ClusterIPs {
		if ip == "None" || ip == "" {
			continue
		}
		if _, err := netip.ParseAddr(ip); err != nil {
			errs = append(errs, fmt.Errorf("service.clusterIPs: %w", err))
		}
	}
	for _, list := range [][]string{r.Service.ExternalIPs, r.Service.LoadBalancerIPs, r.PodIPs, r.ClusterDNS} {
		for _, ip := range list {
			if _, err := netip.ParseAddr(ip); err != nil {
				errs = append(errs, fmt.Errorf("address %q: %w", ip, err))
			}
		}
	}
	for i, p := range r.Service.Ports {
		if p.Port < 1 || p.Port > 65535 {
			errs = append(errs, fmt.Errorf("service.ports[%d].port %d out of range", i, p.Port))
		}
		if p.NodePort < 0 || p.NodePort > 65535 {
			errs = append(errs, fmt.Errorf("service.ports[%d].nodePort %d out of range", i, p.NodePort))
		}
		switch p.Protocol {
		case "TCP", "UDP", "SCTP":
		default:
			errs = append(errs, fmt.Errorf("service.ports[%d].protocol %q: want TCP, UDP or SCTP", i, p.Protocol))
		}
	}
	for i, ep := range r.Endpoints {
		if _, err := netip.ParseAddr(ep.IP); err != nil {
			errs = append(errs, fmt.Errorf("endpoints[%d].ip: %w", i, err))
		}
		for name, port := range ep.Ports {
			if port < 1 || port > 65535 {
				errs = append(errs, fmt.Errorf("endpoints[%d].ports[%q] %d out of range", i, name, port))
			}
		}
	}
	for _, s := range r.Sections {
		if !slices.Contains(AllSections, s) {
			errs = append(errs, fmt.Errorf("unknown section %q (known: %s)", s, strings.Join(AllSections, ", ")))
		}
	}
	if r.ConntrackSampleMillis < 0 || r.ProbeTimeoutMillis < 0 || r.EndpointProbeLimit < 0 {
		errs = append(errs, errors.New("conntrackSampleMillis and probeTimeoutMillis must not be negative"))
	}
	return errors.Join(errs...)
}

// Wants says whether a section was requested (an empty list means all).
func (r *Request) Wants(section string) bool {
	return len(r.Sections) == 0 || slices.Contains(r.Sections, section)
}

// ServiceKey is "namespace/name".
func (r *Request) ServiceKey() string { return r.Service.Namespace + "/" + r.Service.Name }

// Domain is the cluster domain, defaulted.
func (r *Request) Domain() string {
	if r.ClusterDomain == "" {
		return DefaultClusterDomain
	}
	return strings.TrimSuffix(r.ClusterDomain, ".")
}

// ClusterIPAddrs returns the parsed ClusterIPs, skipping "None" (headless).
func (s *ServiceSpec) ClusterIPAddrs() []netip.Addr {
	var out []netip.Addr
	for _, ip := range s.ClusterIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			out = append(out, a.Unmap())
		}
	}
	return out
}

// Frontend is one address:port/protocol the Service is reachable at.
type Frontend struct {
	Kind     string // clusterIP, externalIP, loadBalancerIP, nodePort
	PortName string
	Addr     netip.AddrPort
	Protocol string // TCP, UDP, SCTP
	// Port is the Service port this frontend belongs to.
	Port ServicePort
}

// String is "ip:port/PROTO".
func (f Frontend) String() string { return f.Addr.String() + "/" + f.Protocol }

// Frontends lists the ClusterIP, externalIP and loadBalancerIP frontends for
// every port. NodePorts need the node's addresses and are left to the caller.
func (s *ServiceSpec) Frontends() []Frontend {
	var out []Frontend
	add := func(kind, ip string) {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			return
		}
		for _, p := range s.Ports {
			out = append(out, Frontend{Kind: kind, PortName: p.Name, Addr: netip.AddrPortFrom(a.Unmap(), uint16(p.Port)), Protocol: p.Protocol, Port: p})
		}
	}
	for _, ip := range s.ClusterIPs {
		add("clusterIP", ip)
	}
	for _, ip := range s.ExternalIPs {
		add("externalIP", ip)
	}
	for _, ip := range s.LoadBalancerIPs {
		add("loadBalancerIP", ip)
	}
	return out
}

// EndpointAddrs returns, for one Service port name, every endpoint address
// the request lists with that port (whatever its conditions).
func (r *Request) EndpointAddrs(portName string) []netip.AddrPort {
	var out []netip.AddrPort
	for _, ep := range r.Endpoints {
		port, ok := ep.Ports[portName]
		if !ok {
			continue
		}
		a, err := netip.ParseAddr(ep.IP)
		if err != nil {
			continue
		}
		out = append(out, netip.AddrPortFrom(a.Unmap(), uint16(port)))
	}
	return out
}

// AddrFamily is "IPv4" or "IPv6" for an address (an IPv4-mapped IPv6
// address is IPv4), "" when it does not parse.
func AddrFamily(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	if a.Is4() || a.Is4In6() {
		return "IPv4"
	}
	return "IPv6"
}

// IPFamilies are the families of the Service's ClusterIPs in their order,
// IPv4 when it has none (kube-proxy programs a Service once per family of
// its ClusterIPs).
func (s *ServiceSpec) IPFamilies() []string {
	var out []string
	seen := map[string]bool{}
	for _, ip := range s.ClusterIPs {
		if f := AddrFamily(ip); f != "" && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		out = []string{"IPv4"}
	}
	return out
}
