package trace

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// NodeInspector fills the node layers (datapath, conntrack, route, and the
// live part of dns) for one traced Service. It finds the layers with
// t.Layer(name), adds checks from the catalog and per-node results, and may
// set a layer's Status and Reason; Finish then computes the rest. A layer the
// API side already marked skipped (for example datapath of a headless
// Service) must be left alone. Issue 5 implements it with collector Pods.
type NodeInspector interface {
	Inspect(ctx context.Context, in *Input, t *ServiceTrace) error
}

// Reasons for node layers that were not inspected.
const (
	ReasonNoNode      = "--no-node given"
	ReasonNoCollector = "node collector not available in this build"
)

// DefaultClusterDomain is the DNS suffix used when none is given.
const DefaultClusterDomain = "cluster.local"

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
	// NoNode skips the node layers; Inspector fills them otherwise (nil:
	// not available in this build).
	NoNode    bool
	Inspector NodeInspector
	// From is the client (--from) the policy layer judges; nil means any client.
	From *PolicyClient
}

// Run fetches the Service's objects, judges the API-side layers, lets the
// inspector fill the node layers, and computes the verdict. The error is set
// only when the trace could not run at all.
func Run(ctx context.Context, client kubernetes.Interface, namespace, name string, opts Options) (*ServiceTrace, error) {
	in, err := Fetch(ctx, client, namespace, name)
	if err != nil {
		return nil, err
	}
	if f := opts.From; f != nil && f.Pod != nil && f.Pod.Namespace != namespace && in.Service != nil {
		// The client's own egress policies live in its namespace.
		extra := &Input{Namespace: f.Pod.Namespace}
		fetchPolicies(ctx, client, extra)
		in.NetworkPolicies = append(in.NetworkPolicies, extra.NetworkPolicies...)
		in.UnreadPolicyNamespaces = append(in.UnreadPolicyNamespaces, extra.UnreadPolicyNamespaces...)
		in.Gaps = append(in.Gaps, extra.Gaps...)
	}
	t := Judge(in, opts)
	if !in.ServiceNotFound && !opts.NoNode && opts.Inspector != nil {
		if err := opts.Inspector.Inspect(ctx, in, t); err != nil {
			if errCanceled(err) && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			var fatal interface{ FatalToTrace() bool }
			if errors.As(err, &fatal) && fatal.FatalToTrace() {
				return nil, err
			}
			for _, name := range NodeLayers {
				l := t.Layer(name)
				if l.Status == "" && len(l.Checks) == 0 {
					l.Status = StatusUnknown
					l.Reason = "node inspection failed: " + err.Error()
				}
			}
		}
	}
	Finish(t)
	return t, nil
}

// nodeSkipReason is why node layers are not inspected, or "" when they are.
func (o Options) nodeSkipReason() string {
	switch {
	case o.NoNode:
		return ReasonNoNode
	case o.Inspector == nil:
		return ReasonNoCollector
	}
	return ""
}

// Finish computes each layer's status from its checks (unless the layer was
// already skipped) and the verdict. It is idempotent.
func Finish(t *ServiceTrace) {
	for i := range t.Layers {
		finishLayer(&t.Layers[i])
	}
	t.Verdict = verdict(t)
}

var statusRank = map[Status]int{StatusPass: 1, StatusWarn: 2, StatusUnknown: 3, StatusFail: 4}

func finishLayer(l *Layer) {
	if l.Status == StatusSkipped {
		return
	}
	worst := l.Status // "" or a status preset by a gap or an inspector
	var first *Check
	for i := range l.Checks {
		c := &l.Checks[i]
		if statusRank[c.Status] > statusRank[worst] {
			worst = c.Status
			first = c
		}
	}
	if worst == "" {
		worst = StatusUnknown
		if l.Reason == "" {
			l.Reason = "no checks ran"
		}
		for _, c := range l.Checks {
			if c.Status == StatusSkipped {
				worst = StatusSkipped
				l.Reason = c.Message
				break
			}
		}
	}
	if l.Reason == "" && first != nil && worst != StatusPass {
		l.Reason = first.Title
	}
	l.Status = worst
}

func verdict(t *ServiceTrace) Verdict {
	svc := t.Service.Namespace + "/" + t.Service.Name
	var warned, unknown, skipped []string
	for i := range t.Layers {
		l := &t.Layers[i]
		switch l.Status {
		case StatusFail:
			return Verdict{
				Status:            StatusFail,
				FirstFailingLayer: l.Name,
				Summary:           fmt.Sprintf("traffic to %s fails at the %s layer: %s", svc, l.Name, l.Reason),
				LikelyCause:       likelyCause(l),
			}
		case StatusWarn:
			warned = append(warned, string(l.Name))
		case StatusUnknown:
			unknown = append(unknown, string(l.Name)+" ("+l.Reason+")")
		case StatusSkipped:
			skipped = append(skipped, string(l.Name))
		}
	}
	suffix := ""
	if len(skipped) > 0 {
		suffix = "; not checked: " + strings.Join(skipped, ", ")
	}
	switch {
	case len(unknown) > 0:
		return Verdict{Status: StatusUnknown,
			Summary: fmt.Sprintf("no layer of %s failed, but some could not be judged: %s%s", svc, strings.Join(unknown, "; "), suffix)}
	case len(warned) > 0:
		return Verdict{Status: StatusWarn,
			Summary: fmt.Sprintf("no layer of %s failed; warnings in %s%s", svc, strings.Join(warned, ", "), suffix)}
	}
	return Verdict{Status: StatusPass, Summary: fmt.Sprintf("every checked layer of %s passed%s", svc, suffix)}
}

// likelyCause picks, in a failed layer, the first failing finding that
// explains rather than restates the failure; if only symptoms failed
// (no ready endpoints), the first warning (a crash-looping Pod, say) is the
// likelier cause.
func likelyCause(l *Layer) string {
	var symptom string
	for _, c := range l.Checks {
		if c.Status != StatusFail {
			continue
		}
		if !Catalog[c.Code].Symptom {
			return c.Message
		}
		if symptom == "" {
			symptom = c.Message
		}
	}
	for _, c := range l.Checks {
		if c.Status == StatusWarn {
			return c.Message
		}
	}
	return symptom
}
