package input

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	anpv1alpha1 "sigs.k8s.io/network-policy-api/apis/v1alpha1"

	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// PageSize is the Limit of every list request; lists follow Continue tokens.
const PageSize = 500

// Input is what the API says about one Service: the objects every check reads.
// Fetch fills it with six requests when the Service is healthy; the node plan
// (package plan) reads it to know which nodes, IPs and ports to look at.
type Input struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Service is nil when the Service does not exist (see ServiceNotFound).
	Service         *corev1.Service `json:"service,omitempty"`
	ServiceNotFound bool            `json:"serviceNotFound,omitempty"`
	// ClosestServices are the Service names nearest to Name (only when not found).
	ClosestServices []string `json:"closestServices,omitempty"`
	// NamespaceNotFound: the Service is missing because its namespace is
	// (only when the namespace could be read); ClosestNamespaces then holds
	// the nearest namespace names.
	NamespaceNotFound bool     `json:"namespaceNotFound,omitempty"`
	ClosestNamespaces []string `json:"closestNamespaces,omitempty"`

	// Slices are every EndpointSlice labelled kubernetes.io/service-name=Name.
	Slices []discoveryv1.EndpointSlice `json:"endpointSlices,omitempty"`
	// slicesVersion is the resource version Slices were listed at.
	slicesVersion string
	// SlicesChangedDuringRead are the changes to the Service's EndpointSlices
	// made while the nodes were read (seen by a watch from slicesVersion):
	// the rules read on a node may already hold a newer state than Slices.
	SlicesChangedDuringRead []SliceChange `json:"slicesChangedDuringRead,omitempty"`
	// Pods are the Pods the Service's selector matches (empty without selector).
	Pods []corev1.Pod `json:"pods,omitempty"`
	// ExtraPods are endpoint targetRef Pods outside Pods, looked up one by one
	// (failure path only). A nil value means the Pod does not exist.
	ExtraPods map[string]*corev1.Pod `json:"extraPods,omitempty"`
	// UnownedIPs are endpoint addresses without a Pod reference that lie in a
	// node's Pod CIDR while no Pod has them.
	UnownedIPs []UnownedIP `json:"unownedIPs,omitempty"`
	// UnverifiedTargets are targetRef Pods not looked up (over ExtraPodLimit).
	UnverifiedTargets []string `json:"unverifiedTargets,omitempty"`
	// ClosestPods are Pods of the namespace nearest to the selector, only when
	// the selector matches nothing.
	ClosestPods []corev1.Pod `json:"closestPods,omitempty"`
	// SelectedElsewhere are Pods of other namespaces the selector matches
	// (at most ElsewhereLimit), only when it matches none in the Service's
	// own: a Service selects Pods of its own namespace only. Empty when the
	// cluster-wide list is not permitted.
	SelectedElsewhere []PodRef `json:"selectedElsewhere,omitempty"`
	// Nodes are the nodes read so far, by name. They are read only when a
	// check needs them (see ReadNodes): every node (NodesListed) for a
	// Local traffic policy or --all-nodes, otherwise only the nodes of
	// endpoints that are not ready and of the inspected nodes, one GET each,
	// so a healthy Service in a 5,000-node cluster costs no node list. A nil
	// value records a node that does not exist.
	Nodes       map[string]*corev1.Node `json:"nodes,omitempty"`
	NodesListed bool                    `json:"nodesListed,omitempty"`

	// DNSService and DNSSlices are kube-system/kube-dns and its EndpointSlices.
	DNSService  *corev1.Service             `json:"dnsService,omitempty"`
	DNSNotFound bool                        `json:"dnsNotFound,omitempty"`
	DNSSlices   []discoveryv1.EndpointSlice `json:"dnsEndpointSlices,omitempty"`
	// DNSPods are the cluster DNS endpoints' Pods, read only for a --from
	// Pod, whose egress policies are judged for DNS too.
	DNSPods []corev1.Pod `json:"dnsPods,omitempty"`

	// ProbeEvents are the newest kubelet "Unhealthy" Event (a failing
	// readiness, liveness or startup probe) of each selected Pod, by Pod
	// name. They are read only when a Pod runs but is not ready (one
	// request; by name when only one is): the probe's own error is the
	// evidence the Pod status lacks.
	ProbeEvents map[string]ProbeEvent `json:"probeEvents,omitempty"`

	// NetworkPolicies are the policies of the Service's namespace (and of the
	// --from Pod's); UnreadPolicyNamespaces the namespaces whose list failed.
	NetworkPolicies        []networkingv1.NetworkPolicy `json:"networkPolicies,omitempty"`
	UnreadPolicyNamespaces []string                     `json:"unreadPolicyNamespaces,omitempty"`
	// NamespaceLabels are every namespace's labels, by name, read with one
	// paged list only when a policy's namespaceSelector needs more than a
	// namespace's name; NamespaceLabelsUnread says why that list failed
	// (the answers that need the labels are then undetermined, not denied).
	NamespaceLabels       map[string]map[string]string `json:"namespaceLabels,omitempty"`
	NamespaceLabelsUnread string                       `json:"namespaceLabelsUnread,omitempty"`

	// AdminNetworkPolicies and BaselineAdminNetworkPolicies are the admin
	// tiers, read when the API serves them; AdminPoliciesUnread says why
	// they could not be (the answers they could change are undetermined).
	AdminNetworkPolicies         []anpv1alpha1.AdminNetworkPolicy         `json:"adminNetworkPolicies,omitempty"`
	BaselineAdminNetworkPolicies []anpv1alpha1.BaselineAdminNetworkPolicy `json:"baselineAdminNetworkPolicies,omitempty"`
	AdminPoliciesUnread          string                                   `json:"adminPoliciesUnread,omitempty"`
	// UnevaluatedPolicies are the policy kinds the API serves that svctrace
	// does not evaluate (Cilium's, Calico's), counted where they could apply.
	UnevaluatedPolicies []UnevaluatedPolicy `json:"unevaluatedPolicies,omitempty"`

	// Gaps are the reads that failed; each turns its layer unknown.
	Gaps []Gap `json:"gaps,omitempty"`

	// Frontdoor is the route, Gateway or Ingress the trace started at, nil
	// for a trace of a Service (see CollectBackend).
	Frontdoor *frontdoor.Input `json:"frontdoor,omitempty"`
}

