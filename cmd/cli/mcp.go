package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/kubectl-svctrace/docs/schema"
	"github.com/svctrace/kubectl-svctrace/nodes"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// The MCP names svctrace serves.
const (
	MCPToolTraceService = "trace_service"
	MCPCatalogURI       = "svctrace://catalog"
	MCPSchemaURI        = "svctrace://schema/servicetrace.v1alpha1.json"
)

var mcpLong = `Serve svctrace to AI agents and incident bots over the Model Context Protocol, on stdin and
stdout (the stdio transport an MCP client starts a server with).

The server has one tool, ` + MCPToolTraceService + `, taking namespace, service, port, from, nodes and
no_node (the trace's SERVICE, -n, --port, --from, --node and --no-node). service may name a
front door instead (httproute/NAME, gateway/NAME, ingress/NAME, …; gateway_pods is
--gateway-pods): the result is then the trace of one backend Service, led by the frontdoor layer,
the one backend names or else the one with the worst verdict; frontdoor.backends lists them all.
It returns the
ServiceTrace document -o json prints, as structured content validated against the JSON Schema
it declares as its output schema. A failing layer is a result, not a tool error; an error is
returned only when the trace could not run (Service unreadable, timeout, a bad argument).
Two resources: ` + MCPCatalogURI + ` (every check code, its layer, severity, message and next
step) and ` + MCPSchemaURI + `.

The server talks to the cluster with kubectl's connection flags (--kubeconfig, --context, --as,
…) as the trace does, so it has exactly the RBAC of that identity; -n is the namespace of a
call that names none. Calls that run collectors run one at a time (the next waits), so the
server never has more than one trace's collector Pods on the cluster; no_node calls do not
wait. The collector flags (--image, --collector-namespace, --privileged, …) apply to every call.
Nothing but the protocol is written to stdout.`

var mcpExample = `  # Serve svctrace over MCP (stdio), with the current kubeconfig context
  kubectl svctrace mcp

  # The same on another cluster, API-side calls allowed to take 30s
  kubectl svctrace mcp --context prod --timeout 30s`

// TraceServiceArgs are the arguments of the trace_service tool.
type TraceServiceArgs struct {
	Namespace string   `json:"namespace,omitempty" jsonschema:"the Service's namespace; default: the namespace of the server's kubeconfig context (or its -n)"`
	Service   string   `json:"service" jsonschema:"the Service (NAME or svc/NAME), or the front door to start at: httproute/NAME, grpcroute/NAME, tlsroute/NAME, tcproute/NAME, gateway/NAME or ingress/NAME"`
	Port      string   `json:"port,omitempty" jsonschema:"trace only this Service port, by name or number; default: every port"`
	From      string   `json:"from,omitempty" jsonschema:"the client: pod/NAME, pod/NAMESPACE/NAME or node/NAME; its node is inspected and NetworkPolicies are judged for it"`
	Nodes     []string `json:"nodes,omitempty" jsonschema:"inspect these nodes; default: the nodes that host the Service's endpoints"`
	NoNode    bool     `json:"no_node,omitempty" jsonschema:"judge only what the Kubernetes API shows: no collector Pod on any node"`
	// Backend and GatewayPods apply to a front door only.
	Backend     string `json:"backend,omitempty" jsonschema:"with a front door that sends to several Services: the one whose trace to return, NAMESPACE/NAME; default: the one with the worst verdict (frontdoor.backends lists them all)"`
	GatewayPods string `json:"gateway_pods,omitempty" jsonschema:"with a front door: the label selector of the gateway's data-plane Pods (any namespace), the client when from is not given; default for a Gateway API route: the gateway.networking.k8s.io/gateway-name label"`
}

// MCPOptions is what the MCP server needs.
type MCPOptions struct {
	Collector     *nodes.Flags
	Timeout       time.Duration
	ClusterDomain string
	Version       string

	// Client, Namespace and Context come from the connection flags (Complete).
	Client    kubernetes.Interface
	Namespace string
	Context   string

	getter genericclioptions.RESTClientGetter
	deps   deps
	// slot is held by the call whose collectors are running.
	slot chan struct{}
	// policies reads the policy kinds beyond NetworkPolicy (nil in tests).
	policies input.PolicyReader
	genericiooptions.IOStreams
}

