package v1alpha1

import "time"

// ObservationAPIVersion and ObservationKind identify the JSON svctrace-collector
// prints. Fields are only ever added within one apiVersion.
const (
	ObservationAPIVersion = "svctrace.dev/v1alpha1"
	ObservationKind       = "NodeObservation"
)

// Observation is what one svctrace-collector run saw on one node for one
// Service: apiVersion svctrace.dev/v1alpha1, kind NodeObservation.
type Observation struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`

	// NodeName is the request's node name; Hostname is what the node says.
	NodeName string `json:"nodeName,omitempty"`
	Hostname string `json:"hostname,omitempty"`
	// Service is "namespace/name" of the requested Service.
	Service string `json:"service"`

	CollectedAt    time.Time `json:"collectedAt"`
	DurationMillis float64   `json:"durationMillis"`

	Collector CollectorInfo `json:"collector"`
	Sections  Sections      `json:"sections"`
}

// Sections holds one entry per requested section; sections not requested
// are absent.
type Sections struct {
	Proxy     *Section[ProxyObservation]     `json:"proxy,omitempty"`
	IPTables  *Section[IPTablesObservation]  `json:"iptables,omitempty"`
	NFTables  *Section[NFTablesObservation]  `json:"nftables,omitempty"`
	IPVS      *Section[IPVSObservation]      `json:"ipvs,omitempty"`
	EBPF      *Section[EBPFObservation]      `json:"ebpf,omitempty"`
	Conntrack *Section[ConntrackObservation] `json:"conntrack,omitempty"`
	Route     *Section[RouteObservation]     `json:"route,omitempty"`
	DNS       *Section[DNSObservation]       `json:"dns,omitempty"`
	Probe     *Section[ProbeObservation]     `json:"probe,omitempty"`
	Sockets   *Section[SocketsObservation]   `json:"sockets,omitempty"`
}

// CollectorInfo describes the collector process itself, so the plugin can say
// what it ran with (capabilities) and what it cost (peak RSS).
type CollectorInfo struct {
	Version   string `json:"version,omitempty"`
	GoVersion string `json:"goVersion"`
	// Capabilities is the effective capability set (CapEff of /proc/self/status).
	Capabilities Capabilities `json:"capabilities"`
	// Resources is measured at the end of the run with getrusage.
	Resources Resources `json:"resources"`
	// LateMillis is how late the collector ran on its node: the longest
	// its heartbeat timer fired behind time while it collected, time the
	// node kept a runnable collector off the CPU. A few milliseconds on a
	// healthy node; on a starved one as long as a probe's timeout, and a
	// probe or DNS query that timed out there says more about the node
	// than about the datapath. Added within v1alpha1: observations of
	// earlier collectors lack it (0, read as "not measured").
	LateMillis float64 `json:"lateMillis,omitempty"`
}

// Capabilities is the process's effective capability set.
type Capabilities struct {
	// EffectiveHex is CapEff as /proc/self/status prints it.
	EffectiveHex string `json:"effectiveHex,omitempty"`
	// Effective names the bits that are set, e.g. CAP_NET_ADMIN.
	Effective []string `json:"effective,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// Resources is the collector's own cost. Self is this process; Children are
// waited-for child processes (iptables-save and the like), kept apart because
// the 64 MiB budget is for the collector itself.
type Resources struct {
	PeakRSSSelfKiB     int64   `json:"peakRSSSelfKiB"`
	PeakRSSChildrenKiB int64   `json:"peakRSSChildrenKiB"`
	UserCPUMillis      float64 `json:"userCPUMillis"`
	SystemCPUMillis    float64 `json:"systemCPUMillis"`
}

// HTTPFetch is the raw evidence of one HTTP GET.
type HTTPFetch struct {
	URL           string  `json:"url"`
	StatusCode    int     `json:"statusCode,omitempty"`
	Body          string  `json:"body,omitempty"` // trimmed and capped; metrics bodies are left out
	LatencyMillis float64 `json:"latencyMillis"`
	Error         string  `json:"error,omitempty"`
	// ErrorClass is refused, timeout, unreachable, reset or other.
	ErrorClass string `json:"errorClass,omitempty"`
	// Attempts is 2 when the first try timed out and the target was probed
	// again with twice the timeout (kube-proxy's /metrics: up to 3, each
	// with twice the previous timeout); FirstError is that first try's
	// error. A probe that answered on a later try was slow, not unreachable.
	Attempts   int    `json:"attempts,omitempty"`
	FirstError string `json:"firstError,omitempty"`
}

// ---- proxy: datapath owner and kube-proxy health ----