// ProbeEvent is the newest probe failure the kubelet reported for a Pod.
type ProbeEvent struct {
	Message string    `json:"message"`
	Count   int32     `json:"count,omitempty"`
	Last    time.Time `json:"last"`
}

// Gap is one failed read: what could not be read, why, and which layer it blinds.
type Gap struct {
	Layer     report.LayerName
	Verb      string // get, list
	Resource  string // endpointslices.discovery.k8s.io
	Namespace string // "" for cluster-scoped
	Forbidden bool
	Err       error
	// Impact says what the trace cannot judge without it.
	Impact string
}

// gapJSON is a Gap as a saved trace holds it: the error as its message,
// which is all a judgement reads of it.
type gapJSON struct {
	Layer     report.LayerName `json:"layer,omitempty"`
	Verb      string           `json:"verb"`
	Resource  string           `json:"resource"`
	Namespace string           `json:"namespace,omitempty"`
	Forbidden bool             `json:"forbidden,omitempty"`
	Error     string           `json:"error,omitempty"`
	Impact    string           `json:"impact,omitempty"`
}

// MarshalJSON writes Err as its message: an error value has no JSON form.
func (g Gap) MarshalJSON() ([]byte, error) {
	j := gapJSON{Layer: g.Layer, Verb: g.Verb, Resource: g.Resource, Namespace: g.Namespace, Forbidden: g.Forbidden, Impact: g.Impact}
	if g.Err != nil {
		j.Error = g.Err.Error()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON wrote; Err then carries the saved
// message and nothing else (it no longer matches apierrors predicates, which
// is why Forbidden is kept as a field).
func (g *Gap) UnmarshalJSON(b []byte) error {
	var j gapJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*g = Gap{Layer: j.Layer, Verb: j.Verb, Resource: j.Resource, Namespace: j.Namespace, Forbidden: j.Forbidden, Impact: j.Impact}
	if j.Error != "" {
		g.Err = errors.New(j.Error)
	}
	return nil
}

// Describe renders the gap the way kubectl names permissions.
func (g Gap) Describe() string {
	return fmt.Sprintf("cannot %s %s in %s", g.Verb, g.Resource, g.Scope())
}

// Scope is where the read was refused, in kubectl auth can-i's words.
func (g Gap) Scope() string {
	if g.Namespace == "" {
		return "the cluster scope"
	}
	return "namespace " + g.Namespace
}

// ExtraPodLimit bounds the single-Pod gets for endpoints whose Pod is not
// among the selected ones.
const ExtraPodLimit = 20

// Resource names used in gaps and next steps.
const (
	ResourceServices       = "services"
	ResourceEndpointSlices = "endpointslices.discovery.k8s.io"
	ResourcePods           = "pods"
	ResourceNodes          = "nodes"
	ResourceEvents         = "events"
)

// Fetch reads the Service and everything its checks need. It returns an error
// only when the trace cannot run at all: the Service itself could not be read
// (other than NotFound) or ctx ended. Other failures become Gaps.
func Fetch(ctx context.Context, client kubernetes.Interface, namespace, name string) (*Input, error) {
	in := &Input{Namespace: namespace, Name: name}
	svc, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		in.ServiceNotFound = true
		if _, err := client.CoreV1().Namespaces().Get(ctx, namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
			in.NamespaceNotFound = true
			if list, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 4 * PageSize}); err == nil {
				var names []string
				for _, ns := range list.Items {
					names = append(names, ns.Name)
				}
				in.ClosestNamespaces = Closest(namespace, names, 3)
			}
			return in, ctx.Err()
		}
		names, gap := listServiceNames(ctx, client, namespace)
		if gap != nil {
			gap.Impact = "closest Service names not shown"
			in.Gaps = append(in.Gaps, *gap)
		}
		in.ClosestServices = Closest(name, names, 3)
		return in, ctx.Err()
	case err != nil:
		return nil, fmt.Errorf("cannot get service %s in namespace %s: %w", name, namespace, err)
	}
	in.Service = svc

	var mu sync.Mutex
	addGap := func(g Gap) {
		mu.Lock()
		in.Gaps = append(in.Gaps, g)
		mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	if svc.Spec.Type != corev1.ServiceTypeExternalName {
		g.Go(func() error {
			slices, version, err := listSlices(gctx, client, namespace, name)
			if err != nil {
				addGap(NewGap(report.LayerEndpoints, "list", ResourceEndpointSlices, namespace, err, "endpoints cannot be judged"))
				return nil
			}
			in.Slices, in.slicesVersion = slices, version
			if needsAllNodes(svc) {
				return nil // every node is listed in parallel (below)
			}
			// Only an endpoint that is not ready needs its node (to say
			// whether the node is the reason); a healthy Service needs none.
			if names := notReadyEndpointNodes(slices); len(names) > 0 {
				if err := in.ReadNodes(gctx, client, names, false); err != nil {
					addGap(NewGap("", nodesVerb(len(names)), ResourceNodes, "", err, "node readiness not checked"))
				}
			}
			return nil
		})
		if len(svc.Spec.Selector) > 0 {
			g.Go(func() error {
				// The policy layer: one paged list in the Service's namespace.
				pin := &Input{Namespace: namespace}
				FetchPolicies(gctx, client, pin)
				mu.Lock()
				in.NetworkPolicies, in.UnreadPolicyNamespaces = pin.NetworkPolicies, pin.UnreadPolicyNamespaces
				in.Gaps = append(in.Gaps, pin.Gaps...)
				mu.Unlock()
				return nil
			})
			g.Go(func() error {
				pods, err := listPods(gctx, client, namespace, labels.SelectorFromSet(svc.Spec.Selector).String(), 0)
				if err != nil {
					addGap(NewGap(report.LayerEndpoints, "list", ResourcePods, namespace, err, "Pods behind the Service cannot be judged"))
					return nil
				}
				in.Pods = pods
				return nil
			})
		}
		if needsAllNodes(svc) {
			g.Go(func() error {
				if err := in.ReadNodes(gctx, client, nil, true); err != nil {
					// Nodes are cluster-scoped and often not readable: the checks
					// that need them are skipped (API003), the layer still judges.
					addGap(NewGap("", "list", ResourceNodes, "", err, "node readiness and per-node traffic policy not checked"))
				}
				return nil
			})
		}
	}
	g.Go(func() error {
		dns, err := client.CoreV1().Services("kube-system").Get(gctx, "kube-dns", metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			in.DNSNotFound = true
			return nil
		case err != nil:
			addGap(NewGap(report.LayerDNS, "get", ResourceServices, "kube-system", err, "cluster DNS Service not checked"))
			return nil
		}
		in.DNSService = dns
		return nil
	})
	g.Go(func() error {
		slices, _, err := listSlices(gctx, client, "kube-system", "kube-dns")
		if err != nil {
			addGap(NewGap(report.LayerDNS, "list", ResourceEndpointSlices, "kube-system", err, "cluster DNS endpoints not checked"))
			return nil
		}
		in.DNSSlices = slices
		return nil
	})
	_ = g.Wait() // every goroutine records its error as a gap
	// Goroutines finish in any order; sort so output is stable.
	sort.SliceStable(in.Gaps, func(a, b int) bool {
		ga, gb := in.Gaps[a], in.Gaps[b]
		if ga.Layer != gb.Layer {
			return ga.Layer < gb.Layer
		}
		if ga.Resource != gb.Resource {
			return ga.Resource > gb.Resource // services before endpointslices
		}
		return ga.Verb < gb.Verb
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	FetchNamespaceLabels(ctx, client, in)
	fetchFailurePaths(ctx, client, in)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return in, nil
}

// fetchFailurePaths makes the requests only a broken Service needs: the
// closest Pods when the selector matches none, and the Pods behind endpoints
// that are not among the selected ones.
func fetchFailurePaths(ctx context.Context, client kubernetes.Interface, in *Input) {
	svc := in.Service
	if len(svc.Spec.Selector) > 0 && len(in.Pods) == 0 && !in.HasGap(report.LayerEndpoints, ResourcePods) {
		pods, err := listPods(ctx, client, in.Namespace, "", 4*PageSize)
		if err != nil {
			in.Gaps = append(in.Gaps, NewGap(report.LayerService, "list", ResourcePods, in.Namespace, err, "closest Pods not shown"))
		} else {
			in.ClosestPods = closestPods(svc.Spec.Selector, pods, 3)
		}
		in.SelectedElsewhere = selectedElsewhere(ctx, client, in.Namespace, svc.Spec.Selector)
	}
	if in.HasGap(report.LayerEndpoints, ResourcePods) {
		return
	}
	fetchUnownedIPs(ctx, client, in)
	fetchProbeEvents(ctx, client, in)
	known := make(map[string]bool, len(in.Pods))
	for i := range in.Pods {
		known[in.Pods[i].Name] = true
	}
	var missing []string
	seen := map[string]bool{}
	for i := range in.Slices {
		for _, ep := range in.Slices[i].Endpoints {
			ref := ep.TargetRef
			if ref == nil || ref.Kind != "Pod" || (ref.Namespace != "" && ref.Namespace != in.Namespace) {
				continue
			}
			if known[ref.Name] || seen[ref.Name] {
				continue
			}
			seen[ref.Name] = true
			missing = append(missing, ref.Name)
		}
	}
	for i, name := range missing {
		if i >= ExtraPodLimit {
			in.UnverifiedTargets = missing[i:]
			break
		}
		pod, err := client.CoreV1().Pods(in.Namespace).Get(ctx, name, metav1.GetOptions{})
		if in.ExtraPods == nil {
			in.ExtraPods = map[string]*corev1.Pod{}
		}
		switch {
		case apierrors.IsNotFound(err):
			in.ExtraPods[name] = nil
		case err != nil:
			in.UnverifiedTargets = append(in.UnverifiedTargets, name)
		default:
			in.ExtraPods[name] = pod
		}
	}
}

// UnownedIPLimit bounds the endpoint IPs without a Pod reference that
// fetchUnownedIPs looks up, one field-selected list each.
const UnownedIPLimit = 20

// fetchUnownedIPs looks for the Pod behind each endpoint that names none (a
// hand-made EndpointSlice, another controller's) and whose IP lies inside a
// node's Pod CIDR: such an address belongs to a Pod or to nobody. It needs the
// nodes' Pod CIDRs (one paged list) and one list per IP, field-selected on
// status.podIP across namespaces; addresses outside every Pod CIDR (external
// backends, node addresses) are left alone.
func fetchUnownedIPs(ctx context.Context, client kubernetes.Interface, in *Input) {
	var ips []netip.Addr
	seen := map[netip.Addr]bool{}
	for i := range in.Slices {
		for _, ep := range in.Slices[i].Endpoints {
			if ep.TargetRef != nil {
				continue
			}
			for _, a := range ep.Addresses {
				ip, err := netip.ParseAddr(a)
				if err == nil && !seen[ip] {
					seen[ip] = true
					ips = append(ips, ip)
				}
			}
		}
	}
	if len(ips) == 0 {
		return
	}
	if !in.NodesListed {
		if err := in.ReadNodes(ctx, client, nil, true); err != nil {
			in.Gaps = append(in.Gaps, NewGap("", "list", ResourceNodes, "", err, "endpoint IPs without a Pod reference not checked against the Pod CIDRs"))
			return
		}
	}
	var cidrs []netip.Prefix
	for _, n := range in.Nodes {
		if n == nil {
			continue
		}
		for _, c := range n.Spec.PodCIDRs {
			if p, err := netip.ParsePrefix(c); err == nil {
				cidrs = append(cidrs, p)
			}
		}
	}
	checked := 0
	for _, ip := range ips {
		var inside netip.Prefix
		for _, p := range cidrs {
			if p.Contains(ip) {
				inside = p
				break
			}
		}
		if !inside.IsValid() {
			continue
		}
		if checked == UnownedIPLimit {
			break
		}
		checked++
		list, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "status.podIP=" + ip.String(), Limit: 1})
		if err != nil {
			in.Gaps = append(in.Gaps, NewGap(report.LayerEndpoints, "list", ResourcePods, "", err, "endpoint IPs without a Pod reference not checked for an owner"))
			return
		}
		if len(list.Items) == 0 {
			in.UnownedIPs = append(in.UnownedIPs, UnownedIP{IP: ip.String(), PodCIDR: inside.String()})
		}
	}
}

