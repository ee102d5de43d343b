// Package cli wires kubectl-svctrace's cobra commands: TraceFlags (what the
// user typed) → ToOptions → TraceOptions (clients, namespace, printer) →
// Validate → Run. Run touches only TraceOptions, so tests drive it without
// cobra or a kubeconfig.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/kubectl-svctrace/bundle"
	"github.com/svctrace/kubectl-svctrace/nodes"
	"github.com/svctrace/kubectl-svctrace/render"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// DefaultTimeout bounds a whole trace.
const DefaultTimeout = 60 * time.Second

var traceLong = `Trace why traffic to a Kubernetes Service does or does not reach its Pods, layer by layer:
dns, service, endpoints, datapath, conntrack and route. The dns, service and endpoints layers
need only the Kubernetes API; the node layers are read by a short-lived collector Pod per node,
and are reported as skipped (with the reason) when --no-node is given or no collector is
available. Every finding has a stable code, evidence and a command to run next.

The text report opens with the path drawn as a picture (client, DNS, Service, each inspected
node's datapath, NetworkPolicy, endpoints, the failing hop pointed at) and, when several nodes
were inspected, a node × endpoint grid (identical nodes folded, outliers listed). It is concise:
a passing layer is one line, and only failing, warning and unknown checks show their evidence
and next step. -o wide shows every check's evidence, kubectl's "same view, more detail"; -o svg
draws the path and the grid as a picture for a postmortem; -o json and -o yaml carry everything.

SERVICE is NAME, svc/NAME, service/NAME or services/NAME. A Service named like a subcommand
(version, cleanup, analyze, diff, mcp) must be given as svc/NAME.

A trace can start at the front door instead: httproute/NAME, grpcroute/NAME, tlsroute/NAME,
tcproute/NAME (where the cluster serves the Gateway API CRD), gateway/NAME or ingress/NAME.
A frontdoor layer comes first: the controller's Accepted and ResolvedRefs conditions quoted, the
Gateway's listeners and hostnames, every backendRef resolved to a Service port (ReferenceGrants
for another namespace, weights), or the Ingress's class, TLS Secrets (metadata only), paths and
address. Then each backend Service is traced as usual, from the gateway's own Pod: the first
running Pod labelled gateway.networking.k8s.io/gateway-name=GATEWAY, or matching --gateway-pods,
unless --from names the client, so a NetworkPolicy that keeps the gateway out is named. Several
backend Services print as a ServiceTraceList (one ServiceTrace each).

--save DIR also writes the trace to DIR as a bundle: what the API returned (Secrets never
read, env values redacted), every node's raw observations and the result. kubectl svctrace
analyze DIR judges it again later without a cluster; kubectl svctrace diff compares two.

--watch (-w) prints the first trace, then watches the Service, its EndpointSlices and Pods
(it needs watch on them) and prints only what changed, stamped with the time: endpoints
changing condition, nodes whose datapath result moves, findings added, gone or changed, the
verdict. A node is inspected again at most every --reinspect-interval. Ctrl-C stops it, with
the collector Pods deleted, and exits 0.

` + exitCodesHelp

var traceExample = `  # Trace the Service web in the current namespace
  kubectl svctrace web

  # Start at an HTTPRoute: the route and its Gateway, then its backend Services, from the gateway's Pod
  kubectl svctrace httproute/store -n shop

  # Start at an Ingress whose controller Pods are labelled app.kubernetes.io/name=ingress-nginx
  kubectl svctrace ingress/shop -n shop --gateway-pods app.kubernetes.io/name=ingress-nginx

  # Trace only the port named http of a Service in another namespace, API-side layers only
  kubectl svctrace svc/web -n shop --port http --no-node

  # Every check with its evidence (rules, probes, answers), not only the ones that failed
  kubectl svctrace web -o wide

  # Inspect every node; the path and the node × endpoint grid as an SVG picture on stdout
  kubectl svctrace web --all-nodes -o svg

  # Machine-readable result for a bot or CI (exit code 3 when a layer fails)
  kubectl svctrace web -o json

  # During a rollout: print each endpoint, rule and finding change as it happens (Ctrl-C stops)
  kubectl svctrace web --watch --reinspect-interval 10s

  # Keep the evidence: save the trace to a directory, to re-judge or compare it later
  kubectl svctrace web --save ./web-incident

  # Print the plugin version and the collector image it uses
  kubectl svctrace version`

