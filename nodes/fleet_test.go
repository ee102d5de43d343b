package nodes

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
)

var podsGVR = schema.GroupVersionResource{Version: "v1", Resource: "pods"}

// fleet is a fake clientset with a fake kubelet: every created collector
// Pod is marked Succeeded shortly after (unless hold is set), so Runs
// finish through watch events alone. It counts the requests by verb.
type fleet struct {
	*fake.Clientset
	seq   int32
	hold  bool
	mu    sync.Mutex
	verbs map[string]int
}

func newFleet(hold bool) *fleet {
	f := &fleet{Clientset: fake.NewClientset(), hold: hold, verbs: map[string]int{}}
	f.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		f.mu.Lock()
		f.verbs["watch"]++
		f.mu.Unlock()
		return false, nil, nil
	})
	f.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		p.Name = fmt.Sprintf("%s%d", p.GenerateName, atomic.AddInt32(&f.seq, 1))
		if !f.hold {
			done := p.DeepCopy()
			done.Status = exited(0, "Completed")
			go func() {
				// The tracker adds the Pod after this reactor returns.
				for f.Tracker().Update(podsGVR, done, done.Namespace) != nil {
					time.Sleep(time.Millisecond)
				}
			}()
		}
		return false, nil, nil
	})
	// The fake tracker has no DeleteCollection: delete what the selector
	// matches, as the API server does.
	f.PrependReactor("delete-collection", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		dc := a.(k8stesting.DeleteCollectionAction)
		sel := dc.GetListRestrictions().Labels
		obj, err := f.Tracker().List(podsGVR, schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, dc.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		for _, p := range obj.(*corev1.PodList).Items {
			if sel == nil || sel.Matches(labels.Set(p.Labels)) {
				_ = f.Tracker().Delete(podsGVR, p.Namespace, p.Name)
			}
		}
		return true, nil, nil
	})
	// First in the chain, so it sees the requests the reactors above handle.
	f.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		f.mu.Lock()
		f.verbs[a.GetVerb()]++
		f.mu.Unlock()
		return false, nil, nil
	})
	return f
}

func (f *fleet) count(verb string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.verbs[verb]
}

func fleetPlan(n int) []plan.PlannedNode {
	var out []plan.PlannedNode
	for i := range n {
		name := fmt.Sprintf("node-%03d", i)
		out = append(out, plan.PlannedNode{Name: name, Request: &collectorapi.Request{Kind: collectorapi.RequestKind, NodeName: name}})
	}
	return out
}

func fleetInspector(f *fleet, parallel int) *Inspector {
	return &Inspector{Client: f, Flags: Flags{MaxParallel: parallel, StartTimeout: 10 * time.Second},
		runner: func(r *Runner, ctx context.Context, node string, req []byte) (*Output, error) {
			rr := *r
			rr.ReadLog = func(context.Context, string, string) ([]byte, error) {
				return []byte(`{"kind":"NodeObservation"}`), nil
			}
			// A poll every hour: only a watch event can finish the Run in time.
			rr.PollInterval = time.Hour
			return rr.Run(ctx, node, req)
		}}
}

// TestRunAllFollowsEveryPodOverOneWatch: 200 collectors are followed by one
// watch for the whole run, never read with a GET, and their Pods are
// deleted with one DeleteCollection at the end, not one delete each.
func TestRunAllFollowsEveryPodOverOneWatch(t *testing.T) {
	f := newFleet(false)
	in := fleetInspector(f, 50)
	opts := PodSpecOptions{Namespace: testNS, Image: "img", RunID: "rfleet", Profile: ProfileNetAdmin}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	views := in.runAll(ctx, opts, fleetPlan(200))
	for _, v := range views {
		if v.Observation == nil {
			t.Fatalf("node %s: %s", v.Node, v.Failure)
		}
	}
	if w := f.count("watch"); w != 1 {
		t.Errorf("%d watches for 200 collector Pods, want one for the run", w)
	}
	if g := f.count("get"); g != 0 {
		t.Errorf("%d GETs of collector Pods, want none: the run's watch reports every change", g)
	}
	if c, d, dc := f.count("create"), f.count("delete"), f.count("delete-collection"); c != 200 || d != 0 || dc != 1 {
		t.Errorf("%d creates, %d deletes and %d DeleteCollection, want 200, 0 and 1", c, d, dc)
	}
	list, err := f.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d collector Pods left after the run", len(list.Items))
	}
}

// TestRunAllDeletesOneByOneWithoutDeleteCollection: a role that may delete
// Pods but not collections still leaves nothing behind.
func TestRunAllDeletesOneByOneWithoutDeleteCollection(t *testing.T) {
	f := newFleet(false)
	f.PrependReactor("delete-collection", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(podsGVR.GroupResource(), "", fmt.Errorf("no deletecollection"))
	})
	in := fleetInspector(f, 10)
	opts := PodSpecOptions{Namespace: testNS, Image: "img", RunID: "rnodc", Profile: ProfileNetAdmin}
	views := in.runAll(context.Background(), opts, fleetPlan(20))
	for _, v := range views {
		if v.Observation == nil {
			t.Fatalf("node %s: %s", v.Node, v.Failure)
		}
	}
	list, err := f.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 || f.count("delete") != 20 {
		t.Errorf("%d Pods left after %d deletes, want 0 after 20", len(list.Items), f.count("delete"))
	}
}

// TestRunAllInterruptedDeletesTheRunInOneRequest: a Ctrl-C while 300
// collectors run leaves no Pod behind, with one DeleteCollection by the run
// label instead of a delete per Pod.
func TestRunAllInterruptedDeletesTheRunInOneRequest(t *testing.T) {
	f := newFleet(true)
	in := fleetInspector(f, 300)
	opts := PodSpecOptions{Namespace: testNS, Image: "img", RunID: "rstop", Profile: ProfileNetAdmin}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for f.count("create") < 300 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	views := in.runAll(ctx, opts, fleetPlan(300))
	for _, v := range views {
		if v.Observation != nil {
			t.Fatalf("node %s observed after the interruption", v.Node)
		}
	}
	list, err := f.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d collector Pods left after the interruption", len(list.Items))
	}
	if dc, d := f.count("delete-collection"), f.count("delete"); dc != 1 || d != 0 {
		t.Errorf("%d DeleteCollection and %d deletes, want 1 and 0", dc, d)
	}
}

// TestRunAllBoundsParallelism: never more collectors running at once than
// --max-parallel.
func TestRunAllBoundsParallelism(t *testing.T) {
	f := newFleet(false)
	var live, peak int32
	in := fleetInspector(f, 7)
	run := in.runner
	in.runner = func(r *Runner, ctx context.Context, node string, req []byte) (*Output, error) {
		if n := atomic.AddInt32(&live, 1); n > atomic.LoadInt32(&peak) {
			atomic.StoreInt32(&peak, n)
		}
		defer atomic.AddInt32(&live, -1)
		return run(r, ctx, node, req)
	}
	opts := PodSpecOptions{Namespace: testNS, Image: "img", RunID: "rpar", Profile: ProfileNetAdmin}
	in.runAll(context.Background(), opts, fleetPlan(60))
	if p := atomic.LoadInt32(&peak); p > 7 || p < 2 {
		t.Errorf("peak of %d collectors at once, want at most --max-parallel 7 (and some parallelism)", p)
	}
}