// UnownedIP is an endpoint address in a Pod CIDR that no Pod owns.
type UnownedIP struct {
	IP      string `json:"ip"`
	PodCIDR string `json:"podCIDR"`
}

// HasGap says whether a read of resource for layer failed already, so that a
// later read of the same does not report it twice.
func (in *Input) HasGap(layer report.LayerName, resource string) bool {
	for _, g := range in.Gaps {
		if g.Layer == layer && g.Resource == resource {
			return true
		}
	}
	return false
}

// NewGap is the gap of a failed read; Forbidden comes from the error.
func NewGap(layer report.LayerName, verb, resource, namespace string, err error, impact string) Gap {
	return Gap{Layer: layer, Verb: verb, Resource: resource, Namespace: namespace,
		Forbidden: apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err), Err: err, Impact: impact}
}

func listSlices(ctx context.Context, client kubernetes.Interface, namespace, service string) ([]discoveryv1.EndpointSlice, string, error) {
	var out []discoveryv1.EndpointSlice
	var version string
	opts := metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service, Limit: PageSize}
	for {
		list, err := client.DiscoveryV1().EndpointSlices(namespace).List(ctx, opts)
		if err != nil {
			return nil, "", err
		}
		// Every page of a paged list is the first page's snapshot.
		if version == "" {
			version = list.ResourceVersion
		}
		out = append(out, list.Items...)
		if list.Continue == "" {
			return out, version, nil
		}
		opts.Continue = list.Continue
	}
}