// TraceFlags is what the user typed.
type TraceFlags struct {
	ConfigFlags   *genericclioptions.ConfigFlags
	Port          string
	Output        string
	Color         string
	NoNode        bool
	Timeout       time.Duration
	ClusterDomain string
	// Save is the directory --save writes the trace's bundle to ("": none).
	Save string
	// Watch re-traces on every change (--watch); ReinspectInterval bounds
	// how often the nodes are inspected again.
	Watch             bool
	ReinspectInterval time.Duration
	// Nodes are the node-selection and collector flags (--node, --all-nodes,
	// --from, --image, --collector-namespace, …).
	Nodes *nodes.Flags
	// GatewayPods is --gateway-pods, the selector of a front door's
	// data-plane Pods.
	GatewayPods string

	deps deps
}

// restClientGetter is where namespace, context and client come from: the
// config flags, or a genericclioptions.TestConfigFlags in tests.
func (f *TraceFlags) restClientGetter() genericclioptions.RESTClientGetter {
	if f.deps.getter != nil {
		return f.deps.getter
	}
	return f.ConfigFlags
}

// deps are the seams tests replace: the clientset, the clock, the terminal
// check, the environment and the node inspector (nil: collector Pods).
type deps struct {
	client    func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error)
	now       func() time.Time
	isTTY     func(io.Writer) bool
	getenv    func(string) string
	inspector plan.NodeInspector
	getter    genericclioptions.RESTClientGetter
	// frontdoor builds the reader of a route, Gateway or Ingress.
	frontdoor func(genericclioptions.RESTClientGetter, kubernetes.Interface) (*frontdoor.Reader, error)
}

func defaultDeps() deps {
	return deps{
		client: func(g genericclioptions.RESTClientGetter) (kubernetes.Interface, error) {
			cfg, err := g.ToRESTConfig()
			if err != nil {
				return nil, err
			}
			withFleetRateLimit(cfg)
			return kubernetes.NewForConfig(cfg)
		},
		now:       time.Now,
		isTTY:     render.IsTerminal,
		getenv:    os.Getenv,
		frontdoor: defaultFrontdoorReader,
	}
}

// NewTraceFlags returns the flags with their defaults.
func NewTraceFlags() *TraceFlags {
	return &TraceFlags{
		ConfigFlags:       genericclioptions.NewConfigFlags(true),
		Color:             render.ColorAuto,
		Timeout:           DefaultTimeout,
		ClusterDomain:     plan.DefaultClusterDomain,
		ReinspectInterval: DefaultReinspectInterval,
		deps:              defaultDeps(),
	}
}

// AddFlags registers the flags: kubectl's config flags unchanged, then ours.
func (f *TraceFlags) AddFlags(flags *pflag.FlagSet) {
	f.ConfigFlags.AddFlags(flags)
	flags.StringVar(&f.Port, "port", f.Port, "trace only this Service port, by name or number (default: every port)")
	flags.StringVarP(&f.Output, "output", "o", f.Output, "output format: wide (text with every check's evidence), json, yaml or svg (default: concise text)")
	flags.StringVar(&f.Color, "color", f.Color, "color the text output: auto, always or never (auto: only on a terminal, when NO_COLOR is empty and TERM is not dumb; never, a dumb terminal or a pipe also draw in plain ASCII)")
	flags.BoolVar(&f.NoNode, "no-node", f.NoNode, "skip every layer that needs a node (datapath, conntrack, route, live DNS); they are reported as skipped")
	flags.DurationVar(&f.Timeout, "timeout", f.Timeout, "give up the whole trace after this long; when not given, each inspected node adds "+PerNodeTimeout.String()+" to it (1,000 nodes: 2m40s)")
	flags.StringVar(&f.ClusterDomain, "cluster-domain", f.ClusterDomain, "the cluster's DNS domain, for the expected Service name")
	flags.BoolVarP(&f.Watch, "watch", "w", f.Watch, "after the first trace, watch the Service, its EndpointSlices and Pods and print only what changes, until Ctrl-C")
	flags.DurationVar(&f.ReinspectInterval, "reinspect-interval", f.ReinspectInterval, "with --watch, inspect a node again at most this often (changes in between are judged against the last inspection)")
	flags.StringVar(&f.Save, "save", f.Save, "also write the trace (API input, node observations, result) to this directory, for kubectl svctrace analyze and diff")
	flags.StringVar(&f.GatewayPods, "gateway-pods", f.GatewayPods, "with a route, Gateway or Ingress: the label selector of the gateway's data-plane Pods, in any namespace; the first running one is the client (--from) (default: a Gateway's Pods by the gateway.networking.k8s.io/gateway-name label)")
	if f.Nodes != nil {
		f.Nodes.AddFlags(flags)
	}
}

