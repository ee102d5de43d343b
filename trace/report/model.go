package report

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// APIVersion and Kind identify the result document. Field names below are
// part of the v1alpha1 contract (docs/schema/servicetrace.v1alpha1.json):
// add fields, never rename them.
const (
	APIVersion = "svctrace.dev/v1alpha1"
	Kind       = "ServiceTrace"
)

// Status is the outcome of a check, a layer or the whole trace.
type Status string

// Statuses, from best to worst as far as traffic is concerned. Skipped means
// the layer or check does not apply or was not asked for; Unknown means it
// applies but could not be judged (missing permission, API error).
const (
	StatusPass    Status = "pass"
	StatusWarn    Status = "warn"
	StatusFail    Status = "fail"
	StatusSkipped Status = "skipped"
	StatusUnknown Status = "unknown"
)

// Severity is how bad a finding is when it is present; the catalog gives each
// code its default.
type Severity string

// Severities. An info finding passes, a warning warns, an error fails.
const (
	SeverityInfo    Severity = "info"
	SeverityWarning Severity = "warning"
	SeverityError   Severity = "error"
)

// LayerName names one layer of the path a packet takes to a Pod.
type LayerName string

// Layers, in the order a trace reports them. Issue 5 adds LayerPolicy after
// LayerRoute: append it to LayerOrder and nothing else changes.
const (
	LayerDNS       LayerName = "dns"
	LayerService   LayerName = "service"
	LayerEndpoints LayerName = "endpoints"
	LayerDatapath  LayerName = "datapath"
	LayerConntrack LayerName = "conntrack"
	LayerRoute     LayerName = "route"
)

// LayerOrder is the order of ServiceTrace.Layers.
var LayerOrder = []LayerName{LayerDNS, LayerService, LayerEndpoints, LayerDatapath, LayerConntrack, LayerRoute, LayerPolicy}

// NodeLayers are the layers only a node can observe; a NodeInspector fills them.
var NodeLayers = []LayerName{LayerDatapath, LayerConntrack, LayerRoute}

// ServiceTrace is the whole result of tracing one Service. Every renderer
// prints this struct and nothing else.
type ServiceTrace struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Metadata   Metadata         `json:"metadata"`
	Service    ServiceSummary   `json:"service"`
	Endpoints  EndpointsSummary `json:"endpoints"`
	Layers     []Layer          `json:"layers"`
	// Frontdoor is set when the trace started at a route, a Gateway or an
	// Ingress (Layers then begin with the frontdoor layer).
	Frontdoor *Frontdoor `json:"frontdoor,omitempty"`
	// Matrix is the node × endpoint grid of the inspected nodes.
	Matrix *EndpointMatrix `json:"matrix,omitempty"`
	// Shares is each inspected node's split of new connections.
	Shares *ShareTable `json:"shares,omitempty"`
	// EndpointSets are endpoint lists that the evidence of many nodes
	// names (Field.Set) instead of repeating them. Only a large trace has
	// them: more nodes × endpoints than the endpoint grid spells out.
	EndpointSets []EndpointSet `json:"endpointSets,omitempty"`
	Verdict      Verdict       `json:"verdict"`
}

// EndpointSet is one shared endpoint list, kube-proxy endpoint strings
// (ip:port) sorted.
type EndpointSet struct {
	ID        string   `json:"id"`
	Endpoints []string `json:"endpoints"`
}

// Metadata says when, where and by which svctrace the trace was taken.
type Metadata struct {
	Time            time.Time `json:"time"`
	Context         string    `json:"context,omitempty"`
	SvctraceVersion string    `json:"svctraceVersion"`
	// Port is the --port filter, empty when every Service port was traced.
	Port string `json:"port,omitempty"`
	// ClusterDomain is the DNS suffix the expected names were built with.
	ClusterDomain string `json:"clusterDomain"`
	// Collector says how the node layers were observed; nil when they were not.
	Collector *CollectorRun `json:"collector,omitempty"`
	// Client is the --from client the trace started at, pod/NAMESPACE/NAME
	// or node/NAME; empty when it traced from any Pod.
	Client string `json:"client,omitempty"`
}

