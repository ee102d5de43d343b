// Package nodeinspect fills svctrace's node layers with collector Pods: it
// chooses the nodes, starts one collector Pod per node through
// collectors/podrunner, decodes what each observed and hands the observations
// to trace.JudgeNodes. It is the plugin-side glue between the API view and
// the node view; it judges nothing itself.
package nodeinspect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/podrunner"
	"github.com/svctrace/kubectl-svctrace/trace"
)

// DefaultCollectorNamespace is where collector Pods run unless
// --collector-namespace says otherwise. It must allow privileged Pods
// (hostNetwork and NET_ADMIN are beyond Pod Security "baseline").
const DefaultCollectorNamespace = "svctrace-system"

// Flags are the node-selection and collector flags of `kubectl svctrace`.
type Flags struct {
	Nodes              []string
	AllNodes           bool
	From               string
	MaxParallel        int
	Image              string
	CollectorNamespace string
	Privileged         bool
	StartTimeout       time.Duration
}

// NewFlags returns the defaults; image is the plugin's pinned collector image.
func NewFlags(image string) *Flags {
	return &Flags{MaxParallel: 5, Image: image, CollectorNamespace: DefaultCollectorNamespace, StartTimeout: 60 * time.Second}
}

// AddFlags registers the flags.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Nodes, "node", f.Nodes, "inspect this node (repeatable); default: the nodes that host the Service's endpoints, plus the --from node")
	fs.BoolVar(&f.AllNodes, "all-nodes", f.AllNodes, "inspect every node and report a per-node matrix")
	fs.StringVar(&f.From, "from", f.From, "the client: pod/NAME (in the Service's namespace, or NAMESPACE/NAME) or node/NAME; its node is inspected and NetworkPolicies are judged for it")
	fs.IntVar(&f.MaxParallel, "max-parallel", f.MaxParallel, "collector Pods running at once")
	fs.StringVar(&f.Image, "image", f.Image, "collector image")
	fs.StringVar(&f.CollectorNamespace, "collector-namespace", f.CollectorNamespace, "namespace for the collector Pods (must allow privileged Pods under Pod Security Admission)")
	fs.BoolVar(&f.Privileged, "privileged", f.Privileged, "run collector Pods privileged (default: only NET_ADMIN and NET_RAW)")
	fs.DurationVar(&f.StartTimeout, "collector-start-timeout", f.StartTimeout, "how long a collector Pod may take to be scheduled and pulled before its node is reported as not inspected")
}

// Validate checks flag combinations.
func (f *Flags) Validate() error {
	if f.AllNodes && len(f.Nodes) > 0 {
		return errors.New("--all-nodes and --node are mutually exclusive")
	}
	if f.MaxParallel < 1 {
		return fmt.Errorf("invalid --max-parallel %d: must be at least 1", f.MaxParallel)
	}
	if f.Image == "" {
		return errors.New("--image must not be empty")
	}
	if f.From != "" {
		kind, name, ok := strings.Cut(f.From, "/")
		if !ok || name == "" || (kind != "pod" && kind != "node" && kind != "pods" && kind != "nodes" && kind != "po" && kind != "no") {
			return fmt.Errorf("invalid --from %q: want pod/NAME, pod/NAMESPACE/NAME or node/NAME", f.From)
		}
	}
	return nil
}

// Inspector implements trace.NodeInspector with collector Pods.
type Inspector struct {
	Client kubernetes.Interface
	Flags  Flags
	// Progress, when set, receives a live status line (a terminal only).
	Progress io.Writer
	// Version is the plugin version, recorded in collector Pod names/labels.
	Version string

	// From is the resolved --from client (see ResolveFrom); its node is
	// inspected and its IP routed to.
	From *trace.PolicyClient

	// runner is replaced in tests.
	runner func(r *podrunner.Runner, ctx context.Context, node string, req []byte) (*podrunner.Output, error)
}

