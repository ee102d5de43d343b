package plan

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Roles say why a node is inspected.
const (
	RoleEndpoints = "endpoints"
	RoleClient    = "client"
	RoleSelected  = "selected"
	RoleAllNodes  = "all-nodes"
	// RoleStandIn: no endpoint names its node (external backends, a
	// hand-made EndpointSlice, an ExternalName Service's DNS answer, which
	// only a query from inside the cluster shows) and no client was given,
	// so one Ready node stands in for "a node the traffic could come from".
	RoleStandIn = "stand-in"
)

// NodeSelection is which nodes the user asked to inspect (--node,
// --all-nodes); empty means the nodes that host the Service's endpoints.
type NodeSelection struct {
	Nodes    []string
	AllNodes bool
}

// NodePlan is what the node side is asked to do: one collector run per
// planned node, each with its request already built, and the nodes that are
// known not to be inspectable (NotReady, no such node) with the reason. It is
// computed from the API input alone.
type NodePlan struct {
	// Service is "namespace/name", for the collector Pods' labels.
	Service      string
	Nodes        []PlannedNode
	NotInspected []NodeView
	// Cordoned names the planned nodes marked unschedulable: the collector
	// Pod names its node, so it runs there anyway, and the report says so.
	Cordoned map[string]bool
	// EBPFHint: the nodes carry Cilium's annotations, so the collectors
	// get the privileges reading pinned eBPF maps needs.
	EBPFHint bool
}

// PlannedNode is one node to run a collector on.
type PlannedNode struct {
	Name  string
	Roles []string
	// Request, when set, is what the collector is asked; otherwise
	// CollectRequest builds it from the plan's shared template.
	Request *collectorapi.Request
	// Client is the --from Pod when this node hosts it, added to the
	// request built from the template.
	Client *collectorapi.ClientPod

	template *requestTemplate
}

// CollectRequest is the node's collector request. A plan holds one shared
// template rather than a request per node: 1,000 requests of 5,000
// endpoints each held at once would be most of a gigabyte, when only the
// ones running need to exist.
func (n PlannedNode) CollectRequest() *collectorapi.Request {
	if n.Request != nil || n.template == nil {
		return n.Request
	}
	req := n.template.forNode(n.Name)
	req.Client = n.Client
	return req
}

// EncodedRequest is the node's collector request encoded for the
// collector: JSON, or gzip (collectorapi.IsGzip) when it is too large to
// travel as plain JSON. The parts every node shares are encoded once per
// plan.
func (n PlannedNode) EncodedRequest() ([]byte, error) {
	if n.Request != nil || n.template == nil {
		return json.Marshal(n.Request)
	}
	return n.template.encodeForNode(n.Name, n.Client)
}

// ClientPod is the client Pod the node's collector probes from, nil when
// the node hosts none.
func (n PlannedNode) ClientPod() *collectorapi.ClientPod {
	if n.Request != nil {
		return n.Request.Client
	}
	return n.Client
}

// NodeReport is what the node side returns: how the collectors ran and, per
// node, what each observed or why it could not. Failure, when set, says why
// no node could be inspected at all (a missing permission, a collector
// namespace that rejects the Pod); the node layers are then unknown with
// that reason and the API layers still stand.
type NodeReport struct {
	Collector *report.CollectorRun
	Nodes     []NodeView
	Failure   string
}

// NodeInspector runs the collectors of a plan. It returns an error only when
// the trace itself was interrupted (the context's error); every other
// problem is part of the report.
type NodeInspector interface {
	Inspect(ctx context.Context, plan NodePlan) (*NodeReport, error)
}

// NodePrefetcher is a NodeInspector with API reads of its own that do not
// depend on the Service (which node agents run, whether the user may exec
// into them): trace.Collect starts them while it reads the Service, and the
// next Inspect uses what they read.
type NodePrefetcher interface {
	Prefetch(ctx context.Context)
}

