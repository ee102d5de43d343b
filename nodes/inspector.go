// Package nodes is the plugin's node side: it runs one short-lived
// collector Pod per planned node (start, wait, read the observation from the
// Pod log, delete on every path) and returns what each observed as a
// plan.NodeReport. Which nodes to inspect and what to ask each one comes
// from plan.PlanNodes; what the observations mean is trace's business. It
// judges nothing.
package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
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
	// ClientNetns lets the collector on the --from Pod's node probe from
	// inside that Pod's network namespace (ProfileNetns on that node only).
	ClientNetns bool
	// StartTimeout bounds a collector Pod's scheduling and image pull;
	// NodeTimeout bounds one node's whole collection, from asking the node
	// (the agent's exec or the Pod's creation) to its observation. Zero
	// until ResolveTimeouts derives them from the trace's time; a zero
	// NodeTimeout then means no limit of its own.
	StartTimeout time.Duration
	NodeTimeout  time.Duration
	// Agent is auto (exec into the node agent where it runs and the user
	// may exec, collector Pods elsewhere) or never.
	Agent string
}

// DefaultMaxParallel is how many collectors run at once by default. The
// pace of a large run is set by the client's request rate (two requests a
// collector Pod, at 50 a second) and the API server's fairness, not by this
// bound; it has to be large enough that the rate, not collectors waiting
// for the kubelet, is what bounds it: 50 at about two seconds a collector.
const DefaultMaxParallel = 50

// NewFlags returns the defaults; image is the plugin's pinned collector image.
func NewFlags(image string) *Flags {
	return &Flags{MaxParallel: DefaultMaxParallel, Image: image, CollectorNamespace: DefaultCollectorNamespace, Agent: AgentAuto}
}

// AddFlags registers the flags.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.Nodes, "node", f.Nodes, "inspect this node (repeatable); default: the nodes that host the Service's endpoints, plus the --from node")
	fs.BoolVar(&f.AllNodes, "all-nodes", f.AllNodes, "inspect every node and report a per-node matrix")
	fs.StringVar(&f.From, "from", f.From, "the client: pod/NAME (in the Service's namespace, or NAMESPACE/NAME) or node/NAME; its node is inspected and NetworkPolicies are judged for it")
	fs.BoolVar(&f.ClientNetns, "client-netns", f.ClientNetns, "with --from pod/NAME: probe the Service and resolve its name from inside that Pod's network namespace; the collector on its node only gets SYS_ADMIN and SYS_PTRACE (profile netadmin+netns) for it")
	f.AddCollectorFlags(fs)
}

// AddCollectorFlags registers the flags that say how collectors run, not
// where: the ones a command that takes its node selection elsewhere (the MCP
// server's tool arguments) still needs.
func (f *Flags) AddCollectorFlags(fs *pflag.FlagSet) {
	fs.IntVar(&f.MaxParallel, "max-parallel", f.MaxParallel, "collectors running at once (collector Pods or node agent execs)")
	fs.StringVar(&f.Image, "image", f.Image, "collector image")
	fs.StringVar(&f.CollectorNamespace, "collector-namespace", f.CollectorNamespace, "namespace for the collector Pods (must allow privileged Pods under Pod Security Admission)")
	fs.BoolVar(&f.Privileged, "privileged", f.Privileged, "run collector Pods privileged (default: only NET_ADMIN and NET_RAW)")
	fs.StringVar(&f.Agent, "agent", f.Agent, "use the node agent (kubectl svctrace agent install) where it runs: auto or never")
	fs.DurationVar(&f.StartTimeout, "collector-start-timeout", f.StartTimeout, "how long a collector Pod may take to be scheduled and pulled before its node is reported as not inspected (default: 2/3 of --node-timeout, at most 1m)")
	fs.DurationVar(&f.NodeTimeout, "node-timeout", f.NodeTimeout, "how long one node may take to answer (collector start, collection, its output) before it is reported as not inspected and the trace goes on without it (default: 3/4 of --timeout)")
}

// Selection is the node selection the flags ask for.
func (f *Flags) Selection() plan.NodeSelection {
	return plan.NodeSelection{Nodes: f.Nodes, AllNodes: f.AllNodes}
}