// TraceOptions is everything Run needs, resolved.
type TraceOptions struct {
	Client      kubernetes.Interface
	Namespace   string
	ServiceName string
	Context     string
	Trace       trace.Options
	Output      string
	Text        render.TextOptions
	Timeout     time.Duration
	// TimeoutPerNode, when positive, is added to Timeout for each node the
	// trace inspects (PerNodeTimeout when --timeout was not given).
	TimeoutPerNode time.Duration
	// From is --from, resolved in Run (it needs the API).
	From string
	// Save is the bundle directory (--save), "" for none.
	Save string
	// Watch and ReinspectInterval are --watch and --reinspect-interval.
	Watch             bool
	ReinspectInterval time.Duration
	// Entry is the kind the trace starts at when it is not a Service
	// (HTTPRoute, …, Gateway, Ingress; ServiceName is then its name),
	// Frontdoor its reader and GatewayPods --gateway-pods.
	Entry       string
	Frontdoor   *frontdoor.Reader
	GatewayPods string

	genericiooptions.IOStreams
}

// ParseServiceArg accepts NAME, svc/NAME, service/NAME and services/NAME.
func ParseServiceArg(arg string) (string, error) {
	name := arg
	if kind, rest, ok := strings.Cut(arg, "/"); ok {
		switch strings.ToLower(kind) {
		case "svc", "service", "services":
			name = rest
		default:
			return "", usageErrorf("%q is not a Service: svctrace traces Services (SERVICE, svc/SERVICE)", arg)
		}
	}
	if name == "" {
		return "", usageErrorf("empty Service name in %q", arg)
	}
	if errs := validation.IsDNS1035Label(name); len(errs) > 0 {
		return "", usageErrorf("invalid Service name %q: %s", name, strings.Join(errs, "; "))
	}
	return name, nil
}