// ProxyObservation is what kube-proxy says about itself and which datapaths
// left traces on the node. Every fingerprint found is listed; which one is a
// leftover is for the judge to decide.
type ProxyObservation struct {
	// Mode is the body of /proxyMode (ModeIPTables, ModeIPVS, ModeNFTables,
	// ModeKernelspace), empty when unreachable.
	Mode      DatapathMode     `json:"mode,omitempty"`
	ProxyMode HTTPFetch        `json:"proxyMode"`
	Healthz   *KubeProxyHealth `json:"healthz,omitempty"`
	Metrics   *ProxyMetrics    `json:"metrics,omitempty"`
	// Fingerprints lists every check made, found or not.
	Fingerprints []Fingerprint `json:"fingerprints"`
	// NetfilterTables are every nf_tables table of the node, as "family
	// name" (e.g. "ip kube-proxy", "inet calico"), sorted; nil when they
	// were not listed (an error, or observations older than this field).
	// Policy enforcers that use nftables keep their own tables.
	NetfilterTables []string `json:"netfilterTables,omitempty"`
}

// KubeProxyHealth is kube-proxy's /healthz answer (port 10256).
type KubeProxyHealth struct {
	Fetch        HTTPFetch `json:"fetch"`
	LastUpdated  string    `json:"lastUpdated,omitempty"`
	CurrentTime  string    `json:"currentTime,omitempty"`
	NodeEligible *bool     `json:"nodeEligible,omitempty"`
	Healthy      *bool     `json:"healthy,omitempty"`
	// Families is the per-IP-family status ("IPv4", "IPv6").
	Families map[string]FamilyHealth `json:"families,omitempty"`
}

// FamilyHealth is one IP family's entry in /healthz "status".
type FamilyHealth struct {
	LastUpdated string `json:"lastUpdated,omitempty"`
	Healthy     bool   `json:"healthy"`
}

// ProxyMetrics holds the sync-related samples picked from kube-proxy's /metrics.
type ProxyMetrics struct {
	Fetch   HTTPFetch      `json:"fetch"`
	Samples []MetricSample `json:"samples,omitempty"`
}

// MetricSample is one Prometheus sample. Histograms contribute their _count and _sum.
type MetricSample struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

// Fingerprint is one trace a datapath leaves on a node.
type Fingerprint struct {
	// Mode is ModeIPTables, ModeIPTablesLegacy, ModeNFTables, ModeIPVS,
	// ModeCilium or ModeCalico.
	Mode DatapathMode `json:"mode"`
	// Check names what was looked at, e.g. "chain nat KUBE-PROXY-CANARY (nft backend)".
	Check    string `json:"check"`
	Found    bool   `json:"found"`
	Evidence string `json:"evidence,omitempty"`
	Error    string `json:"error,omitempty"`
}

// ---- ipvs ----

// IPVSObservation is this Service's IPVS virtual servers on the node.
type IPVSObservation struct {
	// Available is false when the kernel has no IPVS; Status then says so.
	Available      bool                `json:"available"`
	Status         string              `json:"status,omitempty"`
	VirtualServers []IPVSVirtualServer `json:"virtualServers,omitempty"`
	// KubeIPVS0 is the kube-ipvs0 dummy link: Checked are the Service's
	// addresses (ClusterIPs, externalIPs, LB IPs) looked up, Addresses those
	// of them bound there. The node's other addresses on it are not read.
	KubeIPVS0 *LinkAddresses `json:"kubeIPVS0,omitempty"`
	// IPSets are the Service's entries looked up in kube-proxy's IPVS-mode
	// ipsets: every set an entry of this Service could belong to (both the
	// plain and the -LOCAL variant), found or not; which ones must hold it
	// is for the plugin to say.
	IPSets []IPSetMembership `json:"ipsets,omitempty"`
	// Sysctls are the IPVS sysctls kube-proxy sets or relies on, by name
	// (net.ipv4.vs.conntrack, conn_reuse_mode, expire_nodest_conn,
	// expire_quiescent_template), as read from /proc/sys; unreadable ones
	// are absent.
	Sysctls map[string]string `json:"sysctls,omitempty"`
	// KernelRelease is uname -r: conn_reuse_mode's meaning changed in 5.9.
	KernelRelease string `json:"kernelRelease,omitempty"`
}

// IPSetMembership is one ipset entry test (`ipset test SET ENTRY`).
type IPSetMembership struct {
	Set string `json:"set"`
	// Entry is in ipset's syntax: "10.96.0.10,tcp:80", "30080",
	// "10.244.1.5,tcp:8080,10.244.1.5".
	Entry string `json:"entry"`
	// Kind names what the entry stands for: clusterIP, externalIP,
	// loadBalancerIP, nodePort, healthCheckNodePort, loopback (a local
	// endpoint's hairpin entry), kubeIPVS0 (an address bound to kube-ipvs0).
	Kind string `json:"kind"`
	// Local marks the ETP=Local variant of a set (KUBE-NODE-PORT-LOCAL-TCP…).
	Local bool `json:"local,omitempty"`
	Found bool `json:"found"`
	// SetMissing: the set itself does not exist on the node.
	SetMissing bool   `json:"setMissing,omitempty"`
	Error      string `json:"error,omitempty"`
}

