package trace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Options shape one trace.
type Options struct {
	// Port limits the trace to one Service port, by name or number.
	Port string
	// ClusterDomain is the cluster's DNS suffix (default cluster.local).
	ClusterDomain string
	// Version is svctrace's version, Context the kubeconfig context name.
	Version string
	Context string
	// Now is the clock (tests inject a fixed one).
	Now func() time.Time
	// NoNode skips the node layers; Inspector observes them otherwise (nil:
	// not available in this build).
	NoNode    bool
	Inspector plan.NodeInspector
	// Nodes is which nodes to inspect (--node, --all-nodes).
	Nodes plan.NodeSelection
	// From is the client (--from) the policy layer judges; nil means any client.
	From *report.PolicyClient
	// Policies reads the policy kinds beyond NetworkPolicy (nil: they are
	// reported present but unread wherever the API serves them).
	Policies input.PolicyReader
	// Planned, when set, is told how many nodes the plan runs collectors
	// on before they start: the command lets the trace's time grow with
	// them.
	Planned func(nodes int)
	// NodesBy, when set, is when the node inspection must end, asked once
	// the plan is known (Planned may have moved the trace's end): a node
	// still collecting then is reported as not inspected, and the trace
	// keeps the time after it to judge and render. The inspector sees it
	// as its context's deadline.
	NodesBy func() time.Time
}

// PortNotFoundError says --port names no port of the Service: a usage error,
// found before any collector starts.
type PortNotFoundError struct {
	Service string
	Port    string
	// Ports are the Service's ports as "name port/protocol".
	Ports []string
}

func (e *PortNotFoundError) Error() string {
	if len(e.Ports) == 0 {
		return fmt.Sprintf("--port %s: Service %s has no ports", e.Port, e.Service)
	}
	return fmt.Sprintf("--port %s matches no port of Service %s; its ports are: %s", e.Port, e.Service, strings.Join(e.Ports, ", "))
}

// Run fetches the Service's objects, plans the node inspection, has the
// inspector observe the nodes, and assembles the result. Data flows one way:
// the inspector gets a plan and returns a report; it never touches the
// input or the result. The error is set only when the trace could not run at
// all (or --port names no port, a *PortNotFoundError).
func Run(ctx context.Context, client kubernetes.Interface, namespace, name string, opts Options) (*report.ServiceTrace, error) {
	in, nodes, err := Collect(ctx, client, namespace, name, opts)
	if err != nil {
		return nil, err
	}
	return Assemble(in, nodes, opts), nil
}

// Collect is the part of Run that reads the cluster: the API input and the
// node report (nil when the node layers were not inspected). Assemble of
// its two results with the same opts is Run's result, so a caller that
// keeps them (a saved trace) can judge them again later.
func Collect(ctx context.Context, client kubernetes.Interface, namespace, name string, opts Options) (*input.Input, *plan.NodeReport, error) {
	if p, ok := opts.Inspector.(plan.NodePrefetcher); ok && opts.nodeSkipReason() == "" {
		p.Prefetch(ctx)
	}
	in, err := input.Fetch(ctx, client, namespace, name)
	if err != nil {
		return nil, nil, err
	}
	if err := checkPort(in, opts.Port); err != nil {
		return nil, nil, err
	}
	if f := opts.From; f != nil && f.Pod != nil && f.Pod.Namespace != namespace && in.Service != nil {
		// The client's own egress policies live in its namespace.
		extra := &input.Input{Namespace: f.Pod.Namespace}
		input.FetchPolicies(ctx, client, extra)
		in.NetworkPolicies = append(in.NetworkPolicies, extra.NetworkPolicies...)
		in.UnreadPolicyNamespaces = append(in.UnreadPolicyNamespaces, extra.UnreadPolicyNamespaces...)
		in.Gaps = append(in.Gaps, extra.Gaps...)
	}
	if f := opts.From; f != nil && f.Pod != nil && in.Service != nil {
		input.FetchDNSPods(ctx, client, in)
	}
	if svc := in.Service; svc != nil && len(svc.Spec.Selector) > 0 {
		namespaces := []string{namespace}
		if f := opts.From; f != nil && f.Pod != nil && f.Pod.Namespace != namespace {
			namespaces = append(namespaces, f.Pod.Namespace)
		}
		input.FetchPolicyKinds(ctx, opts.Policies, in, namespaces)
		// The client's egress policies and the admin tiers may need them too.
		input.FetchNamespaceLabels(ctx, client, in)
	}
	var nodes *plan.NodeReport
	if !in.ServiceNotFound && opts.nodeSkipReason() == "" && opts.Inspector != nil {
		nodes, err = inspect(ctx, client, in, opts)
		if err != nil {
			return nil, nil, err
		}
	}
	return in, nodes, nil
}