// Inspect chooses the nodes, runs the collectors and judges what they saw.
func (in *Inspector) Inspect(ctx context.Context, input *trace.Input, t *trace.ServiceTrace) error {
	client := in.From
	nodes, notInspected, err := in.chooseNodes(ctx, input, client)
	if err != nil {
		return err
	}
	profile := podrunner.ProfileNetAdmin
	if in.Flags.Privileged {
		profile = podrunner.ProfilePrivileged
	} else if needsBPF(input) {
		profile = podrunner.ProfileBPF
	}
	opts := podrunner.PodSpecOptions{
		Namespace:       in.Flags.CollectorNamespace,
		Image:           in.Flags.Image,
		Profile:         profile,
		DeadlineSeconds: 300,
		RunID:           "r" + rand.String(8),
		Service:         input.Namespace + "/" + input.Name,
	}
	views := notInspected
	t.Metadata.Collector = &trace.CollectorRun{Image: opts.Image, Namespace: opts.Namespace, Profile: string(profile), HostPID: podrunner.HostPID,
		Capabilities: capNames(profile)}
	if len(nodes) > 0 {
		if err := podrunner.Preflight(ctx, in.Client, opts, nodes[0].name); err != nil {
			return &PreflightFailed{Err: err}
		}
		views = append(views, in.runAll(ctx, input, t, opts, nodes, client)...)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	for _, v := range views {
		cn := trace.CollectorNode{Node: v.Node, Roles: v.Roles, Inspected: v.Observation != nil, Failure: v.Failure}
		if n, _ := input.Node(v.Node); n != nil {
			cn.Cordoned = n.Spec.Unschedulable
		}
		t.Metadata.Collector.Nodes = append(t.Metadata.Collector.Nodes, cn)
	}
	trace.JudgeNodes(input, t, views)
	return nil
}

func capNames(p podrunner.Profile) []string {
	if p == podrunner.ProfilePrivileged {
		return []string{"privileged"}
	}
	var out []string
	for _, c := range p.Capabilities() {
		out = append(out, string(c))
	}
	return out
}

// needsBPF: reading Cilium's pinned maps needs more than NET_ADMIN. Nodes
// that run Cilium carry its annotations, so that is a cheap sign that needs
// no extra API request.
func needsBPF(input *trace.Input) bool {
	for _, n := range input.Nodes {
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

type chosenNode struct {
	name  string
	roles []string
}

// chooseNodes picks the nodes to inspect and reports the ones that cannot be
// (NotReady, unknown) without waiting on them. It reads the nodes it needs
// that the trace has not read: every node for --all-nodes, otherwise the
// chosen ones (trace.Input.ReadNodes: one GET each up to a handful).
func (in *Inspector) chooseNodes(ctx context.Context, input *trace.Input, client *trace.PolicyClient) ([]chosenNode, []trace.NodeView, error) {
	roles := map[string][]string{}
	add := func(node, role string) {
		if node == "" {
			return
		}
		for _, r := range roles[node] {
			if r == role {
				return
			}
		}
		roles[node] = append(roles[node], role)
	}
	switch {
	case in.Flags.AllNodes:
		if err := input.ReadNodes(ctx, in.Client, nil, true); err != nil {
			return nil, nil, fmt.Errorf("--all-nodes: cannot list nodes: %w", err)
		}
		for name := range input.Nodes {
			add(name, "all-nodes")
		}
	case len(in.Flags.Nodes) > 0:
		for _, n := range in.Flags.Nodes {
			add(n, "selected")
		}
	default:
		for _, sl := range input.Slices {
			for _, e := range sl.Endpoints {
				if e.NodeName != nil {
					add(*e.NodeName, "endpoints")
				}
			}
		}
	}
	if client != nil {
		add(client.NodeName, "client")
	}
	names := make([]string, 0, len(roles))
	for n := range roles {
		names = append(names, n)
	}
	sort.Strings(names)
	// Without read access to nodes the collectors still run; a node that
	// cannot start one then fails with its own message.
	_ = input.ReadNodes(ctx, in.Client, names, false)
	var chosen []chosenNode
	var skipped []trace.NodeView
	for _, name := range names {
		if node, known := input.Node(name); known {
			if node == nil {
				skipped = append(skipped, trace.NodeView{Node: name, Roles: roles[name], Failure: "no such node"})
				continue
			}
			if reason := notReady(node); reason != "" {
				skipped = append(skipped, trace.NodeView{Node: name, Roles: roles[name], Failure: reason})
				continue
			}
		}
		chosen = append(chosen, chosenNode{name: name, roles: roles[name]})
	}
	return chosen, skipped, nil
}

// notReady says why a node cannot run a collector now: a NotReady or
// Unknown node never starts the Pod, so it is reported instead of awaited.
func notReady(n *corev1.Node) string {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return fmt.Sprintf("node is NotReady (Ready=%s, %s: %s): not inspected", c.Status, c.Reason, c.Message)
		}
	}
	return ""
}

func (in *Inspector) runAll(ctx context.Context, input *trace.Input, t *trace.ServiceTrace, opts podrunner.PodSpecOptions, nodes []chosenNode, client *trace.PolicyClient) []trace.NodeView {
	prog := newProgress(in.Progress)
	defer prog.done()
	runner := &podrunner.Runner{
		Client:       in.Client,
		Options:      opts,
		StartTimeout: in.Flags.StartTimeout,
		Progress:     prog.update,
	}
	run := in.runner
	if run == nil {
		run = (*podrunner.Runner).Run
	}
	views := make([]trace.NodeView, len(nodes))
	sem := make(chan struct{}, in.Flags.MaxParallel)
	var wg sync.WaitGroup
	for i, n := range nodes {
		views[i] = trace.NodeView{Node: n.name, Roles: n.roles, Profile: string(opts.Profile)}
		var extra []string
		if client != nil && client.Pod != nil && client.Pod.Status.PodIP != "" && !client.Pod.Spec.HostNetwork {
			extra = append(extra, client.Pod.Status.PodIP)
		}
		req := trace.CollectRequest(input, n.name, t.Metadata.ClusterDomain, extra...)
		body, err := json.Marshal(req)
		if err != nil {
			views[i].Failure = "cannot encode the collector request: " + err.Error()
			continue
		}
		wg.Add(1)
		go func(v *trace.NodeView, body []byte) {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				v.Failure = "interrupted before the collector started"
				return
			}
			defer func() { <-sem }()
			out, err := run(runner, ctx, v.Node, body)
			if err != nil {
				v.Failure = failureText(err)
				return
			}
			var obs collectorapi.Observation
			if err := json.Unmarshal(out.Log, &obs); err != nil {
				v.Failure = "the collector's output is not an observation: " + err.Error()
				return
			}
			v.Observation = &obs
		}(&views[i], body)
	}
	wg.Wait()
	return views
}

