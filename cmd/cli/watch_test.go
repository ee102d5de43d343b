package cli

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
)

// syncBuffer is a bytes.Buffer the watch goroutine writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// countingInspector reports every planned node as inspected with no
// observation, and counts the inspections.
type countingInspector struct{ calls atomic.Int32 }

func (c *countingInspector) Inspect(context.Context, plan.NodePlan) (*plan.NodeReport, error) {
	c.calls.Add(1)
	return &plan.NodeReport{Failure: "no collectors in unit tests"}, nil
}

func waitFor(t *testing.T, what string, cond func() bool, show ...*syncBuffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			var shown []string
			for _, b := range show {
				shown = append(shown, b.String())
			}
			t.Fatalf("timed out waiting for %s\n%s", what, strings.Join(shown, "\n---\n"))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchPrintsOnlyChanges: the first trace in full; a Pod and its
// endpoint turning not ready print the endpoint's timeline line, the new
// findings and the verdict moving; an update that changes nothing prints
// nothing; the nodes are inspected once within the interval; Ctrl-C (the
// context) ends it with exit 0.
func TestWatchPrintsOnlyChanges(t *testing.T) {
	client := fake.NewClientset(objects(true)...)
	insp := &countingInspector{}
	out, errOut := &syncBuffer{}, &syncBuffer{}
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
	f := NewTraceFlags()
	f.deps.getter = testGetter()
	f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil }
	f.deps.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	f.deps.getenv = func(string) string { return "" }
	f.deps.inspector = insp
	cmd := newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3"}, f)
	cmd.SetArgs([]string{"web", "--watch", "--reinspect-interval", "1h"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()

	waitFor(t, "the first trace", func() bool { return strings.Contains(errOut.String(), "watching default/web") })
	waitFor(t, "three watches", func() bool {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "watch" {
				n++
			}
		}
		return n >= 3
	})
	first := out.String()
	if !strings.Contains(first, "default/web") || strings.Contains(first, "→ not ready") {
		t.Fatalf("first trace:\n%s", first)
	}

	// An update that changes nothing the trace reads.
	sl, _ := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "web-abc", metav1.GetOptions{})
	sl.Annotations = map[string]string{"touched": "1"}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * watchSettle)

	// The Pod goes not ready, then its endpoint.
	pod, _ := client.CoreV1().Pods("default").Get(ctx, "web-1", metav1.GetOptions{})
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if _, err := client.CoreV1().Pods("default").UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	sl, _ = client.DiscoveryV1().EndpointSlices("default").Get(ctx, "web-abc", metav1.GetOptions{})
	sl.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ptr(false), Serving: ptr(false)}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the endpoint's change", func() bool { return strings.Contains(out.String(), "ready -> not ready") }, out, errOut)
	time.Sleep(2 * watchSettle)
	changes := strings.TrimPrefix(out.String(), first)
	for _, want := range []string{"03:04:05 endpoint 10.244.1.5 (pod web-1, node-a) ready -> not ready", "+ [FAIL] endpoints EPS003", "verdict UNKNOWN -> [FAIL] FAIL"} {
		if !strings.Contains(changes, want) {
			t.Errorf("changes lack %q:\n%s", want, changes)
		}
	}
	if n := strings.Count(changes, "endpoint 10.244.1.5"); n != 1 {
		t.Errorf("the endpoint's change printed %d times:\n%s", n, changes)
	}
	if n := insp.calls.Load(); n != 1 {
		t.Errorf("%d node inspections within one --reinspect-interval, want 1", n)
	}

	cancel()
	select {
	case err := <-done:
		if code := ExitCode(err); code != ExitOK {
			t.Errorf("Ctrl-C: exit %d (%v), want 0", code, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the watch did not stop on Ctrl-C")
	}
}

// TestWatchReinspectsAfterTheInterval: a change within the interval is
// judged on the last node report, and the nodes are inspected again once
// the interval is over.
func TestWatchReinspectsAfterTheInterval(t *testing.T) {
	insp := &countingInspector{}
	_, out, errOut, stop := startWatch(t, insp, 500*time.Millisecond)
	waitFor(t, "the re-inspection after the watches' first events", func() bool { return insp.calls.Load() >= 2 })
	stop()
	if n := insp.calls.Load(); n > 3 {
		t.Errorf("%d inspections in about one interval", n)
	}
	if strings.Contains(out.String(), "trace failed") || strings.Contains(errOut.String(), "trace failed") {
		t.Errorf("a re-trace failed: %s", errOut)
	}
}

func TestWatchUsage(t *testing.T) {
	for _, args := range [][]string{
		{"web", "--watch", "--save", "x"},
		{"web", "--watch", "--reinspect-interval", "0s"},
	} {
		_, _, run := testCmd(objects(true))
		if code := ExitCode(run(args...)); code != ExitUsage {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// gatedInspector answers its first read at once and every later one only
// when its gate opens, as a slow node read does.
type gatedInspector struct {
	calls atomic.Int32
	gate  chan struct{}
}

func (g *gatedInspector) Inspect(ctx context.Context, _ plan.NodePlan) (*plan.NodeReport, error) {
	n := g.calls.Add(1)
	if n > 1 {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if n == 1 {
		return &plan.NodeReport{Failure: "node read 1"}, nil
	}
	return &plan.NodeReport{Nodes: []plan.NodeView{{Node: "node-a", Roles: []string{"endpoints"}, Failure: fmt.Sprintf("node read %d", n)}}}, nil
}

// TestWatchPrintsWhileNodesAreRead: an endpoint change prints at once
// while a node read is under way, and the read's result joins afterwards
// (judged against the newer API state: the endpoint stays not ready).
func TestWatchPrintsWhileNodesAreRead(t *testing.T) {
	insp := &gatedInspector{gate: make(chan struct{})}
	client, out, errOut, stop := startWatch(t, insp, 10*time.Millisecond)
	ctx := context.Background()
	if !strings.Contains(out.String(), "node read 1") {
		t.Fatalf("the first trace lacks its node read:\n%s", out)
	}
	waitFor(t, "a second node read under way", func() bool { return insp.calls.Load() >= 2 }, out, errOut)

	sl, _ := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "web-abc", metav1.GetOptions{})
	sl.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Ready: ptr(false), Serving: ptr(false)}
	if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the endpoint's change while the nodes are read", func() bool { return strings.Contains(out.String(), "EPS003") }, out, errOut)
	if n := insp.calls.Load(); n != 2 {
		t.Errorf("%d node reads started while one was under way, want 2 in all", n)
	}
	before := out.String()
	close(insp.gate)
	waitFor(t, "the node read's result", func() bool { return strings.Contains(strings.TrimPrefix(out.String(), before), "node read 2") }, out, errOut)
	if joined := strings.TrimPrefix(out.String(), before); strings.Contains(joined, "10.244.1.5") || strings.Contains(joined, "EPS003") {
		t.Errorf("the node result was judged against the API as it was before the change:\n%s", joined)
	}
	stop()
}

// startWatch runs a watch of default/web on a fake clientset with insp
// reading the nodes at most every interval, and waits for its first
// trace; stop ends it as Ctrl-C does and fails the test unless it ends
// cleanly.
func startWatch(t *testing.T, insp plan.NodeInspector, interval time.Duration) (client *fake.Clientset, out, errOut *syncBuffer, stop func()) {
	t.Helper()
	client = fake.NewClientset(objects(true)...)
	out, errOut = &syncBuffer{}, &syncBuffer{}
	o := &TraceOptions{Client: client, Namespace: "default", ServiceName: "web", Timeout: time.Minute,
		Trace:     trace.Options{Now: time.Now, Inspector: insp},
		IOStreams: genericiooptions.IOStreams{Out: out, ErrOut: errOut}}
	w := &traceWatch{o: o, interval: interval, settle: 10 * time.Millisecond, clock: time.Now}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	done := make(chan error, 1)
	go func() { done <- w.run(ctx) }()
	waitFor(t, "the first trace", func() bool { return strings.Contains(errOut.String(), "watching") }, out, errOut)
	return client, out, errOut, func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the watch did not stop when its context ended")
		}
	}
}