// inspect reads the nodes the plan needs, plans and runs the inspector.
func inspect(ctx context.Context, client kubernetes.Interface, in *input.Input, opts Options) (*plan.NodeReport, error) {
	if err := plan.ReadNodes(ctx, client, in, opts.Nodes, opts.From); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if opts.Nodes.AllNodes {
			return &plan.NodeReport{Failure: "--all-nodes: " + err.Error()}, nil
		}
		// The plan still follows the EndpointSlices' node names; what the
		// Node objects would have added (zones, readiness, a Ready stand-in)
		// is missing, and the trace says so rather than dropping the error.
		if !in.HasGap("", input.ResourceNodes) {
			in.Gaps = append(in.Gaps, input.NewGap("", "get", input.ResourceNodes, "", err, "the nodes to inspect were chosen without their Node objects"))
		}
	}
	np := plan.PlanNodes(in, opts.Nodes, opts.From, opts.ClusterDomain)
	if opts.Planned != nil {
		opts.Planned(len(np.Nodes))
	}
	stopWatch := input.WatchSlices(ctx, client, in)
	ictx := ctx
	if opts.NodesBy != nil {
		var cancel context.CancelFunc
		ictx, cancel = context.WithDeadline(ctx, opts.NodesBy())
		defer cancel()
	}
	nodes, err := opts.Inspector.Inspect(ictx, np)
	in.SlicesChangedDuringRead = stopWatch()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		if ictx.Err() != nil {
			// An inspector that gives up whole when its time ends: no
			// node answered in the time the trace had for them.
			return &plan.NodeReport{Failure: "the nodes did not answer before the trace's time for them ran out (--timeout raises it)"}, nil
		}
		return &plan.NodeReport{Failure: "node inspection failed: " + err.Error()}, nil
	}
	return nodes, nil
}

// checkPort returns a *PortNotFoundError when --port names no Service port.
func checkPort(in *input.Input, port string) error {
	if port == "" || in.Service == nil {
		return nil
	}
	var ports []string
	for _, p := range in.Service.Spec.Ports {
		if p.Name == port || strconv.Itoa(int(p.Port)) == port {
			return nil
		}
		s := fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		if p.Name != "" {
			s = p.Name + " " + s
		}
		ports = append(ports, s)
	}
	return &PortNotFoundError{Service: in.Namespace + "/" + in.Name, Port: port, Ports: ports}
}