func failureText(err error) string {
	var f *podrunner.Failure
	if errors.As(err, &f) {
		return f.Error()
	}
	return err.Error()
}

// ResolveFrom reads the --from client: pod/NAME (in namespace),
// pod/NAMESPACE/NAME or node/NAME.
func ResolveFrom(ctx context.Context, c kubernetes.Interface, namespace, from string) (*trace.PolicyClient, error) {
	if from == "" {
		return nil, nil
	}
	kind, rest, _ := strings.Cut(from, "/")
	switch kind {
	case "node", "nodes", "no":
		pc := &trace.PolicyClient{NodeName: rest}
		if n, err := c.CoreV1().Nodes().Get(ctx, rest, metav1.GetOptions{}); err == nil {
			pc.Node = n
		} else if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("--from: node %s not found", rest)
		}
		return pc, nil
	}
	ns, name := namespace, rest
	if a, b, ok := strings.Cut(rest, "/"); ok {
		ns, name = a, b
	}
	pod, err := c.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("--from: pod %s not found in namespace %s", name, ns)
	}
	if err != nil {
		return nil, fmt.Errorf("--from: cannot get pod %s in namespace %s: %w", name, ns, err)
	}
	if pod.Spec.NodeName == "" {
		return nil, fmt.Errorf("--from: pod %s/%s is not scheduled on a node yet", ns, name)
	}
	return trace.PolicyClientFromPod(pod), nil
}

// progress draws one live line on a terminal: per node, the collector's stage.
type progress struct {
	w      io.Writer
	mu     sync.Mutex
	stages map[string]string
	drawn  bool
}

func newProgress(w io.Writer) *progress { return &progress{w: w, stages: map[string]string{}} }

func (p *progress) update(node string, stage podrunner.Stage, _ string) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stages[node] = string(stage)
	names := make([]string, 0, len(p.stages))
	for n := range p.stages {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + ": " + p.stages[n]
	}
	line := "collectors  " + strings.Join(parts, "  ")
	if len(line) > 150 {
		line = line[:149] + "…"
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.drawn = true
}

func (p *progress) done() {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// PreflightFailed ends the whole trace: the user asked for node layers and
// no collector Pod can run, so the fix (namespace, label, permission) is the
// answer, before anything is created.
type PreflightFailed struct{ Err error }

func (e *PreflightFailed) Error() string      { return e.Err.Error() }
func (e *PreflightFailed) Unwrap() error      { return e.Err }
func (e *PreflightFailed) FatalToTrace() bool { return true }
