package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/svctrace/kubectl-svctrace/trace/plan"
)

// hungInspector is a node side where no node ever answers: it returns only
// when its context ends, reporting every planned node as not answered
// when that end was a deadline (what nodes.Inspector does).
type hungInspector struct{ sawDeadline bool }

func (h *hungInspector) Inspect(ctx context.Context, np plan.NodePlan) (*plan.NodeReport, error) {
	_, h.sawDeadline = ctx.Deadline()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, ctx.Err()
	}
	nr := &plan.NodeReport{}
	for _, n := range np.Nodes {
		nr.Nodes = append(nr.Nodes, plan.NodeView{Node: n.Name,
			Failure: "collector on node " + n.Name + " did not answer before the trace's time for the nodes ran out; --timeout raises it"})
	}
	return nr, nil
}

// TestHungNodeStillRenders: with a node that never answers, the trace does
// not die at --timeout with nothing printed (exit 1): the node inspection
// ends early enough to judge and render, the node is reported as not
// inspected with the reason, and the trace exits 4.
func TestHungNodeStillRenders(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	f := NewTraceFlags()
	f.deps.getter = testGetter()
	client := fake.NewClientset(objects(true)...)
	f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil }
	f.deps.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	f.deps.getenv = func(string) string { return "" }
	hung := &hungInspector{}
	f.deps.inspector = hung
	cmd := newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3"}, f)
	// The smallest timeout with a 500 ms reserve: the test waits 1.5 s for
	// the node inspection's deadline, and asserts nothing about time.
	cmd.SetArgs([]string{"web", "--timeout", "2s"})
	err := cmd.ExecuteContext(context.Background())
	if code := ExitCode(err); code != ExitNotJudged {
		t.Fatalf("exit %d (%v), want %d\n%s", code, err, ExitNotJudged, out)
	}
	if !hung.sawDeadline {
		t.Error("the inspector's context had no deadline: nothing stops a hung node before the trace's own end")
	}
	for _, want := range []string{"UNKNOWN", "node-a", "did not answer before the trace's time for the nodes ran out"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestNodeLimitUsageErrors: node limits that would defeat the trace's
// own are usage errors (exit 2) naming the flag to change; limits that
// nest run.
func TestNodeLimitUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string // "" for a trace that runs
	}{
		{[]string{"--collector-start-timeout", "1m"}, "--collector-start-timeout 1m0s must be shorter than --node-timeout 45s (derived from --timeout 1m0s)"},
		{[]string{"--timeout", "1m", "--node-timeout", "1m"}, "--node-timeout 1m0s does not fit in --timeout 1m0s"},
		{[]string{"--node-timeout", "20s", "--collector-start-timeout", "20s"}, "raise --node-timeout"},
		{[]string{"--node-timeout", "-1s"}, "invalid --node-timeout"},
		{[]string{"--timeout", "5m", "--collector-start-timeout", "2m"}, ""},
		{[]string{"--node-timeout", "30s", "--collector-start-timeout", "20s"}, ""},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, run := testCmd(objects(true))
			err := run(append([]string{"web", "--no-node"}, tt.args...)...)
			if tt.want == "" {
				if code := ExitCode(err); code != ExitOK {
					t.Fatalf("exit %d (%v), want 0", code, err)
				}
				return
			}
			if code := ExitCode(err); code != ExitUsage || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("exit %d (%v), want %d saying %q", code, err, ExitUsage, tt.want)
			}
		})
	}
}
