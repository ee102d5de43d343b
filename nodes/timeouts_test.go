package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestResolveTimeouts: the derived limits nest inside the trace's time with
// room to judge, and a given limit that would defeat another is an error
// naming the flag to change.
func TestResolveTimeouts(t *testing.T) {
	for _, tt := range []struct {
		name              string
		trace             time.Duration
		node, start       time.Duration // as given (0: not given)
		wantNode, wantStr time.Duration
		wantErr           []string
	}{
		{name: "defaults", trace: time.Minute, wantNode: 45 * time.Second, wantStr: 30 * time.Second},
		{name: "a long trace caps the start", trace: 10 * time.Minute, wantNode: 450 * time.Second, wantStr: MaxStartTimeout},
		{name: "a short trace", trace: 4 * time.Second, wantNode: 3 * time.Second, wantStr: 2 * time.Second},
		{name: "given node, derived start", trace: time.Minute, node: 30 * time.Second, wantNode: 30 * time.Second, wantStr: 20 * time.Second},
		{name: "both given and nested", trace: time.Minute, node: 50 * time.Second, start: 40 * time.Second, wantNode: 50 * time.Second, wantStr: 40 * time.Second},
		{name: "node as long as the trace", trace: time.Minute, node: time.Minute,
			wantErr: []string{"--node-timeout 1m0s does not fit in --timeout 1m0s", "give at most 54s", "raise --timeout"}},
		{name: "start as long as the trace's default", trace: time.Minute, start: time.Minute,
			wantErr: []string{"--collector-start-timeout 1m0s must be shorter than --node-timeout 45s (derived from --timeout 1m0s)", "raise --timeout or --node-timeout"}},
		{name: "start as long as the given node", trace: 2 * time.Minute, node: 30 * time.Second, start: 30 * time.Second,
			wantErr: []string{"--collector-start-timeout 30s must be shorter than --node-timeout 30s:", "raise --node-timeout"}},
		{name: "negative", trace: time.Minute, node: -time.Second, wantErr: []string{"invalid --node-timeout"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := NewFlags("img")
			f.NodeTimeout, f.StartTimeout = tt.node, tt.start
			err := f.ResolveTimeouts(tt.trace)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; node %s start %s", f.NodeTimeout, f.StartTimeout)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.NodeTimeout != tt.wantNode || f.StartTimeout != tt.wantStr {
				t.Errorf("node %s start %s, want %s %s", f.NodeTimeout, f.StartTimeout, tt.wantNode, tt.wantStr)
			}
			if f.StartTimeout >= f.NodeTimeout || f.NodeTimeout+plan.JudgeReserve(tt.trace) > tt.trace {
				t.Errorf("limits do not nest: start %s, node %s, reserve %s, trace %s", f.StartTimeout, f.NodeTimeout, plan.JudgeReserve(tt.trace), tt.trace)
			}
		})
	}
}

// hangingRunner answers for every node but hung, whose collector never
// finishes: it returns only when its context ends, as Runner.Run does.
func hangingRunner(t *testing.T, hung string) func(*Runner, context.Context, string, []byte) (*Output, error) {
	sample, err := os.ReadFile("../collectors/testdata/observations/real-kube-proxy-iptables-netns.json")
	if err != nil {
		t.Fatal(err)
	}
	return func(_ *Runner, ctx context.Context, node string, _ []byte) (*Output, error) {
		if node != hung {
			return &Output{Node: node, Log: sample}, nil
		}
		<-ctx.Done()
		return nil, &Failure{Kind: FailTimeout, Stage: StageCollecting, Node: node, Pod: "svctrace-collector-hung", Message: "timed out while collecting", Err: ctx.Err()}
	}
}