// ServiceSummary is the Service's identity and the parts of its spec that
// decide where traffic goes.
type ServiceSummary struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UID is the Service's metadata.uid, empty when it was not found. It tells
	// a Service apart from a deleted and recreated one of the same name.
	UID string `json:"uid,omitempty"`
	// Found is false when the Service does not exist; the rest is then empty.
	Found bool `json:"found"`
	// Type is ClusterIP, NodePort, LoadBalancer or ExternalName.
	Type string `json:"type,omitempty"`
	// Headless is true for clusterIP: None.
	Headless                      bool                 `json:"headless"`
	ClusterIPs                    []string             `json:"clusterIPs,omitempty"`
	IPFamilies                    []string             `json:"ipFamilies,omitempty"`
	IPFamilyPolicy                string               `json:"ipFamilyPolicy,omitempty"`
	ExternalIPs                   []string             `json:"externalIPs,omitempty"`
	LoadBalancerIngress           []string             `json:"loadBalancerIngress,omitempty"`
	Ports                         []ServicePortSummary `json:"ports,omitempty"`
	Selector                      map[string]string    `json:"selector,omitempty"`
	SessionAffinity               string               `json:"sessionAffinity,omitempty"`
	SessionAffinityTimeoutSeconds *int32               `json:"sessionAffinityTimeoutSeconds,omitempty"`
	ExternalTrafficPolicy         string               `json:"externalTrafficPolicy,omitempty"`
	InternalTrafficPolicy         string               `json:"internalTrafficPolicy,omitempty"`
	HealthCheckNodePort           int32                `json:"healthCheckNodePort,omitempty"`
	TrafficDistribution           string               `json:"trafficDistribution,omitempty"`
	// TopologyMode is the service.kubernetes.io/topology-mode annotation.
	TopologyMode             string `json:"topologyMode,omitempty"`
	PublishNotReadyAddresses bool   `json:"publishNotReadyAddresses"`
	ExternalName             string `json:"externalName,omitempty"`
	// ServiceProxyName is the service.kubernetes.io/service-proxy-name label;
	// when set, kube-proxy ignores the Service.
	ServiceProxyName string `json:"serviceProxyName,omitempty"`
}

// ServicePortSummary is one Service port. TargetPort is kept as written: a
// number or a container port name.
type ServicePortSummary struct {
	Name       string `json:"name,omitempty"`
	Protocol   string `json:"protocol"`
	Port       int32  `json:"port"`
	TargetPort string `json:"targetPort,omitempty"`
	NodePort   int32  `json:"nodePort,omitempty"`
}

// EndpointsSummary aggregates every EndpointSlice of the Service.
type EndpointsSummary struct {
	Slices      []SliceSummary    `json:"slices,omitempty"`
	Total       int               `json:"total"`
	Ready       int               `json:"ready"`
	Serving     int               `json:"serving"`
	Terminating int               `json:"terminating"`
	Endpoints   []EndpointSummary `json:"endpoints,omitempty"`
}

// SliceSummary is one EndpointSlice.
type SliceSummary struct {
	Name        string         `json:"name"`
	AddressType string         `json:"addressType"`
	ManagedBy   string         `json:"managedBy,omitempty"`
	Endpoints   int            `json:"endpoints"`
	Ports       []EndpointPort `json:"ports,omitempty"`
}

// EndpointPort is a port of an EndpointSlice; Name matches a Service port name.
type EndpointPort struct {
	Name     string `json:"name,omitempty"`
	Port     int32  `json:"port"`
	Protocol string `json:"protocol"`
}

// EndpointSummary is one endpoint as kube-proxy reads it: the first address,
// the conditions with kube-proxy's defaults applied, and where it lives.
type EndpointSummary struct {
	IP          string         `json:"ip"`
	Ports       []EndpointPort `json:"ports,omitempty"`
	Ready       bool           `json:"ready"`
	Serving     bool           `json:"serving"`
	Terminating bool           `json:"terminating"`
	Node        string         `json:"node,omitempty"`
	Zone        string         `json:"zone,omitempty"`
	Hints       *EndpointHints `json:"hints,omitempty"`
	Pod         *ObjectRef     `json:"pod,omitempty"`
	Slice       string         `json:"slice"`
}

// EndpointHints are the topology hints kube-proxy filters endpoints with.
type EndpointHints struct {
	Zones []string `json:"zones,omitempty"`
	Nodes []string `json:"nodes,omitempty"`
}