// Complete resolves the client, the default namespace and the context.
func (o *MCPOptions) Complete(args []string) error {
	if len(args) > 0 {
		return usageErrorf("mcp takes no arguments, got %q", args)
	}
	if o.deps.getter != nil {
		o.getter = o.deps.getter
	}
	loader := o.getter.ToRawKubeConfigLoader()
	ns, _, err := loader.Namespace()
	if err != nil {
		return fmt.Errorf("cannot determine the namespace: %w", err)
	}
	o.Namespace = ns
	if raw, err := loader.RawConfig(); err == nil {
		o.Context = raw.CurrentContext
	}
	if cf, ok := o.getter.(*genericclioptions.ConfigFlags); ok && cf.Context != nil && *cf.Context != "" {
		o.Context = *cf.Context
	}
	o.Client, err = o.deps.client(o.getter)
	if err != nil {
		return fmt.Errorf("cannot build a Kubernetes client: %w", err)
	}
	o.policies = policyReaderFor(o.deps, o.getter)
	o.slot = make(chan struct{}, 1)
	return nil
}

// Validate checks the flags.
func (o *MCPOptions) Validate() error {
	if o.Timeout <= 0 {
		return usageErrorf("invalid --timeout %s: must be positive", o.Timeout)
	}
	if errs := validation.IsDNS1123Subdomain(o.ClusterDomain); len(errs) > 0 {
		return usageErrorf("invalid --cluster-domain %q", o.ClusterDomain)
	}
	if err := o.Collector.Validate(); err != nil {
		return err
	}
	return o.Collector.ResolveTimeouts(o.Timeout)
}

// NewServer builds the MCP server: the tool and the resources.
func (o *MCPOptions) NewServer() (*mcp.Server, error) {
	var outputSchema map[string]any
	if err := json.Unmarshal(schema.ServiceTraceV1alpha1, &outputSchema); err != nil {
		return nil, fmt.Errorf("embedded ServiceTrace schema: %w", err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "svctrace", Title: "kubectl svctrace", Version: o.Version}, nil)
	mcp.AddTool(s, &mcp.Tool{
		Name:  MCPToolTraceService,
		Title: "Trace a Kubernetes Service",
		Description: "Trace why traffic to a Kubernetes Service does or does not reach its Pods, layer by layer " +
			"(dns, service, endpoints, datapath, conntrack, route, policy), or start at an HTTPRoute, GRPCRoute, TLSRoute, " +
			"TCPRoute, Gateway or Ingress (service: httproute/NAME, …): a frontdoor layer then comes first and the gateway's " +
			"own Pod is the client. Returns the ServiceTrace document: " +
			"verdict.status pass|warn|fail|unknown, verdict.code (a catalog code, see " + MCPCatalogURI + "), " +
			"verdict.fingerprint (stable while the fault stays the same), and every layer's checks with evidence " +
			"and a next step. Without no_node it starts one short-lived collector Pod per inspected node.",
		OutputSchema: outputSchema,
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: false, OpenWorldHint: ptrBool(true), DestructiveHint: ptrBool(false), IdempotentHint: true},
	}, o.traceService)
	catalog, err := catalogJSON()
	if err != nil {
		return nil, err
	}
	s.AddResource(&mcp.Resource{URI: MCPCatalogURI, Name: "catalog", Title: "svctrace check catalog",
		Description: "Every check code svctrace can report: layer, default severity, title, message and next-step templates.",
		MIMEType:    "application/json"}, staticResource(MCPCatalogURI, catalog))
	s.AddResource(&mcp.Resource{URI: MCPSchemaURI, Name: "servicetrace-schema", Title: "ServiceTrace JSON Schema",
		Description: "The JSON Schema of the ServiceTrace document " + MCPToolTraceService + " returns.",
		MIMEType:    "application/schema+json"}, staticResource(MCPSchemaURI, schema.ServiceTraceV1alpha1))
	return s, nil
}

func ptrBool(b bool) *bool { return &b }

func staticResource(uri string, body []byte) mcp.ResourceHandler {
	return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
	}
}