// ToOptions resolves the flags and arguments into TraceOptions.
func (f *TraceFlags) ToOptions(args []string, streams genericiooptions.IOStreams) (*TraceOptions, error) {
	if len(args) != 1 {
		return nil, usageErrorf("exactly one SERVICE is required, got %d arguments", len(args))
	}
	entry, name, err := ParseTargetArg(args[0])
	if err != nil {
		return nil, err
	}
	if entry != "" && f.Watch {
		return nil, usageErrorf("--watch follows one Service: watch a backend of %s with svc/NAME", args[0])
	}
	if err := validateGatewayPods(f.GatewayPods); err != nil {
		return nil, err
	}
	switch f.Output {
	case render.FormatText, render.FormatWide, render.FormatJSON, render.FormatYAML, render.FormatSVG:
	default:
		return nil, usageErrorf("invalid --output %q: must be one of %s", f.Output, strings.Join(render.Formats, ", "))
	}
	text, err := render.DecideTextOptions(f.Color, f.deps.isTTY(streams.Out), f.deps.getenv)
	if err != nil {
		return nil, &UsageError{Err: err}
	}
	if f.Timeout <= 0 {
		return nil, usageErrorf("invalid --timeout %s: must be positive", f.Timeout)
	}
	if errs := validation.IsDNS1123Subdomain(f.ClusterDomain); len(errs) > 0 {
		return nil, usageErrorf("invalid --cluster-domain %q: %s", f.ClusterDomain, strings.Join(errs, "; "))
	}
	if f.Watch && f.Output == render.FormatSVG {
		return nil, usageErrorf("--watch prints changes as text, JSON or YAML, not -o svg")
	}
	if f.Watch && f.Save != "" {
		return nil, usageErrorf("--watch and --save are mutually exclusive: save one trace at a time")
	}
	if f.ReinspectInterval <= 0 {
		return nil, usageErrorf("invalid --reinspect-interval %s: must be positive", f.ReinspectInterval)
	}
	if f.Save != "" && bundle.IsBundle(f.Save) {
		return nil, usageErrorf("--save %s: the directory already holds a saved trace; choose another", f.Save)
	}
	getter := f.restClientGetter()
	loader := getter.ToRawKubeConfigLoader()
	namespace, _, err := loader.Namespace()
	if err != nil {
		return nil, fmt.Errorf("cannot determine the namespace: %w", err)
	}
	contextName := ""
	if f.ConfigFlags.Context != nil && *f.ConfigFlags.Context != "" {
		contextName = *f.ConfigFlags.Context
	} else if raw, err := loader.RawConfig(); err == nil {
		contextName = raw.CurrentContext
	}
	client, err := f.deps.client(getter)
	if err != nil {
		return nil, fmt.Errorf("cannot build a Kubernetes client: %w", err)
	}
	var nodeFlags nodes.Flags
	if f.Nodes != nil {
		// Resolved on a copy: the derived limits follow this --timeout,
		// not one a previous resolution saw.
		nodeFlags = *f.Nodes
		if err := nodeFlags.Validate(); err != nil {
			return nil, &UsageError{Err: err}
		}
		if err := nodeFlags.ResolveTimeouts(f.Timeout); err != nil {
			return nil, &UsageError{Err: err}
		}
	}
	inspector := f.deps.inspector
	var sel plan.NodeSelection
	from := ""
	if f.Nodes != nil {
		sel = f.Nodes.Selection()
		from = f.Nodes.From
		if inspector == nil && !f.NoNode {
			collector := &nodes.Inspector{Client: client, Flags: nodeFlags}
			if f.deps.getter == nil && f.Nodes.Agent != nodes.AgentNever {
				// The agent is reached only through pods/exec, with the
				// user's credentials.
				if cfg, err := getter.ToRESTConfig(); err == nil {
					withFleetRateLimit(cfg)
					collector.Exec = nodes.RESTExec(cfg, client)
				}
			}
			// The live progress line is for a person at a terminal only.
			if (f.Output == render.FormatText || f.Output == render.FormatWide) && f.deps.isTTY(streams.ErrOut) {
				collector.Progress = streams.ErrOut
			}
			inspector = collector
		}
	}
	var reader *frontdoor.Reader
	if entry != "" {
		if reader, err = f.deps.frontdoor(getter, client); err != nil {
			return nil, fmt.Errorf("cannot build the clients to read %s: %w", args[0], err)
		}
	}
	return &TraceOptions{
		Entry:             entry,
		Frontdoor:         reader,
		GatewayPods:       f.GatewayPods,
		Client:            client,
		Namespace:         namespace,
		ServiceName:       name,
		Context:           contextName,
		Output:            f.Output,
		Text:              text,
		Timeout:           f.Timeout,
		From:              from,
		Save:              f.Save,
		Watch:             f.Watch,
		ReinspectInterval: f.ReinspectInterval,
		Trace: trace.Options{
			Port:          f.Port,
			ClusterDomain: f.ClusterDomain,
			Context:       contextName,
			Now:           f.deps.now,
			NoNode:        f.NoNode,
			Inspector:     inspector,
			Nodes:         sel,
			Policies:      policyReaderFor(f.deps, getter),
		},
		IOStreams: streams,
	}, nil
}

// Validate checks the resolved options.
func (o *TraceOptions) Validate() error {
	if o.Client == nil {
		return errors.New("no Kubernetes client")
	}
	if o.Namespace == "" {
		return usageErrorf("no namespace")
	}
	return nil
}

