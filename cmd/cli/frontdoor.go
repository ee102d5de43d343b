package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/svctrace/kubectl-svctrace/bundle"
	"github.com/svctrace/kubectl-svctrace/nodes"
	"github.com/svctrace/kubectl-svctrace/render"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// targetKinds maps what kubectl accepts as TYPE in TYPE/NAME (plural,
// singular, short name, TYPE.GROUP) to the kind a trace starts at; "" is a
// Service.
var targetKinds = map[string]string{
	"svc": "", "service": "", "services": "",
	"httproute": frontdoor.KindHTTPRoute, "httproutes": frontdoor.KindHTTPRoute,
	"grpcroute": frontdoor.KindGRPCRoute, "grpcroutes": frontdoor.KindGRPCRoute,
	"tlsroute": frontdoor.KindTLSRoute, "tlsroutes": frontdoor.KindTLSRoute,
	"tcproute": frontdoor.KindTCPRoute, "tcproutes": frontdoor.KindTCPRoute,
	"gateway": frontdoor.KindGateway, "gateways": frontdoor.KindGateway, "gtw": frontdoor.KindGateway,
	"ingress": frontdoor.KindIngress, "ingresses": frontdoor.KindIngress, "ing": frontdoor.KindIngress,
}

// ParseTargetArg reads the trace's argument the way kubectl reads TYPE/NAME:
// a bare NAME (or svc/NAME) is a Service, kind "" ; httproute/NAME,
// grpcroute/NAME, tlsroute/NAME, tcproute/NAME, gateway/NAME and
// ingress/NAME start the trace at that front door. TYPE may carry its API
// group (httproutes.gateway.networking.k8s.io/NAME).
func ParseTargetArg(arg string) (kind, name string, err error) {
	typ, rest, ok := strings.Cut(arg, "/")
	if !ok {
		name, err := ParseServiceArg(arg)
		return "", name, err
	}
	typ = strings.ToLower(typ)
	for _, group := range []string{"." + frontdoor.GroupName, ".networking.k8s.io", ".v1"} {
		typ = strings.TrimSuffix(typ, group)
	}
	kind, known := targetKinds[typ]
	if !known {
		return "", "", usageErrorf("%q is not a Service, a Gateway API route, a Gateway or an Ingress: svctrace traces SERVICE, svc/SERVICE, httproute/NAME, grpcroute/NAME, tlsroute/NAME, tcproute/NAME, gateway/NAME or ingress/NAME", arg)
	}
	if kind == "" {
		name, err := ParseServiceArg("svc/" + rest)
		return "", name, err
	}
	if rest == "" {
		return "", "", usageErrorf("empty %s name in %q", kind, arg)
	}
	if errs := validation.IsDNS1123Subdomain(rest); len(errs) > 0 {
		return "", "", usageErrorf("invalid %s name %q: %s", kind, rest, strings.Join(errs, "; "))
	}
	return kind, rest, nil
}

// defaultFrontdoorReader builds the clients a front door is read with: the
// dynamic client for the Gateway API CRDs, discovery (uncached, so a CRD
// installed a minute ago is seen) to learn which kinds and versions are
// served, and the metadata client for Secrets.
func defaultFrontdoorReader(g genericclioptions.RESTClientGetter, client kubernetes.Interface) (*frontdoor.Reader, error) {
	cfg, err := g.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	withFleetRateLimit(cfg)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &frontdoor.Reader{Client: client, Dynamic: dyn, Discovery: discovery.ToDiscoveryInterfaceWithContext(disc), Metadata: meta}, nil
}

// validateGatewayPods checks --gateway-pods.
func validateGatewayPods(selector string) error {
	if selector == "" {
		return nil
	}
	if _, err := labels.Parse(selector); err != nil {
		return usageErrorf("invalid --gateway-pods %q: %v", selector, err)
	}
	return nil
}

// frontdoorRun is one backend Service's trace of a front door, kept whole
// for --save.
type frontdoorRun struct {
	in    *input.Input
	nodes *plan.NodeReport
	opts  trace.Options
	t     *report.ServiceTrace
}