// catalogEntry is one check of the catalog resource.
type catalogEntry struct {
	Code     string           `json:"code"`
	Layer    report.LayerName `json:"layer,omitempty"`
	Severity report.Severity  `json:"severity"`
	Title    string           `json:"title"`
	Message  string           `json:"message"`
	NextStep string           `json:"nextStep,omitempty"`
	Symptom  bool             `json:"symptom,omitempty"`
}

func catalogJSON() ([]byte, error) {
	var entries []catalogEntry
	for _, code := range report.CatalogCodes() {
		c := report.Catalog[code]
		entries = append(entries, catalogEntry{Code: c.Code, Layer: c.Layer, Severity: c.Severity, Title: c.Title,
			Message: c.Message, NextStep: c.NextStep, Symptom: c.Symptom})
	}
	return json.MarshalIndent(entries, "", "  ")
}

// traceService is the tool: one trace, as the root command runs it.
func (o *MCPOptions) traceService(ctx context.Context, _ *mcp.CallToolRequest, args TraceServiceArgs) (*mcp.CallToolResult, *report.ServiceTrace, error) {
	kind, name, err := ParseTargetArg(args.Service)
	if err != nil {
		return nil, nil, err
	}
	namespace := args.Namespace
	if namespace == "" {
		namespace = o.Namespace
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return nil, nil, fmt.Errorf("invalid namespace %q", namespace)
	}
	opts := trace.Options{
		Port:          args.Port,
		ClusterDomain: o.ClusterDomain,
		Version:       o.Version,
		Context:       o.Context,
		Now:           o.deps.now,
		NoNode:        args.NoNode,
		Nodes:         plan.NodeSelection{Nodes: args.Nodes},
		Policies:      o.policies,
	}
	if !args.NoNode {
		// One trace's collectors at a time: wait for the slot.
		select {
		case o.slot <- struct{}{}:
			defer func() { <-o.slot }()
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		opts.Inspector = o.deps.inspector
		if opts.Inspector == nil {
			flags := *o.Collector
			flags.Nodes, flags.From = args.Nodes, args.From
			opts.Inspector = &nodes.Inspector{Client: o.Client, Flags: flags}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if end, ok := ctx.Deadline(); ok {
		// The nodes end before the call does, so a node that does not
		// answer costs that node, not the result.
		opts.NodesBy = func() time.Time { return end.Add(-plan.JudgeReserve(o.Timeout)) }
	}
	if args.From != "" {
		pc, err := nodes.ResolveFrom(ctx, o.Client, namespace, args.From)
		if err != nil {
			return nil, nil, err
		}
		opts.From = pc
	}
	var t *report.ServiceTrace
	if kind != "" {
		t, err = o.traceFrontdoor(ctx, frontdoor.Entry{Kind: kind, Namespace: namespace, Name: name}, args, opts)
	} else {
		t, err = trace.Run(ctx, o.Client, namespace, name, opts)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, fmt.Errorf("trace of %s/%s timed out after %s (the server's --timeout)", namespace, name, o.Timeout)
		}
		return nil, nil, err
	}
	return nil, t, nil
}

// Run serves MCP on the streams until the client closes stdin or ctx ends.
func (o *MCPOptions) Run(ctx context.Context) error {
	s, err := o.NewServer()
	if err != nil {
		return err
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(o.In), Writer: nopWriteCloser{o.Out}}
	if err := s.Run(ctx, t); err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
		return fmt.Errorf("mcp server: %w", err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

func newCmdMCP(streams genericiooptions.IOStreams, info BuildInfo, d deps) *cobra.Command {
	o := &MCPOptions{
		Collector:     nodes.NewFlags(DefaultCollectorImage(info.Version)),
		Timeout:       DefaultTimeout,
		ClusterDomain: plan.DefaultClusterDomain,
		Version:       info.Version,
		deps:          d,
		IOStreams:     streams,
	}
	cmd := &cobra.Command{
		Use:               "mcp [flags]",
		Short:             "Serve the trace as an MCP tool over stdio, for AI agents and incident bots",
		Long:              mcpLong,
		Example:           mcpExample,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return &UsageError{Err: err}
			}
			return o.Run(cmd.Context())
		},
	}
	flags := cmd.Flags()
	o.Collector.AddCollectorFlags(flags)
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up each trace after this long")
	flags.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain, "the cluster's DNS domain, for the expected Service name")
	o.getter = addConnectionFlags(cmd, d.client)
	return cmd
}