// Run traces the Service, prints the result and returns a LayerFailedError
// when a layer failed, or else a NotJudgedError when the verdict is unknown.
func (o *TraceOptions) Run(ctx context.Context) error {
	if o.Entry != "" {
		return o.runFrontdoor(ctx)
	}
	if o.Watch {
		if o.From != "" {
			fctx, cancel := context.WithTimeout(ctx, o.Timeout)
			pc, err := nodes.ResolveFrom(fctx, o.Client, o.Namespace, o.From)
			cancel()
			if err != nil {
				return err
			}
			o.Trace.From = pc
		}
		return o.runWatch(ctx)
	}
	ctx, cancel, deadline := withTraceDeadline(ctx, o.Timeout)
	defer cancel()
	if o.TimeoutPerNode > 0 {
		o.Trace.Planned = func(nodes int) { deadline.extend(time.Duration(nodes) * o.TimeoutPerNode) }
	}
	o.Trace.NodesBy = deadline.nodesBy
	if o.From != "" {
		pc, err := nodes.ResolveFrom(ctx, o.Client, o.Namespace, o.From)
		if err != nil {
			if terr := timedOut(ctx, o.Namespace, o.ServiceName, deadline, o.TimeoutPerNode > 0); terr != nil {
				return terr
			}
			return err
		}
		o.Trace.From = pc
	}
	in, nr, err := trace.Collect(ctx, o.Client, o.Namespace, o.ServiceName, o.Trace)
	var noPort *trace.PortNotFoundError
	if errors.As(err, &noPort) {
		return &UsageError{Err: err}
	}
	if err != nil {
		if terr := timedOut(ctx, o.Namespace, o.ServiceName, deadline, o.TimeoutPerNode > 0); terr != nil {
			return terr
		}
		if errors.Is(err, context.Canceled) {
			return fmt.Errorf("trace of %s/%s interrupted", o.Namespace, o.ServiceName)
		}
		return err
	}
	t := trace.Assemble(in, nr, o.Trace)
	if err := render.Print(o.Out, t, o.Output, o.Text); err != nil {
		return err
	}
	if o.Save != "" {
		b, err := bundle.New(in, nr, o.Trace, t)
		if err == nil {
			err = b.Write(o.Save)
		}
		if err != nil {
			return fmt.Errorf("the trace ran but was not saved: %w", err)
		}
		fmt.Fprintf(o.ErrOut, "saved the trace to %s (kubectl svctrace analyze %s)\n", o.Save, o.Save)
	}
	return verdictError(t)
}

// verdictError is the error a printed result exits with: a
// LayerFailedError when a layer failed, a NotJudgedError when the verdict is
// unknown, nil otherwise.
func verdictError(t *report.ServiceTrace) error {
	if t.Failed() {
		return &LayerFailedError{Layer: t.Verdict.FirstFailingLayer}
	}
	if t.Verdict.Status == report.StatusUnknown {
		var unknown []report.LayerName
		for _, l := range t.Layers {
			if l.Status == report.StatusUnknown {
				unknown = append(unknown, l.Name)
			}
		}
		return &NotJudgedError{Layers: unknown}
	}
	return nil
}

// NewCmdSvctrace builds the root command.
func NewCmdSvctrace(streams genericiooptions.IOStreams, info BuildInfo) *cobra.Command {
	return newCmdSvctrace(streams, info, NewTraceFlags())
}

func newCmdSvctrace(streams genericiooptions.IOStreams, info BuildInfo, f *TraceFlags) *cobra.Command {
	info = info.orDefaults()
	cmd := &cobra.Command{
		Use:     "svctrace SERVICE | TYPE/NAME [flags]",
		Short:   "Trace why traffic to a Service does not reach its Pods",
		Long:    traceLong,
		Example: traceExample,
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl svctrace",
		},
		SilenceUsage:      true,
		SilenceErrors:     true,
		ValidArgsFunction: completeServices(f),
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("exactly one SERVICE (or TYPE/NAME) is required, got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := f.ToOptions(args, streams)
			if err != nil {
				return err
			}
			o.Trace.Version = info.Version
			if !cmd.Flags().Changed("timeout") {
				o.TimeoutPerNode = PerNodeTimeout
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &UsageError{Err: err} })
	if f.Nodes == nil {
		f.Nodes = nodes.NewFlags(DefaultCollectorImage(info.Version))
	}
	f.AddFlags(cmd.Flags())
	registerCompletions(cmd, f)
	cmd.AddCommand(newCmdVersion(streams, info, f.deps.client))
	cmd.AddCommand(newCmdCleanup(streams, f.deps.client))
	cmd.AddCommand(newCmdAgent(streams, DefaultCollectorImage(info.Version), f.deps.client))
	cmd.AddCommand(newCmdAnalyze(streams, info, f.deps))
	cmd.AddCommand(newCmdDiff(streams, info, f.deps))
	cmd.AddCommand(newCmdMCP(streams, info, f.deps))
	return cmd
}