// listPods lists Pods by selector; max > 0 stops after about max Pods.
// PodRef names a Pod of any namespace.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (r PodRef) String() string { return r.Namespace + "/" + r.Name }

// ElsewhereLimit bounds the Pods of other namespaces a selector that matches
// none in its own is shown to match.
const ElsewhereLimit = 10

// selectedElsewhere lists, across namespaces, the Pods the selector matches
// outside namespace: one request with the selector, at most ElsewhereLimit.
// It is a hint only: a forbidden cluster-wide list (a user bound to one
// namespace) or any other error gives none, and the trace says nothing of it.
func selectedElsewhere(ctx context.Context, client kubernetes.Interface, namespace string, selector map[string]string) []PodRef {
	list, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(selector).String(), Limit: ElsewhereLimit + 1})
	if err != nil {
		return nil
	}
	var out []PodRef
	for _, p := range list.Items {
		if p.Namespace != namespace && len(out) < ElsewhereLimit {
			out = append(out, PodRef{Namespace: p.Namespace, Name: p.Name})
		}
	}
	return out
}

func listPods(ctx context.Context, client kubernetes.Interface, namespace, selector string, max int) ([]corev1.Pod, error) {
	var out []corev1.Pod
	opts := metav1.ListOptions{LabelSelector: selector, Limit: PageSize}
	for {
		list, err := client.CoreV1().Pods(namespace).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, list.Items...)
		if list.Continue == "" || (max > 0 && len(out) >= max) {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

// eventPages bounds the Event pages fetchProbeEvents reads.
const eventPages = 4

// fetchProbeEvents reads the kubelet's probe failures when a selected Pod
// runs but is not ready: the namespace's Unhealthy Pod Events (only that
// Pod's when it is the only one), at most eventPages pages.
func fetchProbeEvents(ctx context.Context, client kubernetes.Interface, in *Input) {
	pods := map[string]*corev1.Pod{}
	for i := range in.Pods {
		p := &in.Pods[i]
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && !PodReady(p) {
			pods[p.Name] = p
		}
	}
	if len(pods) == 0 {
		return
	}
	selector := "involvedObject.kind=Pod,reason=Unhealthy"
	if len(pods) == 1 {
		for name := range pods {
			selector += ",involvedObject.name=" + name
		}
	}
	// At most eventPages pages: Events live an hour, and a namespace full
	// of failing probes must not turn one trace into an unbounded read.
	var items []corev1.Event
	opts := metav1.ListOptions{FieldSelector: selector, Limit: PageSize}
	for page := 0; page < eventPages; page++ {
		list, err := client.CoreV1().Events(in.Namespace).List(ctx, opts)
		if err != nil {
			in.Gaps = append(in.Gaps, NewGap(report.LayerEndpoints, "list", ResourceEvents, in.Namespace, err, "probe failure messages not shown"))
			return
		}
		items = append(items, list.Items...)
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	for i := range items {
		ev := &items[i]
		p := pods[ev.InvolvedObject.Name]
		if p == nil || ev.Reason != "Unhealthy" || (ev.InvolvedObject.UID != "" && ev.InvolvedObject.UID != p.UID) {
			continue // another Pod, or an earlier Pod of the same name
		}
		pe := ProbeEvent{Message: ev.Message, Count: ev.Count, Last: ev.LastTimestamp.Time}
		if !ev.EventTime.IsZero() && ev.EventTime.After(pe.Last) {
			pe.Last = ev.EventTime.Time
		}
		if s := ev.Series; s != nil {
			pe.Count = s.Count
			if s.LastObservedTime.After(pe.Last) {
				pe.Last = s.LastObservedTime.Time
			}
		}
		if old, ok := in.ProbeEvents[p.Name]; ok && !pe.Last.After(old.Last) {
			continue
		}
		if in.ProbeEvents == nil {
			in.ProbeEvents = map[string]ProbeEvent{}
		}
		in.ProbeEvents[p.Name] = pe
	}
}

// NodeGetLimit is how many nodes ReadNodes reads one by one; more take one
// paged list of every node.
const NodeGetLimit = 8

// nodesVerb is the API verb ReadNodes uses for n nodes.
func nodesVerb(n int) string {
	if n > NodeGetLimit {
		return "list"
	}
	return "get"
}

// Node returns a node read earlier; known is false when it was not read
// (then nothing can be said about it), node is nil when it does not exist.
func (in *Input) Node(name string) (node *corev1.Node, known bool) {
	node, known = in.Nodes[name]
	if !known && in.NodesListed {
		return nil, true
	}
	return node, known
}

// ReadNodes adds the named nodes to in.Nodes (all: every node, one paged
// list): up to NodeGetLimit are read with one GET each, in parallel; more
// with a list. Nodes already read are not read again. It is not safe for
// concurrent use on one Input.
func (in *Input) ReadNodes(ctx context.Context, client kubernetes.Interface, names []string, all bool) error {
	if in.NodesListed {
		return nil
	}
	var todo []string
	for _, n := range names {
		if _, ok := in.Nodes[n]; !ok && n != "" && !slices.Contains(todo, n) {
			todo = append(todo, n)
		}
	}
	if !all && len(todo) == 0 {
		return nil
	}
	if all || len(todo) > NodeGetLimit {
		nodes, err := listNodes(ctx, client)
		if err != nil {
			return err
		}
		in.Nodes, in.NodesListed = nodes, true
		return nil
	}
	got := make([]*corev1.Node, len(todo))
	g, gctx := errgroup.WithContext(ctx)
	for i, name := range todo {
		g.Go(func() error {
			n, err := client.CoreV1().Nodes().Get(gctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil // recorded as nil: the node does not exist
			}
			got[i] = n
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if in.Nodes == nil {
		in.Nodes = map[string]*corev1.Node{}
	}
	for i, name := range todo {
		in.Nodes[name] = got[i]
	}
	return nil
}

// needsAllNodes: a Local traffic policy is judged against every node (which
// nodes have no local endpoint), so those Services list the nodes.
func needsAllNodes(svc *corev1.Service) bool {
	etp, itp := LocalTrafficPolicies(svc)
	// Source ranges are checked against every node's address and Pod CIDR.
	ranges := svc.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		(len(svc.Spec.LoadBalancerSourceRanges) > 0 || svc.Annotations[corev1.AnnotationLoadBalancerSourceRangesKey] != "")
	return etp || itp || ranges
}

// LocalTrafficPolicies says which Local traffic policies take effect:
// externalTrafficPolicy only where the Service is reachable from outside
// (NodePort, LoadBalancer, externalIPs), internalTrafficPolicy only where
// it has a ClusterIP.
func LocalTrafficPolicies(svc *corev1.Service) (etpLocal, itpLocal bool) {
	s := svc.Spec
	external := s.Type == corev1.ServiceTypeNodePort || s.Type == corev1.ServiceTypeLoadBalancer || len(s.ExternalIPs) > 0
	etpLocal = external && s.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	itpLocal = s.ClusterIP != corev1.ClusterIPNone && s.InternalTrafficPolicy != nil &&
		*s.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal
	return etpLocal, itpLocal
}

// notReadyEndpointNodes are the nodes of the endpoints that are not ready.
func notReadyEndpointNodes(sls []discoveryv1.EndpointSlice) []string {
	var out []string
	for i := range sls {
		for _, ep := range sls[i].Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready && ep.NodeName != nil && !slices.Contains(out, *ep.NodeName) {
				out = append(out, *ep.NodeName)
			}
		}
	}
	return out
}

func listNodes(ctx context.Context, client kubernetes.Interface) (map[string]*corev1.Node, error) {
	out := map[string]*corev1.Node{}
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		list, err := client.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			out[list.Items[i].Name] = &list.Items[i]
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func listServiceNames(ctx context.Context, client kubernetes.Interface, namespace string) ([]string, *Gap) {
	var names []string
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		list, err := client.CoreV1().Services(namespace).List(ctx, opts)
		if err != nil {
			g := NewGap(report.LayerService, "list", ResourceServices, namespace, err, "")
			return names, &g
		}
		for _, s := range list.Items {
			names = append(names, s.Name)
		}
		if list.Continue == "" || len(names) >= 4*PageSize {
			return names, nil
		}
		opts.Continue = list.Continue
	}
}

// Short is the gap's reason in a word or the error's message, for a
// sentence that names the read already.
func (g Gap) Short() string {
	if g.Forbidden {
		return "forbidden"
	}
	if g.Err == nil {
		return "error"
	}
	return g.Err.Error()
}

// PodReady says whether the Pod's Ready condition is True.
func PodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// NodeReady says whether the Node's Ready condition is True.
func NodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