// IPVSVirtualServer is one expected frontend and what IPVS holds for it.
type IPVSVirtualServer struct {
	// Frontend is clusterIP, externalIP, loadBalancerIP or nodePort.
	Frontend       string           `json:"frontend"`
	PortName       string           `json:"portName,omitempty"`
	Address        string           `json:"address"`
	Port           uint16           `json:"port"`
	Protocol       string           `json:"protocol"`
	Found          bool             `json:"found"`
	Scheduler      string           `json:"scheduler,omitempty"`
	Flags          uint32           `json:"flags,omitempty"`
	FlagNames      []string         `json:"flagNames,omitempty"`
	TimeoutSeconds uint32           `json:"timeoutSeconds,omitempty"`
	Netmask        uint32           `json:"netmask,omitempty"`
	RealServers    []IPVSRealServer `json:"realServers,omitempty"`
	Error          string           `json:"error,omitempty"`
}

// IPVSRealServer is one IPVS destination. Weight 0 means kube-proxy is draining it.
type IPVSRealServer struct {
	Address       string `json:"address"`
	Port          uint16 `json:"port"`
	Weight        int    `json:"weight"`
	ActiveConns   int    `json:"activeConns"`
	InactiveConns int    `json:"inactiveConns"`
	// Forwarding is masq, tunnel, route or bypass.
	Forwarding string `json:"forwarding,omitempty"`
}

// LinkAddresses is a link's presence and addresses.
type LinkAddresses struct {
	Name      string   `json:"name"`
	Present   bool     `json:"present"`
	Addresses []string `json:"addresses,omitempty"`
	// Checked, when set, are the addresses looked up: Addresses is then
	// the subset of them found on the link, not everything it holds.
	Checked []string `json:"checked,omitempty"`
	// LocalElsewhere, of Checked, are the addresses local to the node on
	// another link: the node's own addresses (an externalIP or LB IP that
	// is a node IP, on bare metal or with kube-vip). kube-proxy's IPVS
	// proxier does not bind those to kube-ipvs0 (syncProxyRules'
	// shouldBind). Absent in observations of collectors that did not look.
	LocalElsewhere []string `json:"localElsewhere,omitempty"`
	Error          string   `json:"error,omitempty"`
}

// ---- ebpf ----

// EBPFObservation is what eBPF datapaths pinned in bpffs for this Service.
type EBPFObservation struct {
	BPFFSRoot string             `json:"bpffsRoot"`
	Cilium    *CiliumObservation `json:"cilium,omitempty"`
	Calico    *CalicoObservation `json:"calico,omitempty"`
}

// PinnedMap is one pinned BPF map found under the bpffs root.
type PinnedMap struct {
	Name       string `json:"name"`
	Path       string `json:"path"`
	Type       string `json:"type,omitempty"`
	KeySize    uint32 `json:"keySize,omitempty"`
	ValueSize  uint32 `json:"valueSize,omitempty"`
	MaxEntries uint32 `json:"maxEntries,omitempty"`
	Error      string `json:"error,omitempty"`
}