// ReadNodes reads the Node objects a plan needs into the input: every
// node for --all-nodes or when a stand-in node must be chosen, otherwise the
// nodes that host endpoints, the client's and the selected ones. Errors
// reading them are returned; without read access to nodes the collectors
// still run, so callers may go on.
func ReadNodes(ctx context.Context, client kubernetes.Interface, in *input.Input, sel NodeSelection, from *report.PolicyClient) error {
	if sel.AllNodes || (len(sel.Nodes) == 0 && from == nil && needsStandIn(in)) {
		if err := in.ReadNodes(ctx, client, nil, true); err != nil {
			return fmt.Errorf("cannot list nodes: %w", err)
		}
		return nil
	}
	var names []string
	for _, c := range nodeCandidates(in, sel, from) {
		names = append(names, c.Name)
	}
	return in.ReadNodes(ctx, client, names, false)
}

// needsStandIn: the Service has endpoints but none of them names a node, or
// it is an ExternalName, whose CNAME and its target's address only the
// cluster DNS can answer, asked from a node.
func needsStandIn(in *input.Input) bool {
	if in.Service != nil && in.Service.Spec.Type == corev1.ServiceTypeExternalName {
		return true
	}
	has := false
	for _, sl := range in.Slices {
		for _, e := range sl.Endpoints {
			if e.NodeName != nil && *e.NodeName != "" {
				return false
			}
			has = true
		}
	}
	return has
}

type nodeCandidate struct {
	Name  string
	Roles []string
}