// ObjectRef names a namespaced object.
type ObjectRef struct {
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// Layer is one layer's judgement. Checks are in the order they were made.
type Layer struct {
	Name   LayerName `json:"name"`
	Status Status    `json:"status"`
	// Reason explains a skipped or unknown layer, or sums up a failed one.
	Reason string  `json:"reason,omitempty"`
	Checks []Check `json:"checks"`
	// Nodes holds per-node results of node layers (filled by a NodeInspector).
	Nodes []NodeResult `json:"nodes,omitempty"`
}

// NodeResult is one node's status for a node layer.
type NodeResult struct {
	Node   string `json:"node"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// Check is one finding. Code is a catalog code; Message and NextStep are the
// catalog templates filled in for this Service.
type Check struct {
	Code     string   `json:"code"`
	Severity Severity `json:"severity"`
	Status   Status   `json:"status"`
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Node     string   `json:"node,omitempty"`
	// Family is the IP family ("IPv4", "IPv6") the finding is about, where
	// it is about one: a Service port's rules in one family, an endpoint
	// family, a family a policy denies. A dual-stack Service breaks in one
	// family while the other works; a bot can tell which without parsing
	// the message.
	Family   string    `json:"family,omitempty"`
	Evidence *Evidence `json:"evidence,omitempty"`
	// NextStep is a command the user can run to see or fix the problem.
	NextStep string `json:"nextStep,omitempty"`
	// ExplainedBy is the check, on a layer further down the path, that
	// accounts for this failure; the verdict then rests on that one.
	ExplainedBy *CheckRef `json:"explainedBy,omitempty"`
}

// Evidence is what a check saw: ordered key/values (so every renderer shows
// them in the same order) and optional raw lines (rules, dumps).
type Evidence struct {
	Fields []Field  `json:"fields,omitempty"`
	Raw    []string `json:"raw,omitempty"`
}

// Field is one piece of evidence. A list goes into Items, a scalar into
// Value. In a large trace a list of endpoints that many nodes share is named
// by Set (an ServiceTrace.EndpointSets ID) instead: the field's list is that
// set without the endpoints in Except, and Value counts it.
type Field struct {
	Key    string   `json:"key"`
	Value  string   `json:"value,omitempty"`
	Items  []string `json:"items,omitempty"`
	Set    string   `json:"set,omitempty"`
	Except []string `json:"except,omitempty"`
}

// Verdict sums the trace up.
type Verdict struct {
	Status Status `json:"status"`
	// FirstFailingLayer is the first layer, in LayerOrder, whose status is fail.
	FirstFailingLayer LayerName `json:"firstFailingLayer,omitempty"`
	// RootCauseLayer is set when the failure of FirstFailingLayer is
	// explained by a finding on another layer (see Check.ExplainedBy); Code,
	// Node and LikelyCause then come from that finding.
	RootCauseLayer LayerName `json:"rootCauseLayer,omitempty"`
	Summary        string    `json:"summary"`
	LikelyCause    string    `json:"likelyCause,omitempty"`
	// Code is the catalog code of the check the verdict rests on, so a bot can
	// route on it without parsing Summary: for a failed trace the check
	// LikelyCause comes from; for an unknown or warn verdict the first check,
	// in LayerOrder, with the verdict's status (an unknown verdict falls back to
	// the first warning, such as a node that was not inspected). Empty for a
	// passing verdict, and when no check carries the status (a layer that is
	// unknown with no checks at all).
	Code string `json:"code,omitempty"`
	// Node is the node of the check Code comes from, when it has one.
	Node string `json:"node,omitempty"`
	// Fingerprint identifies the fault, the same across runs while the fault
	// stays the same: a PagerDuty dedup_key, a Slack thread key. Empty for a
	// passing verdict. It is the hex of the first 16 bytes of SHA-256 over the
	// Service's UID (namespace/name when it was not found), Code and Node.
	Fingerprint string `json:"fingerprint,omitempty"`
}

// Layer returns the named layer, or nil.
func (t *ServiceTrace) Layer(name LayerName) *Layer {
	for i := range t.Layers {
		if t.Layers[i].Name == name {
			return &t.Layers[i]
		}
	}
	return nil
}

// Failed reports whether at least one layer failed; the command then exits 3.
func (t *ServiceTrace) Failed() bool {
	for _, l := range t.Layers {
		if l.Status == StatusFail {
			return true
		}
	}
	return false
}

// Add appends a check to the layer.
func (l *Layer) Add(c Check) { l.Checks = append(l.Checks, c) }

// Skip marks the layer skipped with a reason, unless it was already decided
// (a layer that does not apply keeps its more specific reason).
func (l *Layer) Skip(reason string) {
	if l.Status != "" {
		return
	}
	l.Status = StatusSkipped
	l.Reason = reason
}

// String names the client as --from does: pod/NAMESPACE/NAME or node/NAME;
// "" for none.
func (c *PolicyClient) String() string {
	switch {
	case c == nil:
		return ""
	case c.Pod != nil:
		return "pod/" + c.Pod.Namespace + "/" + c.Pod.Name
	case c.Node != nil:
		return "node/" + c.Node.Name
	case c.NodeName != "":
		return "node/" + c.NodeName
	}
	return ""
}

// CheckRef points at one check of the same trace.
type CheckRef struct {
	Layer LayerName `json:"layer"`
	Code  string    `json:"code"`
	Node  string    `json:"node,omitempty"`
}

// LayerPolicy judges the NetworkPolicies in front of the backend Pods. It is
// an API-side layer: whether a CNI enforces them is stated, never guessed.
const LayerPolicy LayerName = "policy"

// PolicyClient is the client a trace is run for (--from); nil means "any
// client": the layer then says who is admitted.
type PolicyClient struct {
	Pod  *corev1.Pod  `json:"pod,omitempty"`
	Node *corev1.Node `json:"node,omitempty"`
	// NodeName is set for --from node/NAME even when the Node is unreadable.
	NodeName string `json:"nodeName,omitempty"`
}

// PolicyClientFromPod is a convenience for callers resolving --from.
func PolicyClientFromPod(p *corev1.Pod) *PolicyClient {
	return &PolicyClient{Pod: p, NodeName: p.Spec.NodeName}
}

// Reasons for node layers that were not inspected.
const (
	ReasonNoNode      = "--no-node given"
	ReasonNoCollector = "node collector not available in this build"
)