// Validate checks flag combinations.
func (f *Flags) Validate() error {
	if f.AllNodes && len(f.Nodes) > 0 {
		return errors.New("--all-nodes and --node are mutually exclusive")
	}
	if f.MaxParallel < 1 {
		return fmt.Errorf("invalid --max-parallel %d: must be at least 1", f.MaxParallel)
	}
	if f.Agent != "" && f.Agent != AgentAuto && f.Agent != AgentNever {
		return fmt.Errorf("invalid --agent %q: want auto or never", f.Agent)
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
	if f.ClientNetns {
		if kind, _, _ := strings.Cut(f.From, "/"); kind != "pod" && kind != "pods" && kind != "po" {
			return errors.New("--client-netns needs --from pod/NAME: it probes from that Pod's network namespace")
		}
	}
	return nil
}

// Inspector implements plan.NodeInspector with collector Pods.
type Inspector struct {
	Client kubernetes.Interface
	Flags  Flags
	// Progress, when set, receives a live status line (a terminal only).
	Progress io.Writer

	// Exec runs a command in an agent Pod (pods/exec); nil disables the
	// agent.
	Exec ExecFunc

	// transports records, per node, how its observation came back.
	transports map[string]transport
	// agents maps a node to its Ready agent Pod the user may exec into,
	// agentNote says why none is used; read once per inspection
	// (readAgents).
	agents     map[string]string
	agentNote  string
	agentsRead bool
	// prefetched delivers what Prefetch read, once.
	prefetched chan agentList
	// runner and nodeDeadline are replaced in tests.
	runner       func(r *Runner, ctx context.Context, node string, req []byte) (*Output, error)
	nodeDeadline func(ctx context.Context, node string, limit time.Duration) (context.Context, context.CancelFunc)
}

// Inspect runs a collector on every planned node and reports what each saw.
// It returns an error only when ctx is canceled; a collector namespace that
// rejects the Pod or a missing permission is the report's Failure. When
// ctx's deadline passes (the time the trace gave its nodes) the nodes that
// answered are reported with their observations and the others as not
// inspected, each with why.
func (in *Inspector) Inspect(ctx context.Context, np plan.NodePlan) (*plan.NodeReport, error) {
	profile := ProfileNetAdmin
	if in.Flags.Privileged {
		profile = ProfilePrivileged
	} else if np.EBPFHint {
		profile = ProfileBPF
	}
	opts := PodSpecOptions{
		Namespace:       in.Flags.CollectorNamespace,
		Image:           in.Flags.Image,
		Profile:         profile,
		DeadlineSeconds: 300,
		RunID:           "r" + rand.String(8),
		Service:         np.Service,
	}
	for _, n := range np.Nodes {
		if c := n.ClientPod(); c != nil {
			c.EnterNetns = in.Flags.ClientNetns
		}
	}
	nr := &plan.NodeReport{Collector: &report.CollectorRun{Image: opts.Image, Namespace: opts.Namespace,
		Profile: string(profile), HostPID: HostPID, Capabilities: capNames(profile)}}
	views := slices.Clone(np.NotInspected)
	// Where the node agent serves every planned node, no collector Pod is
	// created, and the checks that one could be are skipped. The agents
	// are read again for each inspection (--watch inspects many times).
	in.agentsRead = false
	needsPod := ""
	if len(np.Nodes) > 0 && profile == ProfileNetAdmin {
		in.readAgents(ctx, opts.Namespace)
	}
	for _, n := range np.Nodes {
		if _, ok := in.agents[n.Name]; !ok || profile != ProfileNetAdmin || (n.ClientPod() != nil && in.Flags.ClientNetns) {
			needsPod = n.Name
			break
		}
	}
	var preflight error
	if needsPod != "" {
		preflight = Preflight(ctx, in.Client, opts, needsPod)
	}
	if len(np.Nodes) > 0 {
		if err := preflight; err != nil {
			if interrupted(ctx) {
				return nil, ctx.Err()
			}
			if ctx.Err() != nil {
				err = fmt.Errorf("the trace's time for the nodes ran out while checking that the collector Pod may run (%s raises it): %w", flagTimeout, err)
			}
			nr.Failure = err.Error()
			for _, n := range np.Nodes {
				views = append(views, plan.NodeView{Node: n.Name, Roles: n.Roles, Failure: "not inspected: " + err.Error()})
			}
		} else {
			in.transports = map[string]transport{}
			ran := in.runAll(ctx, opts, np.Nodes)
			if interrupted(ctx) {
				return nil, ctx.Err()
			}
			if err := in.rereadEBPF(ctx, opts, np.Nodes, ran); err != nil {
				return nil, err
			}
			views = append(views, ran...)
		}
	}
	for _, v := range views {
		cn := report.CollectorNode{Node: v.Node, Roles: v.Roles,
			Inspected: v.Observation != nil, Failure: v.Failure, Cordoned: np.Cordoned[v.Node]}
		if v.Profile != "" && v.Profile != string(profile) {
			cn.Profile = v.Profile
		}
		if t, ok := in.transports[v.Node]; ok && cn.Inspected {
			cn.Transport, cn.TransportNote = t.name, t.note
		}
		if o := v.Observation; o != nil && o.Collector.LateMillis >= 1 {
			cn.LateMillis = o.Collector.LateMillis
		}
		nr.Collector.Nodes = append(nr.Collector.Nodes, cn)
	}
	nr.Nodes = views
	return nr, nil
}

// agentList is what agentPods returned.
type agentList struct {
	agents map[string]string
	note   string
}

// Prefetch reads which nodes' agents this user may exec into while the
// trace reads the Service: two requests off the trace's critical path.
// A later Prefetch replaces one whose Inspect never came (the Service was
// not found).
func (in *Inspector) Prefetch(ctx context.Context) {
	if in.Exec == nil || in.Flags.Agent == AgentNever {
		return
	}
	ch := make(chan agentList, 1)
	in.prefetched = ch
	go func() {
		agents, note := agentPods(ctx, in.Client, in.Flags.CollectorNamespace)
		ch <- agentList{agents, note}
	}()
}

// readAgents reads, once, which nodes' agents this user may exec into.
func (in *Inspector) readAgents(ctx context.Context, namespace string) {
	if in.agentsRead {
		return
	}
	in.agentsRead = true
	if ch := in.prefetched; ch != nil && namespace == in.Flags.CollectorNamespace {
		in.prefetched = nil
		select {
		case r := <-ch:
			in.agents, in.agentNote = r.agents, r.note
			return
		case <-ctx.Done():
			return
		}
	}
	if in.Exec != nil && in.Flags.Agent != AgentNever {
		in.agents, in.agentNote = agentPods(ctx, in.Client, namespace)
	}
}

// rereadEBPF runs the collector again, with ProfileBPF, on the nodes whose
// first run found an eBPF datapath's pinned maps but could not open them:
// the least privilege first, more only where the node shows it is needed.
// The report's per-node profile says which nodes got it.
func (in *Inspector) rereadEBPF(ctx context.Context, opts PodSpecOptions, planned []plan.PlannedNode, views []plan.NodeView) error {
	if opts.Profile != ProfileNetAdmin {
		return nil
	}
	var again []plan.PlannedNode
	var at []int
	for i, v := range views {
		if ebpfNeedsPrivilege(v.Observation) {
			again = append(again, planned[i])
			at = append(at, i)
		}
	}
	if len(again) == 0 {
		return nil
	}
	opts.Profile = ProfileBPF
	reread := in.runAll(ctx, opts, again)
	if interrupted(ctx) {
		return ctx.Err()
	}
	for j, i := range at {
		if reread[j].Observation != nil {
			views[i] = reread[j]
		}
	}
	return nil
}

// ebpfNeedsPrivilege: the collector saw Cilium's or Calico's pinned maps
// and was refused opening them.
func ebpfNeedsPrivilege(o *collectorapi.Observation) bool {
	if o == nil || o.Sections.EBPF == nil || o.Sections.EBPF.Data == nil {
		return false
	}
	d := o.Sections.EBPF.Data
	denied := func(s string) bool {
		s = strings.ToLower(s)
		return strings.Contains(s, "operation not permitted") || strings.Contains(s, "permission denied")
	}
	if c := d.Cilium; c != nil && c.Detected && denied(c.Error) {
		return true
	}
	if c := d.Calico; c != nil && c.Detected {
		for _, m := range c.Maps {
			if denied(m.Error) {
				return true
			}
		}
	}
	return false
}

// nodeProfile is the profile of n's collector: the run's, or ProfileNetns
// on the node of a client whose netns the collector enters.
func nodeProfile(opts PodSpecOptions, n plan.PlannedNode) Profile {
	if c := n.ClientPod(); c != nil && c.EnterNetns && opts.Profile != ProfilePrivileged {
		return ProfileNetns
	}
	return opts.Profile
}

func capNames(p Profile) []string {
	if p == ProfilePrivileged {
		return []string{"privileged"}
	}
	var out []string
	for _, c := range p.Capabilities() {
		out = append(out, string(c))
	}
	return out
}

func (in *Inspector) runAll(ctx context.Context, opts PodSpecOptions, nodes []plan.PlannedNode) []plan.NodeView {
	prog := newProgress(in.Progress)
	defer prog.done()
	var createdMu sync.Mutex
	var created []string
	runner := &Runner{
		Client:        in.Client,
		Options:       opts,
		StartTimeout:  in.Flags.StartTimeout,
		Progress:      prog.update,
		sweptByCaller: true,
		created: func(pod string) {
			createdMu.Lock()
			defer createdMu.Unlock()
			created = append(created, pod)
		},
	}
	in.readAgents(ctx, opts.Namespace)
	agents, agentNote := in.agents, in.agentNote
	// The run's one watch follows its collector Pods; where the agent
	// serves every node there are none (a failed exec's Pod is followed
	// on its own).
	var rw *runWatch
	for _, n := range nodes {
		if _, ok := agents[n.Name]; !ok || nodeProfile(opts, n) != ProfileNetAdmin {
			rw = startRunWatch(ctx, in.Client, opts.Namespace, opts.RunID)
			break
		}
	}
	if rw != nil {
		runner.watch = rw
	}
	run := in.runner
	if run == nil {
		run = (*Runner).Run
	}
	deadline := in.nodeDeadline
	if deadline == nil {
		deadline = func(ctx context.Context, _ string, limit time.Duration) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, limit)
		}
	}
	var tmu sync.Mutex
	record := func(node string, t transport) {
		tmu.Lock()
		defer tmu.Unlock()
		if in.transports != nil {
			in.transports[node] = t
		}
	}
	views := make([]plan.NodeView, len(nodes))
	sem := make(chan struct{}, max(in.Flags.MaxParallel, 1))
	var wg sync.WaitGroup
	for i, n := range nodes {
		nodeOpts := opts
		nodeOpts.Profile = nodeProfile(opts, n)
		views[i] = plan.NodeView{Node: n.Name, Roles: n.Roles, Profile: string(nodeOpts.Profile)}
		nodeRunner := runner
		if nodeOpts.Profile != opts.Profile {
			r := *runner
			r.Options = nodeOpts
			nodeRunner = &r
		}
		wg.Add(1)
		go func(v *plan.NodeView, n plan.PlannedNode, runner *Runner, profile Profile) {
			defer wg.Done()
			notStarted := func() {
				v.Failure = "interrupted before the collector started"
				if !interrupted(ctx) {
					v.Failure = "not inspected: the trace's time for the nodes ran out before this node's turn (" + flagTimeout + " raises it)"
				}
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				notStarted()
				return
			}
			defer func() { <-sem }()
			// A slot freed by a collector the end of the time stopped is
			// as ready as the end itself: select picks either, so a node
			// that got its turn only then never started.
			if ctx.Err() != nil {
				notStarted()
				return
			}
			// The node's own limit runs from its turn: waiting for a
			// --max-parallel slot is not the node's slowness.
			nctx, cancel := ctx, context.CancelFunc(func() {})
			if in.Flags.NodeTimeout > 0 {
				nctx, cancel = deadline(ctx, v.Node, in.Flags.NodeTimeout)
			}
			defer cancel()
			// Encoded only once a slot is free: a request of every
			// endpoint exists for the running collectors only. The
			// parts every node shares are encoded once per plan.
			body, err := n.EncodedRequest()
			if err != nil {
				v.Failure = "cannot encode the collector request: " + err.Error()
				return
			}
			var log []byte
			t := transport{name: TransportEphemeral, note: agentNote}
			if pod, ok := agents[v.Node]; ok && profile == ProfileNetAdmin {
				log, err = runAgent(nctx, in.Exec, opts.Namespace, pod, body)
				if err == nil {
					t = transport{name: TransportAgent}
				} else if nctx.Err() == nil {
					t.note = "the node agent's exec failed (" + err.Error() + "); used a collector Pod"
				}
			}
			if log == nil && nctx.Err() == nil {
				out, err := run(runner, nctx, v.Node, body)
				if err != nil {
					v.Failure = failureText(err)
					if late := notAnswered(ctx, nctx, v.Node, in.Flags.NodeTimeout, err); late != "" {
						v.Failure = late
					}
					return
				}
				log = out.Log
			}
			if log == nil {
				v.Failure = "interrupted"
				if late := notAnswered(ctx, nctx, v.Node, in.Flags.NodeTimeout, nil); late != "" {
					v.Failure = late
				}
				return
			}
			record(v.Node, t)
			var obs collectorapi.Observation
			if err := json.Unmarshal(log, &obs); err != nil {
				v.Failure = "the collector's output is not an observation: " + err.Error()
				return
			}
			v.Observation = &obs
		}(&views[i], n, nodeRunner, nodeOpts.Profile)
	}
	wg.Wait()
	// The watch ends before the sweep: nobody waits for its deletions.
	if rw != nil {
		rw.close()
	}
	if len(created) > 0 || ctx.Err() != nil {
		in.sweepRun(opts, created)
	}
	return views
}