// Assemble judges a trace from the API input and what the node side
// reported (nil: the node layers were not inspected), with no I/O. It is
// the one function both a live trace and a saved one go through.
func Assemble(in *input.Input, nodes *plan.NodeReport, opts Options) *report.ServiceTrace {
	if in.Frontdoor != nil && in.Name == "" {
		return frontdoorOnly(in, opts)
	}
	t := judgeAPI(in, opts)
	judgeFrontdoor(in, t)
	if !in.ServiceNotFound {
		switch reason := opts.nodeSkipReason(); {
		case reason != "":
			skipNodeLayers(t, reason)
		case nodes == nil:
			skipNodeLayers(t, report.ReasonNoCollector)
		default:
			if nodes.Collector != nil {
				c := *nodes.Collector
				t.Metadata.Collector = &c
			}
			if nodes.Failure != "" {
				for _, name := range report.NodeLayers {
					l := t.Layer(name)
					if l.Status == "" && len(l.Checks) == 0 {
						l.Status = report.StatusUnknown
						l.Reason = nodes.Failure
					}
				}
			} else {
				// Before the node findings link to it: the client's DNS
				// egress against the resolver it really asks.
				judgeClientResolverEgress(in, t, nodes.Nodes, opts.From)
				nj := judgeNodes(in, t, slices.Clone(nodes.Nodes), opts.From)
				judgePolicyEnforcement(in, t, nodes.Nodes)
				t.Matrix = endpointMatrix(nj, nodes.Nodes)
				t.Shares = shareTable(nj, nodes.Nodes)
			}
		}
	}
	t.Metadata.Client = opts.From.String()
	finish(t)
	return t
}

// nodeSkipReason is why node layers are not inspected, or "" when they are.
func (o Options) nodeSkipReason() string {
	if o.NoNode {
		return report.ReasonNoNode
	}
	return ""
}

// finish computes each layer's status from its checks (unless the layer was
// already skipped) and the verdict. It is idempotent.
func finish(t *report.ServiceTrace) {
	for i := range t.Layers {
		finishLayer(&t.Layers[i])
	}
	t.Verdict = verdict(t)
	t.Verdict.Fingerprint = fingerprint(t)
}

var statusRank = map[report.Status]int{report.StatusPass: 1, report.StatusWarn: 2, report.StatusUnknown: 3, report.StatusFail: 4}

func finishLayer(l *report.Layer) {
	if l.Status == report.StatusSkipped {
		return
	}
	worst := l.Status // "" or a status preset by a gap or an inspector
	var first *report.Check
	for i := range l.Checks {
		c := &l.Checks[i]
		if statusRank[c.Status] > statusRank[worst] {
			worst = c.Status
			first = c
		}
	}
	if statusRank[worst] < statusRank[report.StatusUnknown] {
		// A node that could not be inspected leaves the layer unjudged
		// there: nothing failed, but the layer was not looked at
		// everywhere it was asked to be, and "could not look" is not
		// "found nothing wrong".
		for _, n := range l.Nodes {
			if n.Status == report.StatusUnknown {
				worst, first = report.StatusUnknown, nil
				if l.Reason == "" {
					l.Reason = "node " + n.Node + " not judged: " + n.Reason
				}
				break
			}
		}
	}
	if worst == "" {
		worst = report.StatusUnknown
		if l.Reason == "" {
			l.Reason = "no checks ran"
		}
		for _, c := range l.Checks {
			if c.Status == report.StatusSkipped {
				worst = report.StatusSkipped
				l.Reason = c.Message
				break
			}
		}
	}
	if l.Reason == "" && first != nil && worst != report.StatusPass {
		l.Reason = first.Title
	}
	l.Status = worst
}

