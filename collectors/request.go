// Package collectors holds the node-side observers of svctrace and the data they
// exchange with the plugin. Collectors observe, trace judges: nothing in this
// tree decides whether what it saw is right; it reports what is there, with the
// raw evidence, so that trace/ can compare it with the Service and its
// EndpointSlices.
package collectors

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
	// samples (deltas, not totals). Zero means the collector's default.
	ConntrackSampleMillis int `json:"conntrackSampleMillis,omitempty"`

	// ProbeTimeoutMillis bounds every TCP/UDP probe. Zero means the default.
	ProbeTimeoutMillis int `json:"probeTimeoutMillis,omitempty"`
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
}