// sweepRun deletes every Pod of the run, on a fresh context (the run may
// have been interrupted): one DeleteCollection by the run's label, or,
// where the role may not delete collections, the created Pods one by one.
func (in *Inspector) sweepRun(opts PodSpecOptions, created []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods := in.Client.CoreV1().Pods(opts.Namespace)
	now := metav1.DeleteOptions{GracePeriodSeconds: new(int64)}
	sel := metav1.ListOptions{LabelSelector: LabelRun + "=" + labelValue(opts.RunID)}
	err := deleteCollection(ctx, in.Client, opts.Namespace, now, sel)
	if apierrors.IsForbidden(err) {
		var errs []error
		for _, name := range created {
			if derr := pods.Delete(ctx, name, now); derr != nil && !apierrors.IsNotFound(derr) {
				errs = append(errs, derr)
			}
		}
		err = errors.Join(errs...)
	}
	if err != nil && in.Progress != nil {
		fmt.Fprintf(in.Progress, "\r\033[Kcould not delete the collector Pods of run %s: %v; run `kubectl svctrace cleanup`\n", opts.RunID, err)
	}
}

// deleteCollection deletes the Pods sel selects. The API server answers a
// DeleteCollection with every deleted object: a thousand collector Pods,
// each carrying its request, are tens of megabytes, which client-go's
// DeleteCollection reads whole into memory only to look at the status.
// The answer is asked for as object metadata and streamed past instead.
func deleteCollection(ctx context.Context, c kubernetes.Interface, namespace string, opts metav1.DeleteOptions, sel metav1.ListOptions) error {
	rc, ok := c.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return c.CoreV1().Pods(namespace).DeleteCollection(ctx, opts, sel)
	}
	body, err := rc.Delete().Namespace(namespace).Resource("pods").
		VersionedParams(&sel, scheme.ParameterCodec).Body(&opts).
		SetHeader("Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json").
		Stream(ctx)
	if err != nil {
		return err
	}
	defer body.Close()
	_, err = io.Copy(io.Discard, body)
	return err
}