func verdict(t *report.ServiceTrace) report.Verdict {
	svc := t.Subject()
	var warned, unknown, skipped []string
	for i := range t.Layers {
		l := &t.Layers[i]
		switch l.Status {
		case report.StatusFail:
			v := report.Verdict{
				Status:            report.StatusFail,
				FirstFailingLayer: l.Name,
				Summary:           fmt.Sprintf("traffic to %s fails at the %s layer: %s", svc, l.Name, l.Reason),
			}
			if c := likelyCause(l); c != nil {
				v.LikelyCause, v.Code, v.Node = c.Message, c.Code, c.Node
				if cause, ref := deepestCause(t, c.ExplainedBy); cause != nil {
					v.RootCauseLayer = ref.Layer
					v.Summary += "; the cause is in the " + string(v.RootCauseLayer) + " layer: " + cause.Title
					if cause.Node != "" {
						v.Summary += " on " + cause.Node
					}
					v.LikelyCause, v.Code, v.Node = cause.Message, cause.Code, cause.Node
				}
			}
			return v
		case report.StatusWarn:
			warned = append(warned, string(l.Name))
		case report.StatusUnknown:
			unknown = append(unknown, string(l.Name)+" ("+l.Reason+")")
		case report.StatusSkipped:
			skipped = append(skipped, string(l.Name))
		}
	}
	suffix := ""
	if len(skipped) > 0 {
		suffix = "; not checked: " + strings.Join(skipped, ", ")
	}
	var v report.Verdict
	switch {
	case len(unknown) > 0:
		v = report.Verdict{Status: report.StatusUnknown,
			Summary: fmt.Sprintf("no layer of %s failed, but some could not be judged: %s%s", svc, strings.Join(unknown, "; "), suffix)}
	case len(warned) > 0:
		v = report.Verdict{Status: report.StatusWarn,
			Summary: fmt.Sprintf("no layer of %s failed; warnings in %s%s", svc, strings.Join(warned, ", "), suffix)}
	default:
		return report.Verdict{Status: report.StatusPass, Summary: fmt.Sprintf("every checked layer of %s passed%s", svc, suffix)}
	}
	c := firstCheck(t, v.Status)
	if c == nil && v.Status == report.StatusUnknown {
		c = firstCheck(t, report.StatusWarn)
	}
	if c != nil {
		v.Code, v.Node = c.Code, c.Node
	}
	return v
}

// firstCheck is the first check, in LayerOrder, with the given status in a
// layer that was judged (a skipped layer's checks say nothing about traffic).
func firstCheck(t *report.ServiceTrace, status report.Status) *report.Check {
	for i := range t.Layers {
		l := &t.Layers[i]
		if l.Status == report.StatusSkipped {
			continue
		}
		for j := range l.Checks {
			if l.Checks[j].Status == status {
				return &l.Checks[j]
			}
		}
	}
	return nil
}

// fingerprint hashes what identifies a fault, and only that, so every run
// that sees the same fault gives the same key and a different fault a
// different one: the Service (its UID, or namespace/name when it was not
// found and has none), the verdict's code and node. When no check carries
// the verdict (a layer unknown with no checks), the first such layer's name
// stands in for the code. The result is the first 16 bytes of the SHA-256, in
// hex. Nothing time- or order-dependent goes in: Layers and their checks are
// in a fixed order, and nodes are judged sorted by name.
func fingerprint(t *report.ServiceTrace) string {
	v := t.Verdict
	if v.Status == report.StatusPass {
		return ""
	}
	service := t.Service.UID
	if service == "" {
		service = t.Service.Namespace + "/" + t.Service.Name
	}
	code := v.Code
	if code == "" {
		for _, l := range t.Layers {
			if l.Status == v.Status {
				code = "layer:" + string(l.Name)
				break
			}
		}
	}
	sum := sha256.Sum256([]byte(service + "\x00" + code + "\x00" + v.Node))
	return hex.EncodeToString(sum[:16])
}

// likelyCause picks, in a failed layer, the first failing finding that
// explains rather than restates the failure; if only symptoms failed
// (no ready endpoints), the first warning (a crash-looping Pod, say) is the
// likelier cause.
func likelyCause(l *report.Layer) *report.Check {
	var symptom, explained *report.Check
	for i := range l.Checks {
		c := &l.Checks[i]
		if c.Status != report.StatusFail {
			continue
		}
		if c.ExplainedBy != nil {
			// Another finding accounts for it: a failure nothing explains
			// is the likelier cause of its own.
			if explained == nil {
				explained = c
			}
			continue
		}
		if !report.Catalog[c.Code].Symptom {
			return c
		}
		if symptom == nil {
			symptom = c
		}
	}
	if explained != nil && symptom == nil {
		return explained
	}
	for i := range l.Checks {
		if l.Checks[i].Status == report.StatusWarn {
			return &l.Checks[i]
		}
	}
	return symptom
}