// TestInspectHungNodeBecomesUnknown: a node whose collector never answers
// is cut at --node-timeout and reported as that node's DP001, naming the
// flag; the node that answered is still judged.
func TestInspectHungNodeBecomesUnknown(t *testing.T) {
	f := NewFlags("img")
	f.AllNodes = true
	if err := f.ResolveTimeouts(time.Minute); err != nil {
		t.Fatal(err)
	}
	in := &Inspector{Client: fake.NewClientset(privilegedNS()), Flags: *f, runner: hangingRunner(t, "n2"),
		nodeDeadline: func(ctx context.Context, node string, limit time.Duration) (context.Context, context.CancelFunc) {
			if node == "n2" {
				// n2's limit is already behind it: whether or not its
				// collector got to start, it did not answer in time.
				return context.WithDeadline(ctx, time.Now().Add(-limit))
			}
			return context.WithTimeout(ctx, limit)
		}}
	tr := inspectTrace(t, in, webInput())

	var dp001 *report.Check
	for i, c := range tr.Layer(report.LayerDatapath).Checks {
		if c.Code == report.CodeNodeCollectorFailed && c.Node == "n2" {
			dp001 = &tr.Layer(report.LayerDatapath).Checks[i]
		}
	}
	if dp001 == nil || !strings.Contains(dp001.Message, "did not answer within 45s") || !strings.Contains(dp001.Message, "--node-timeout raises the limit") {
		t.Fatalf("hung node not reported with its limit and flag: %+v", dp001)
	}
	judged := map[string]bool{}
	for _, l := range report.NodeLayers {
		for _, n := range tr.Layer(l).Nodes {
			if n.Status != report.StatusUnknown {
				judged[n.Node] = true
			}
		}
	}
	if !judged["n1"] || judged["n2"] {
		t.Errorf("judged nodes %v, want n1 (it answered) and not n2", judged)
	}
}

// endingContext is a context whose deadline passes when end is called:
// the test decides when the trace's time for the nodes runs out, instead
// of racing a timer.
type endingContext struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newEndingContext() *endingContext {
	return &endingContext{Context: context.Background(), done: make(chan struct{})}
}

func (c *endingContext) Done() <-chan struct{} { return c.done }
func (c *endingContext) end()                  { c.once.Do(func() { close(c.done) }) }
func (c *endingContext) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestInspectNodesDeadlineKeepsWhatAnswered: when the time the trace gave
// its nodes ends, Inspect returns no error, keeps the observations of the
// nodes that answered, and reports a node still collecting, and one still
// waiting for a --max-parallel slot, as not inspected because the trace's
// time ran out, naming --timeout.
func TestInspectNodesDeadlineKeepsWhatAnswered(t *testing.T) {
	for _, tt := range []struct {
		name        string
		maxParallel int
		hung        []string
		// wait is how many hung collectors run before the time ends.
		wait     int
		answered []string
		want     map[string]string // node → what its failure says
	}{
		{name: "collecting", maxParallel: 3, hung: []string{"n2", "n3"}, wait: 2, answered: []string{"n1"},
			want: map[string]string{"n2": "did not answer before the trace's time for the nodes ran out; --timeout raises it",
				"n3": "did not answer before the trace's time for the nodes ran out; --timeout raises it"}},
		{name: "waiting for a slot", maxParallel: 1, hung: []string{"n1", "n2", "n3"}, wait: 1,
			want: map[string]string{"": "ran out before this node's turn (--timeout raises it)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			inp := webInput()
			inp.Nodes["n3"] = readyNode("n3", true)
			sel := plan.NodeSelection{AllNodes: true}
			np := plan.PlanNodes(inp, sel, nil, "")
			if len(np.Nodes) != 3 {
				t.Fatalf("plan %+v", np.Nodes)
			}
			f := NewFlags("img")
			f.MaxParallel = tt.maxParallel
			ctx := newEndingContext()
			sample, err := os.ReadFile("../collectors/testdata/observations/real-kube-proxy-iptables-netns.json")
			if err != nil {
				t.Fatal(err)
			}
			running := make(chan string, 3)
			// The time ends only once the nodes that answer have: a node
			// whose goroutine had not reached its collector yet would
			// rightly not be started.
			answered := make(chan string, 3)
			in := &Inspector{Client: fake.NewClientset(privilegedNS()), Flags: *f,
				runner: func(_ *Runner, c context.Context, node string, _ []byte) (*Output, error) {
					if !slices.Contains(tt.hung, node) {
						defer func() { answered <- node }()
						return &Output{Node: node, Log: sample}, nil
					}
					running <- node
					<-c.Done()
					return nil, &Failure{Kind: FailTimeout, Stage: StageCollecting, Node: node, Message: "timed out while collecting", Err: c.Err()}
				}}
			go func() {
				for range tt.wait {
					<-running
				}
				for range tt.answered {
					<-answered
				}
				ctx.end()
			}()
			nr, err := in.Inspect(ctx, np)
			if err != nil {
				t.Fatalf("Inspect = %v: the nodes' deadline is not an interruption", err)
			}
			views := map[string]plan.NodeView{}
			for _, v := range nr.Nodes {
				views[v.Node] = v
			}
			for _, n := range tt.answered {
				if views[n].Observation == nil {
					t.Errorf("%s answered but its observation was dropped: %q", n, views[n].Failure)
				}
			}
			for node, want := range tt.want {
				found := false
				for _, v := range nr.Nodes {
					if (node == "" || v.Node == node) && strings.Contains(v.Failure, want) {
						found = true
					}
				}
				if !found {
					t.Errorf("no node %q failure saying %q: %+v", node, want, nr.Nodes)
				}
			}
		})
	}
}