// Values of --agent.
const (
	AgentAuto  = "auto"
	AgentNever = "never"
)

type transport struct{ name, note string }

// interrupted: ctx was canceled (Ctrl-C, the trace's own end), not ended
// by the deadline the trace gave its nodes, after which the nodes that
// answered are still reported.
func interrupted(ctx context.Context) bool {
	return ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// notAnswered is why a node whose collection ended with its context gave
// no observation, naming the limit it hit and the flag that raises it; ""
// when its context did not end by a deadline (a failure of its own, or an
// interruption). all is the inspection's context, node the node's own.
func notAnswered(all, node context.Context, name string, limit time.Duration, err error) string {
	if !errors.Is(node.Err(), context.DeadlineExceeded) {
		return ""
	}
	while := ""
	var f *Failure
	if errors.As(err, &f) && f.Stage != "" {
		while = " (" + string(f.Stage) + ")"
		if f.Pod != "" {
			while = " (pod " + f.Pod + ", " + string(f.Stage) + ")"
		}
	}
	if errors.Is(all.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("collector on node %s%s did not answer before the trace's time for the nodes ran out; %s raises it", name, while, flagTimeout)
	}
	return fmt.Sprintf("collector on node %s%s did not answer within %s; %s raises the limit", name, while, limit, flagNodeTimeout)
}

func failureText(err error) string {
	var f *Failure
	if errors.As(err, &f) {
		return f.Error()
	}
	return err.Error()
}

// ResolveFrom reads the --from client: pod/NAME (in namespace),
// pod/NAMESPACE/NAME or node/NAME.
func ResolveFrom(ctx context.Context, c kubernetes.Interface, namespace, from string) (*report.PolicyClient, error) {
	if from == "" {
		return nil, nil
	}
	kind, rest, _ := strings.Cut(from, "/")
	switch kind {
	case "node", "nodes", "no":
		pc := &report.PolicyClient{NodeName: rest}
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
	return report.PolicyClientFromPod(pod), nil
}

// progress draws one live line on a terminal: per node, the collector's stage.
type progress struct {
	w      io.Writer
	mu     sync.Mutex
	stages map[string]string
	drawn  bool
}

func newProgress(w io.Writer) *progress { return &progress{w: w, stages: map[string]string{}} }

func (p *progress) update(node string, stage Stage, _ string) {
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