// CiliumObservation is the Cilium load-balancer maps' view of the Service.
// The map key/value layout is Cilium-version dependent (LayoutNote names the
// one this reader decodes).
type CiliumObservation struct {
	Detected bool `json:"detected"`
	// Layout names the map layout recognised from the pinned maps' names
	// and key/value sizes, "" when it is none the collector decodes (the
	// reason is then in Error and no frontend is read).
	Layout     string           `json:"layout,omitempty"`
	LayoutNote string           `json:"layoutNote"`
	Maps       []PinnedMap      `json:"maps,omitempty"`
	Frontends  []CiliumFrontend `json:"frontends,omitempty"`
	// Maintenance are backends of the request's endpoint IPs that the
	// backends map holds in maintenance state: the agent gives them no
	// slot in any frontend, so they are found by walking that map.
	Maintenance []CiliumBackend `json:"maintenance,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// CiliumFrontend is the master entry (slot 0) of one service key and its backend slots.
type CiliumFrontend struct {
	Frontend string `json:"frontend"` // clusterIP, externalIP, loadBalancerIP
	Address  string `json:"address"`
	Port     uint16 `json:"port"`
	Protocol string `json:"protocol"`
	// Scope 0 is external, 1 internal (two-scope ETP/ITP=Local services).
	Scope            uint8  `json:"scope"`
	Found            bool   `json:"found"`
	RevNATIndex      uint16 `json:"revNATIndex,omitempty"`
	BackendCount     uint16 `json:"backendCount,omitempty"`
	QuarantinedCount uint16 `json:"quarantinedCount,omitempty"`
	Flags            uint8  `json:"flags,omitempty"`
	Flags2           uint8  `json:"flags2,omitempty"`
	// AffinityTimeoutSecs and LBAlgorithm come from slot 0's first word.
	AffinityTimeoutSecs uint32          `json:"affinityTimeoutSeconds,omitempty"`
	LBAlgorithm         uint8           `json:"lbAlgorithm,omitempty"`
	Backends            []CiliumBackend `json:"backends,omitempty"`
	// KeyProtocol is the protocol the key was found under: the Service
	// port's, or ANY where the agent keys frontends without the protocol
	// (v1.15 and earlier, or bpf-lb-proto-diff off).
	KeyProtocol string `json:"keyProtocol,omitempty"`
	// Maglev is the frontend's Maglev lookup table, when the agent keeps
	// one for its rev-NAT index.
	Maglev *CiliumMaglev `json:"maglev,omitempty"`
}

// CiliumMaglev is how many entries of one Maglev lookup table each backend
// holds: its share of new flows is Entries/TableSize.
type CiliumMaglev struct {
	TableSize int                 `json:"tableSize,omitempty"`
	Backends  []CiliumMaglevShare `json:"backends,omitempty"`
	Error     string              `json:"error,omitempty"`
}

// CiliumMaglevShare is one backend's entries in a Maglev table.
type CiliumMaglevShare struct {
	BackendID uint32 `json:"backendID"`
	Entries   int    `json:"entries"`
}

// CiliumBackend is one backend slot and the backend it points at.
type CiliumBackend struct {
	Slot      uint16 `json:"slot"`
	BackendID uint32 `json:"backendID"`
	Found     bool   `json:"found"`
	Address   string `json:"address,omitempty"`
	Port      uint16 `json:"port,omitempty"`
	Protocol  string `json:"protocol,omitempty"`
	// State is active, terminating, quarantined, maintenance or the raw number.
	State     string `json:"state,omitempty"`
	ClusterID uint16 `json:"clusterID,omitempty"`
	Zone      uint8  `json:"zone,omitempty"`
}

// CalicoObservation is Calico eBPF's NAT maps' view of the Service.
type CalicoObservation struct {
	Detected bool `json:"detected"`
	// Layout names the NAT map layout recognised from the pinned maps'
	// names and key/value sizes, "" when none the collector decodes (the
	// reason is then in Error and no frontend is read).
	Layout    string           `json:"layout,omitempty"`
	Maps      []PinnedMap      `json:"maps,omitempty"`
	Frontends []CalicoFrontend `json:"frontends,omitempty"`
	Error     string           `json:"error,omitempty"`
}

// CalicoFrontend is one cali_v{4,6}_nat_fe entry (or the frontend looked
// for and not found) and the backends its ordinals point at.
type CalicoFrontend struct {
	Frontend string `json:"frontend"` // clusterIP, externalIP, loadBalancerIP, nodePort
	Address  string `json:"address"`
	Port     uint16 `json:"port"`
	Protocol string `json:"protocol"`
	// SourceCIDR is the client range the entry applies to (0.0.0.0/0 for
	// all; narrower for loadBalancerSourceRanges).
	SourceCIDR string `json:"sourceCIDR,omitempty"`
	Found      bool   `json:"found"`
	ID         uint32 `json:"id,omitempty"`
	// Count is the number of backend ordinals; Blackhole is Felix's
	// "drop everything" count (0xffffffff).
	Count      uint32 `json:"count,omitempty"`
	Blackhole  bool   `json:"blackhole,omitempty"`
	LocalCount uint32 `json:"localCount,omitempty"`
	// AffinityTimeoutSecs > 0 is ClientIP session affinity.
	AffinityTimeoutSecs uint32 `json:"affinityTimeoutSeconds,omitempty"`
	// Flags: 0x1 external traffic policy Local, 0x2 internal Local.
	Flags    uint32          `json:"flags,omitempty"`
	Backends []CalicoBackend `json:"backends,omitempty"`
}

// CalicoBackend is one cali_v{4,6}_nat_be entry {id, ordinal} -> {addr, port}.
type CalicoBackend struct {
	Ordinal uint32 `json:"ordinal"`
	Found   bool   `json:"found"`
	Address string `json:"address,omitempty"`
	Port    uint16 `json:"port,omitempty"`
}

// ---- conntrack ----

// ConntrackObservation is the node's conntrack table health and this
// Service's flows, grouped by the backend they were NATed to.
type ConntrackObservation struct {
	// Count and Max are net.netfilter.nf_conntrack_count and _max.
	Count       int64  `json:"count"`
	Max         int64  `json:"max"`
	SysctlError string `json:"sysctlError,omitempty"`

	// SampleIntervalMillis separates the two statistics samples, as
	// measured.
	SampleIntervalMillis int `json:"sampleIntervalMillis"`
	// Stats are netlink per-CPU statistics (conntrack -S): the second sample's
	// totals and the delta between the samples.
	Stats       *ConntrackCounters `json:"stats,omitempty"`
	StatsDelta  *ConntrackCounters `json:"statsDelta,omitempty"`
	StatsPerCPU []ConntrackCPU     `json:"statsPerCPU,omitempty"`
	StatsError  string             `json:"statsError,omitempty"`

	// ProcStat is /proc/net/stat/nf_conntrack summed over CPUs (second sample)
	// and its delta; it has clash_resolve and chaintoolong, which netlink via
	// ti-mo/conntrack does not decode.
	ProcStat      map[string]uint64 `json:"procStat,omitempty"`
	ProcStatDelta map[string]uint64 `json:"procStatDelta,omitempty"`
	ProcStatError string            `json:"procStatError,omitempty"`

	Flows      *ServiceFlows `json:"flows,omitempty"`
	FlowsError string        `json:"flowsError,omitempty"`

	// TCPBeLiberal is net.netfilter.nf_conntrack_tcp_be_liberal ("absent" or
	// "error: …" when unread): with 0, kube-proxy drops packets conntrack
	// marks INVALID in its forward chain.
	TCPBeLiberal string `json:"tcpBeLiberal,omitempty"`
	// DNSFlows are the UDP port-53 flows to the cluster DNS addresses.
	DNSFlows      *DNSFlows `json:"dnsFlows,omitempty"`
	DNSFlowsError string    `json:"dnsFlowsError,omitempty"`
}

// ConntrackCounters are the netlink statistics, summed over CPUs.
type ConntrackCounters struct {
	Found         uint64 `json:"found"`
	Invalid       uint64 `json:"invalid"`
	Ignore        uint64 `json:"ignore"`
	Insert        uint64 `json:"insert"`
	InsertFailed  uint64 `json:"insertFailed"`
	Drop          uint64 `json:"drop"`
	EarlyDrop     uint64 `json:"earlyDrop"`
	Error         uint64 `json:"error"`
	SearchRestart uint64 `json:"searchRestart"`
}

// ConntrackCPU is one CPU's netlink statistics (second sample).
type ConntrackCPU struct {
	CPU uint16 `json:"cpu"`
	ConntrackCounters
}

// ServiceFlows are conntrack entries whose original destination is one of the
// Service's frontends.
type ServiceFlows struct {
	// DumpFilter says what the dump was limited to before address filtering.
	DumpFilter string `json:"dumpFilter,omitempty"`
	// DumpedEntries is how many entries the dump returned before address filtering.
	DumpedEntries int `json:"dumpedEntries"`
	// NodePortAddresses are the destinations a flow to one of the Service's
	// NodePorts must have to count: the node's own addresses (every
	// interface's, the upper bound of kube-proxy's nodePortAddresses) plus
	// the Service's externalIPs and loadBalancer IPs. Set only when the
	// Service has NodePorts; NodePortAddressesError says why the node's
	// addresses are missing.
	NodePortAddresses      []string `json:"nodePortAddresses,omitempty"`
	NodePortAddressesError string   `json:"nodePortAddressesError,omitempty"`
	// ExpectedBackends is the request's endpoint set ("ip:port"), copied for convenience.
	ExpectedBackends []string        `json:"expectedBackends,omitempty"`
	Frontends        []FrontendFlows `json:"frontends"`
	// Unexpected lists (capped) flows pinned to backends not in ExpectedBackends.
	Unexpected      []ConntrackFlow `json:"unexpected,omitempty"`
	UnexpectedTotal int             `json:"unexpectedTotal"`
	// Truncated is true when a list was capped; counts stay exact.
	Truncated bool `json:"truncated,omitempty"`
}

// FrontendFlows counts flows to one frontend (ClusterIP:port or NodePort), per backend.
type FrontendFlows struct {
	Frontend string         `json:"frontend"` // "10.96.0.50:80/TCP"
	Total    int            `json:"total"`
	Backends []BackendFlows `json:"backends,omitempty"`
}

// BackendFlows is the number of flows NATed to one backend (the reply source).
type BackendFlows struct {
	Backend  string `json:"backend"` // "10.244.1.5:8080"
	Count    int    `json:"count"`
	Expected bool   `json:"expected"` // in the request's endpoint set
	// States counts TCP states (ESTABLISHED, TIME_WAIT, …) or "UDP"/"ASSURED" markers.
	States map[string]int `json:"states,omitempty"`
}

// ConntrackFlow is one conntrack entry, as raw as useful.
type ConntrackFlow struct {
	Protocol       string   `json:"protocol"`
	Original       string   `json:"original"` // "src:sport -> dst:dport"
	Reply          string   `json:"reply"`
	Backend        string   `json:"backend"`
	Status         []string `json:"status,omitempty"`
	TCPState       string   `json:"tcpState,omitempty"`
	TimeoutSeconds uint32   `json:"timeoutSeconds"`
	Mark           uint32   `json:"mark,omitempty"`
	Zone           uint16   `json:"zone,omitempty"`
}

// ---- route ----

// RouteObservation is how this node routes to the Pod IPs and the sysctls
// that decide forwarding.
type RouteObservation struct {
	IPv4Forward     string `json:"ipv4Forward"` // net.ipv4.ip_forward, or "absent"/"error: …"
	IPv6Forward     string `json:"ipv6Forward"` // net.ipv6.conf.all.forwarding
	RPFilterAll     string `json:"rpFilterAll"`
	RPFilterDefault string `json:"rpFilterDefault"`
	// BridgeNFCallIPTables is "absent" when br_netfilter is not loaded.
	BridgeNFCallIPTables  string        `json:"bridgeNFCallIPTables"`
	BridgeNFCallIP6Tables string        `json:"bridgeNFCallIP6Tables"`
	Routes                []RouteLookup `json:"routes"`

	// BrNetfilterLoaded is whether br_netfilter is in the kernel: its
	// /sys/module entry (a loaded module) or its sysctls (built in too).
	BrNetfilterLoaded *bool `json:"brNetfilterLoaded,omitempty"`
	// Bridges are the node's Linux bridges and their ports.
	Bridges []Bridge `json:"bridges,omitempty"`
	// Overlays are the node's VXLAN, Geneve and IP-in-IP devices.
	Overlays []OverlayDevice `json:"overlays,omitempty"`
	// Neighbours is the neighbour table's size and garbage-collection
	// thresholds, per family.
	Neighbours []NeighbourTable `json:"neighbours,omitempty"`
	// LinksError says why bridges, overlays or neighbours are missing.
	LinksError string `json:"linksError,omitempty"`
}

// RouteLookup is the kernel's answer to "ip route get <dst>".
type RouteLookup struct {
	Destination string    `json:"destination"`
	Device      string    `json:"device,omitempty"`
	Gateway     string    `json:"gateway,omitempty"`
	Source      string    `json:"source,omitempty"`
	Type        string    `json:"type,omitempty"` // unicast, local, blackhole, unreachable, prohibit, …
	Table       int       `json:"table,omitempty"`
	Scope       string    `json:"scope,omitempty"`
	Protocol    string    `json:"protocol,omitempty"`
	Link        *LinkInfo `json:"link,omitempty"`
	// RPFilterDevice is net.ipv4.conf.<device>.rp_filter (IPv4 only).
	RPFilterDevice string `json:"rpFilterDevice,omitempty"`
	Error          string `json:"error,omitempty"`
}

// LinkInfo is the state and kind of the link a route uses.
type LinkInfo struct {
	Name      string `json:"name"`
	Index     int    `json:"index"`
	Kind      string `json:"kind"` // veth, bridge, vxlan, ipip, wireguard, dummy, device, …
	AdminUp   bool   `json:"adminUp"`
	OperState string `json:"operState"`
	MTU       int    `json:"mtu"`
	Master    string `json:"master,omitempty"`
}

// ---- dns ----

// DNSObservation is the answers of the cluster DNS for the Service's names.
type DNSObservation struct {
	Servers []string   `json:"servers"`
	Queries []DNSQuery `json:"queries"`
}

// DNSQuery is one question to one server over one transport.
type DNSQuery struct {
	Server        string   `json:"server"`
	Transport     string   `json:"transport"` // udp, tcp
	Name          string   `json:"name"`
	Type          string   `json:"type"` // A, AAAA, SRV
	Rcode         string   `json:"rcode,omitempty"`
	Answers       []string `json:"answers,omitempty"`
	Truncated     bool     `json:"truncated,omitempty"`
	Authoritative bool     `json:"authoritative,omitempty"`
	LatencyMillis float64  `json:"latencyMillis"`
	Error         string   `json:"error,omitempty"`
	// ErrorClass is timeout, refused, unreachable, reset or other.
	ErrorClass string `json:"errorClass,omitempty"`
	// Attempts is 2 when the first try timed out and the query was asked
	// again with twice the timeout; FirstError is that first try's error.
	// It is 2 also when the first answer took longer than DNSSlowMillis and
	// the query was asked again; the faster answer is kept and
	// FirstLatencyMillis is the first try's latency.
	Attempts           int     `json:"attempts,omitempty"`
	FirstError         string  `json:"firstError,omitempty"`
	FirstLatencyMillis float64 `json:"firstLatencyMillis,omitempty"`
}

// DNSSlowMillis is the answer latency above which a cluster DNS answer is
// slow: a resolver in a Pod waits this long for what CoreDNS answers from
// its cache in about a millisecond.
const DNSSlowMillis = 500

// ---- probe ----

// ProbeObservation is the result of connecting from the node to each
// frontend and each endpoint.
type ProbeObservation struct {
	TimeoutMillis int `json:"timeoutMillis"`
	Concurrency   int `json:"concurrency"`
	// EndpointsTotal and EndpointsProbed count endpoint targets (summed over
	// the Service's ports); fewer are probed than exist above the request's
	// EndpointProbeLimit.
	EndpointsTotal  int     `json:"endpointsTotal"`
	EndpointsProbed int     `json:"endpointsProbed"`
	Probes          []Probe `json:"probes"`
	// HealthCheck is kube-proxy's answer on the health-check node port of an
	// externalTrafficPolicy Local Service, asked at this node's address.
	// With HealthChecks set it is HealthChecks[0], kept for readers that
	// predate HealthChecks.
	HealthCheck *HealthCheckProbe `json:"healthCheck,omitempty"`
	// HealthChecks asks the same port once per IP family of the Service:
	// each family's proxier runs its own health server over its own
	// family's endpoints. Absent in observations of collectors that asked
	// one family only.
	HealthChecks []HealthCheckProbe `json:"healthChecks,omitempty"`
	// PathMTU are don't-fragment probes to each endpoint IP at a small size
	// and at the route's MTU.
	PathMTU []PathMTUProbe `json:"pathMTU,omitempty"`
	// Client is what the request's client Pod sees from its own network
	// namespace; nil when the request names no client.
	Client *ClientProbeObservation `json:"client,omitempty"`
}

// ClientProbeObservation is the probes made from inside the client Pod's
// network namespace: the Service's frontends and endpoints, and the Pod's
// own resolver's view of the Service's name. Nothing in that namespace is
// changed; the collector's thread joins it and is discarded afterwards.
type ClientProbeObservation struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// PID is the Pod's process whose namespace was entered, Command its name.
	PID     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
	NetNS   string `json:"netns,omitempty"`
	// Skipped says why the Pod's namespace was not probed (not asked, no
	// process of the Pod on this node, setns refused); nothing else is set.
	Skipped string  `json:"skipped,omitempty"`
	Probes  []Probe `json:"probes,omitempty"`
	// Resolver is the Pod's /etc/resolv.conf and the queries its resolver
	// would send for the Service's name.
	Resolver *ClientResolver `json:"resolver,omitempty"`
	// Hairpin is the Pod reaching itself through the Service's ClusterIP.
	Hairpin *HairpinProbe `json:"hairpin,omitempty"`
}

// ClientResolver is the Pod's resolver configuration and the lookup of the
// name the client would use (the Service's name in its namespace, or
// name.namespace from another one), expanded with search and ndots as the
// C library does.
type ClientResolver struct {
	Nameservers []string `json:"nameservers,omitempty"`
	Search      []string `json:"search,omitempty"`
	Ndots       int      `json:"ndots"`
	// Name is the name looked up; Answered the candidate that answered with
	// records (empty when none did).
	Name     string        `json:"name"`
	Answered string        `json:"answered,omitempty"`
	Addrs    []string      `json:"addrs,omitempty"`
	Queries  []ClientQuery `json:"queries,omitempty"`
	Error    string        `json:"error,omitempty"`
}

// ClientQuery is one query the resolver sends, in order.
type ClientQuery struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Server        string   `json:"server"`
	Rcode         string   `json:"rcode,omitempty"`
	Answers       []string `json:"answers,omitempty"`
	LatencyMillis float64  `json:"latencyMillis"`
	Error         string   `json:"error,omitempty"`
}

// HairpinProbe is a series of connections from an endpoint Pod to the
// Service's ClusterIP port, until one lands on the Pod itself: seen as an
// established socket of the Pod on its own target port whose peer port is
// the connection's source port.
type HairpinProbe struct {
	Frontend string `json:"frontend"`
	Self     string `json:"self"` // the Pod's ip:targetPort
	Attempts int    `json:"attempts"`
	// SelfHits counts connections that reached the Pod itself; Connected all
	// that connected; Failed the rest, with the last error.
	SelfHits   int    `json:"selfHits"`
	Connected  int    `json:"connected"`
	Failed     int    `json:"failed"`
	Error      string `json:"error,omitempty"`
	ErrorClass string `json:"errorClass,omitempty"`
	// PeerAddress is the source address the Pod saw on a self connection:
	// a node address when the hairpin masquerade applied.
	PeerAddress string `json:"peerAddress,omitempty"`
	// HostInterface is the node's end of the Pod's interface (the veth
	// peer); BridgeHairpinMode its /sys/class/net/<if>/brport/hairpin_mode
	// when it is a bridge port ("0" or "1"), empty when it is not one (a
	// routed, ptp CNI).
	HostInterface     string `json:"hostInterface,omitempty"`
	BridgeHairpinMode string `json:"bridgeHairpinMode,omitempty"`
}

// HealthCheckProbe is one GET of kube-proxy's per-Service health check
// (pkg/proxy/healthcheck/service_health.go): 200 while the node has a local
// ready endpoint and kube-proxy is healthy, 503 otherwise, with the count in
// the JSON body.
type HealthCheckProbe struct {
	Address    string `json:"address"`
	StatusCode int    `json:"statusCode,omitempty"`
	// LocalEndpoints and ServiceProxyHealthy are decoded from the body; nil
	// when it did not carry them.
	LocalEndpoints      *int    `json:"localEndpoints,omitempty"`
	ServiceProxyHealthy *bool   `json:"serviceProxyHealthy,omitempty"`
	LatencyMillis       float64 `json:"latencyMillis"`
	Error               string  `json:"error,omitempty"`
	ErrorClass          string  `json:"errorClass,omitempty"`
}

// Probe is one connection attempt.
type Probe struct {
	Target   string `json:"target"` // clusterIP, externalIP, loadBalancerIP, nodePort, endpoint
	PortName string `json:"portName,omitempty"`
	// Node owns the address of a nodePort target.
	Node     string `json:"node,omitempty"`
	Address  string `json:"address"` // "ip:port"
	Protocol string `json:"protocol"`
	// Outcome is connected (TCP), reply (UDP answered), no-reply (UDP, nothing
	// came back: open-and-silent or filtered), or failed.
	Outcome       string  `json:"outcome"`
	LatencyMillis float64 `json:"latencyMillis"`
	Error         string  `json:"error,omitempty"`
	// ErrorClass is refused, timeout, unreachable, reset or other.
	ErrorClass string `json:"errorClass,omitempty"`
	// Attempts is 2 when the first try timed out and the target was probed
	// again with twice the timeout; FirstError is that first try's error.
	// A probe that answered on the second try was slow, not unreachable.
	Attempts   int    `json:"attempts,omitempty"`
	FirstError string `json:"firstError,omitempty"`
}

// ---- sockets ----

// SocketsObservation is what the endpoint Pods on this node listen on, read
// from /proc/<pid>/net/{tcp,tcp6,udp,udp6} of one process of each Pod. That
// needs the node's PID namespace (hostPID), not any capability: the files show
// the sockets of the process's network namespace to anyone who can see the
// process.
type SocketsObservation struct {
	// HostPID is true when the collector sees processes other than its own
	// (it is not PID 1 of its PID namespace).
	HostPID bool `json:"hostPID"`
	// ProcessesScanned is how many /proc/<pid> entries the one scan looked
	// at before it found every Pod (or ran out).
	ProcessesScanned int          `json:"processesScanned"`
	Pods             []PodSockets `json:"pods,omitempty"`
}

// PodSockets is one endpoint Pod's listening sockets, or why they are not known.
type PodSockets struct {
	PodName string `json:"podName,omitempty"`
	PodUID  string `json:"podUID"`
	// IPs are the Pod's endpoint addresses in the request.
	IPs []string `json:"ips,omitempty"`
	// Found is true when a process of the Pod was found and its socket
	// tables read; Reason says why not otherwise.
	Found  bool   `json:"found"`
	Reason string `json:"reason,omitempty"`
	// PID and Command name the process whose /proc the sockets were read
	// through (any container of the Pod: they share one network namespace).
	PID     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
	// NetNS identifies the network namespace ("net:[4026532460]"), from
	// /proc/<pid>/ns/net or, when that link is not readable without
	// CAP_SYS_PTRACE, the inode of /proc/<pid>/net/tcp ("procnet:[…]").
	NetNS string `json:"netns,omitempty"`
	// ListenOverflows and ListenDrops are the Pod's network namespace's
	// TcpExt counters (/proc/<pid>/net/netstat) since it was created: SYNs
	// and handshakes dropped because an accept queue was full; nil when not
	// read.
	ListenOverflows *uint64 `json:"listenOverflows,omitempty"`
	ListenDrops     *uint64 `json:"listenDrops,omitempty"`
	// Listeners are TCP sockets in LISTEN and unconnected bound UDP
	// sockets, one entry per protocol, address and port.
	Listeners []Listener `json:"listeners,omitempty"`
	// Truncated is true when Listeners was capped. Listeners on a target
	// port of the request are always kept; only others are dropped.
	Truncated bool `json:"truncated,omitempty"`
	// Errors are tables that could not be read (e.g. no tcp6 without IPv6).
	Errors []string `json:"errors,omitempty"`
}

// Listener is one listening (TCP) or bound (UDP) socket.
type Listener struct {
	Protocol string `json:"protocol"` // TCP, UDP
	// Address is the local address: 0.0.0.0 or :: for any, 127.0.0.1, ::1,
	// or a specific one. An IPv4-mapped IPv6 address is shown as IPv4.
	Address string `json:"address"`
	Port    uint16 `json:"port"`
	// Family is the table it came from: IPv4 (tcp, udp) or IPv6 (tcp6, udp6).
	Family string `json:"family"`
	// AcceptQueue is, for a TCP listener, the connections completed and not
	// yet accepted by the application (the rx_queue column, sk_ack_backlog).
	AcceptQueue uint32 `json:"acceptQueue,omitempty"`
}