// TestInspectReportsHowLateEachCollectorRan: the collector's own lateness
// reaches the report's metadata, so a bot reading the JSON sees why that
// node's timeouts were not judged; a punctual one adds nothing.
func TestInspectReportsHowLateEachCollectorRan(t *testing.T) {
	late := map[string]float64{"n1": 850, "n2": 0.3}
	f := NewFlags("img")
	f.AllNodes = true
	in := &Inspector{Client: fake.NewClientset(privilegedNS()), Flags: *f,
		runner: func(_ *Runner, _ context.Context, node string, _ []byte) (*Output, error) {
			obs := collectorapi.Observation{APIVersion: collectorapi.ObservationAPIVersion, Kind: collectorapi.ObservationKind, NodeName: node,
				Collector: collectorapi.CollectorInfo{LateMillis: late[node]}}
			b, err := json.Marshal(obs)
			return &Output{Node: node, Log: b}, err
		}}
	tr := inspectTrace(t, in, webInput())
	got := map[string]float64{}
	for _, n := range tr.Metadata.Collector.Nodes {
		got[n.Node] = n.LateMillis
	}
	if got["n1"] != 850 || got["n2"] != 0 {
		t.Errorf("lateMillis per node = %v, want n1 850 and n2 absent", got)
	}
}

// TestInspectNodesDeadlineDuringPreflight: the trace's time for the nodes
// running out while the collector namespace is checked makes every node
// unknown with that reason and the flag, not a bare "context deadline
// exceeded", and is no error.
func TestInspectNodesDeadlineDuringPreflight(t *testing.T) {
	ctx := newEndingContext()
	client := fake.NewClientset(privilegedNS())
	client.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		ctx.end() // the time runs out while the API answers
		return true, nil, context.DeadlineExceeded
	})
	f := NewFlags("img")
	f.AllNodes = true
	in := &Inspector{Client: client, Flags: *f, runner: func(*Runner, context.Context, string, []byte) (*Output, error) {
		t.Error("a collector ran after the preflight failed")
		return nil, errors.New("unreachable")
	}}
	inp := webInput()
	np := plan.PlanNodes(inp, f.Selection(), nil, "")
	nr, err := in.Inspect(ctx, np)
	if err != nil {
		t.Fatalf("Inspect = %v: the nodes' deadline is not an interruption", err)
	}
	if !strings.Contains(nr.Failure, "the trace's time for the nodes ran out") || !strings.Contains(nr.Failure, "--timeout raises it") {
		t.Errorf("failure %q does not say the time ran out and how to raise it", nr.Failure)
	}
}