// nodeCandidates lists the nodes to inspect and why, sorted by name.
func nodeCandidates(in *input.Input, sel NodeSelection, from *report.PolicyClient) []nodeCandidate {
	roles := map[string][]string{}
	add := func(node, role string) {
		if node != "" && !slices.Contains(roles[node], role) {
			roles[node] = append(roles[node], role)
		}
	}
	switch {
	case sel.AllNodes:
		for name, n := range in.Nodes {
			if n != nil {
				add(name, RoleAllNodes)
			}
		}
	case len(sel.Nodes) > 0:
		for _, n := range sel.Nodes {
			add(n, RoleSelected)
		}
	default:
		for _, sl := range in.Slices {
			for _, e := range sl.Endpoints {
				if e.NodeName != nil {
					add(*e.NodeName, RoleEndpoints)
				}
			}
		}
	}
	if from != nil {
		add(from.NodeName, RoleClient)
	}
	if len(roles) == 0 && !sel.AllNodes && len(sel.Nodes) == 0 && needsStandIn(in) {
		add(standInNode(in), RoleStandIn)
	}
	out := make([]nodeCandidate, 0, len(roles))
	for n, r := range roles {
		out = append(out, nodeCandidate{Name: n, Roles: r})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// standInNode is the first Ready, schedulable node by name, else the first
// Ready one, else "".
func standInNode(in *input.Input) string {
	var ready, schedulable []string
	for name, n := range in.Nodes {
		if n == nil || notReadyReason(n) != "" {
			continue
		}
		ready = append(ready, name)
		if !n.Spec.Unschedulable {
			schedulable = append(schedulable, name)
		}
	}
	for _, l := range [][]string{schedulable, ready} {
		if len(l) > 0 {
			slices.Sort(l)
			return l[0]
		}
	}
	return ""
}

// PlanNodes decides which nodes to inspect and builds each one's collector
// request. Nodes the input knows to be missing or NotReady are reported, not
// planned: a NotReady node never starts the Pod, so it is not waited on.
// Call ReadNodes first; a node it could not read is planned anyway (it
// then fails with its own message).
func PlanNodes(in *input.Input, sel NodeSelection, from *report.PolicyClient, clusterDomain string) NodePlan {
	if clusterDomain == "" {
		clusterDomain = DefaultClusterDomain
	}
	plan := NodePlan{Service: in.Namespace + "/" + in.Name, Cordoned: map[string]bool{}, EBPFHint: ciliumAnnotated(in)}
	var extra []string
	if from != nil && from.Pod != nil && from.Pod.Status.PodIP != "" && !from.Pod.Spec.HostNetwork {
		extra = append(extra, from.Pod.Status.PodIP)
	}
	var tmpl *requestTemplate
	for _, c := range nodeCandidates(in, sel, from) {
		if node, _ := in.Node(c.Name); node != nil && node.Spec.Unschedulable {
			plan.Cordoned[c.Name] = true
		}
		if node, known := in.Node(c.Name); known {
			if node == nil {
				plan.NotInspected = append(plan.NotInspected, NodeView{Node: c.Name, Roles: c.Roles, Failure: "no such node"})
				continue
			}
			if reason := notReadyReason(node); reason != "" {
				plan.NotInspected = append(plan.NotInspected, NodeView{Node: c.Name, Roles: c.Roles, Failure: reason})
				continue
			}
		}
		if tmpl == nil {
			tmpl = newRequestTemplate(in, clusterDomain, extra...)
		}
		plan.Nodes = append(plan.Nodes, PlannedNode{Name: c.Name, Roles: c.Roles, template: tmpl})
		if slices.Contains(c.Roles, RoleClient) {
			plan.Nodes[len(plan.Nodes)-1].Client = clientPod(from)
		}
	}
	return plan
}

// clientPod names the --from Pod to its node's collector, nil for a node
// client or a host-network Pod (its namespace is the node's, which the
// node probes already are). The collector enters the Pod's namespace only
// when the inspector allows it (ClientPod.EnterNetns).
func clientPod(from *report.PolicyClient) *collectorapi.ClientPod {
	if from == nil || from.Pod == nil || from.Pod.Spec.HostNetwork {
		return nil
	}
	p := from.Pod
	c := &collectorapi.ClientPod{Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), Hairpin: true}
	for _, ip := range p.Status.PodIPs {
		c.IPs = append(c.IPs, ip.IP)
	}
	if len(c.IPs) == 0 && p.Status.PodIP != "" {
		c.IPs = []string{p.Status.PodIP}
	}
	return c
}

// notReadyReason says why a node cannot run a collector now, "" if it can.
func notReadyReason(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("node is NotReady (Ready=%s, %s: %s): not inspected", c.Status, c.Reason, c.Message)
		}
	}
	return ""
}

// ciliumAnnotated: some node carries Cilium's annotations, a cheap sign
// (no extra API request) that the collectors will read pinned eBPF maps.
func ciliumAnnotated(in *input.Input) bool {
	for _, n := range in.Nodes {
		if n == nil {
			continue
		}
		for k := range n.Annotations {
			if strings.HasPrefix(k, "network.cilium.io/") || strings.HasPrefix(k, "io.cilium.") {
				return true
			}
		}
	}
	return false
}

// NodeView is what svctrace learnt about one node: the collector's
// observation, or why there is none.
type NodeView struct {
	Node string
	// Roles say why the node was inspected: "endpoints", "client", "selected".
	Roles []string
	// Profile is the privilege profile the collector Pod ran with.
	Profile string
	// Observation is nil when Failure is set.
	Observation *collectorapi.Observation
	Failure     string
}

// DefaultClusterDomain is the DNS suffix used when none is given.
const DefaultClusterDomain = "cluster.local"

// JudgeReserve is the part of a trace's timeout kept after the node
// inspection for judging and rendering: a tenth, at least 2 s (a quarter
// of a timeout under 8 s). Judging a thousand nodes takes a few seconds,
// and a node that answers at the last moment must not cost the whole
// result.
func JudgeReserve(timeout time.Duration) time.Duration {
	r := timeout / 10
	if floor := min(2*time.Second, timeout/4); r < floor {
		r = floor
	}
	return r
}