// runFrontdoor traces a route, Gateway or Ingress: it reads the front door,
// makes the gateway's data-plane Pod the client unless --from names one,
// and traces every backend Service the front door sends to. Each backend
// gets its own ServiceTrace, led by the same frontdoor layer: a Service's
// trace (its nodes, its endpoints, its verdict and fingerprint) stays the
// unit every renderer, bundle and bot already knows, and a split route
// shows which backend is the broken one. One backend prints as a
// ServiceTrace, several as a ServiceTraceList.
func (o *TraceOptions) runFrontdoor(ctx context.Context) error {
	ctx, cancel, deadline := withTraceDeadline(ctx, o.Timeout)
	defer cancel()
	if o.TimeoutPerNode > 0 {
		o.Trace.Planned = func(nodes int) { deadline.extend(time.Duration(nodes) * o.TimeoutPerNode) }
	}
	o.Trace.NodesBy = deadline.nodesBy
	entry := frontdoor.Entry{Kind: o.Entry, Namespace: o.Namespace, Name: o.ServiceName}
	what := strings.ToLower(entry.Kind) + " " + entry.Namespace + "/" + entry.Name
	fd, err := o.Frontdoor.Read(ctx, entry, frontdoor.ReadOptions{GatewayPods: o.GatewayPods, FindDataPlane: o.From == ""})
	if err != nil {
		if terr := timedOut(ctx, entry.Namespace, entry.Name, deadline, o.TimeoutPerNode > 0); terr != nil {
			return terr
		}
		return err
	}
	from := o.From
	if dp := fd.DataPlane; from == "" && dp != nil && len(dp.Pods) > 0 {
		from = "pod/" + dp.Pods[0]
		fmt.Fprintf(o.ErrOut, "tracing %s from the gateway's Pod %s (--from overrides)\n", what, dp.Pods[0])
	}
	if from != "" {
		pc, err := nodes.ResolveFrom(ctx, o.Client, o.Namespace, from)
		if err != nil {
			return err
		}
		o.Trace.From = pc
	}
	backends := frontdoor.Services(fd)
	if len(backends) == 0 {
		backends = []string{""} // the frontdoor layer alone says why
	}
	if o.Save != "" && len(backends) > 1 {
		return usageErrorf("--save keeps one trace, and %s sends to %d Services (%s): trace each with svc/NAME --save", what, len(backends), strings.Join(backends, ", "))
	}
	if o.Output == render.FormatSVG && len(backends) > 1 {
		return usageErrorf("-o svg draws one trace, and %s sends to %d Services (%s): trace each with svc/NAME -o svg", what, len(backends), strings.Join(backends, ", "))
	}
	runs := make([]frontdoorRun, 0, len(backends))
	for _, b := range backends {
		in, nr, opts, err := trace.CollectBackend(ctx, o.Client, fd, b, o.Trace)
		if err != nil {
			if terr := timedOut(ctx, entry.Namespace, entry.Name, deadline, o.TimeoutPerNode > 0); terr != nil {
				return terr
			}
			if errors.Is(err, context.Canceled) {
				return fmt.Errorf("trace of %s interrupted", what)
			}
			return fmt.Errorf("tracing backend Service %s of %s: %w", b, what, err)
		}
		runs = append(runs, frontdoorRun{in: in, nodes: nr, opts: opts, t: trace.Assemble(in, nr, opts)})
	}
	traces := make([]*report.ServiceTrace, len(runs))
	for i, r := range runs {
		traces[i] = r.t
	}
	if len(traces) == 1 {
		err = render.Print(o.Out, traces[0], o.Output, o.Text)
	} else {
		err = render.PrintList(o.Out, traces, o.Output, o.Text)
	}
	if err != nil {
		return err
	}
	if o.Save != "" {
		r := runs[0]
		b, err := bundle.New(r.in, r.nodes, r.opts, r.t)
		if err == nil {
			err = b.Write(o.Save)
		}
		if err != nil {
			return fmt.Errorf("the trace ran but was not saved: %w", err)
		}
		fmt.Fprintf(o.ErrOut, "saved the trace to %s (kubectl svctrace analyze %s)\n", o.Save, o.Save)
	}
	return listVerdictError(traces)
}

// listVerdictError is verdictError over several traces: 3 when any failed,
// else 4 when any is unknown.
func listVerdictError(traces []*report.ServiceTrace) error {
	var notJudged error
	for _, t := range traces {
		err := verdictError(t)
		var failed *LayerFailedError
		if errors.As(err, &failed) {
			return err
		}
		if err != nil && notJudged == nil {
			notJudged = err
		}
	}
	return notJudged
}

// targetNames are the names completion offers after prefix ("" or
// "svc/": Services; "ingress/": Ingresses; a Gateway API kind: that kind's
// objects, where the cluster serves it). Errors yield none: a shell
// completion prints no errors.
func targetNames(f *TraceFlags, prefix string) []string {
	kind := ""
	if prefix != "" {
		var err error
		if kind, _, err = ParseTargetArg(prefix + "x"); err != nil {
			return nil
		}
	}
	switch kind {
	case "":
		return listNames(f.clients(), func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Services(ns).List(ctx, opts)
		})
	case frontdoor.KindIngress:
		return listNames(f.clients(), func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.NetworkingV1().Ingresses(ns).List(ctx, opts)
		})
	}
	getter := f.restClientGetter()
	client, err := f.deps.client(getter)
	if err != nil {
		return nil
	}
	ns, _, err := getter.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil
	}
	reader, err := f.deps.frontdoor(getter, client)
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	names, _ := reader.Names(ctx, kind, ns, completionLimit)
	return names
}
