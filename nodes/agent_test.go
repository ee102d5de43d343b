package nodes

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/svctrace/kubectl-svctrace/trace/plan"
)

func agentPod(node string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "svctrace-agent-" + node, Namespace: testNS, Labels: map[string]string{LabelName: AgentNameValue}},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}}}
}

func allowExec(f *fleet, allowed bool) {
	f.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		r.Status.Allowed = allowed && ra.Verb == "create" && ra.Resource == "pods" && ra.Subresource == "exec" && ra.Namespace == testNS
		return true, r, nil
	})
}

// runWithAgent runs three nodes: node-000 has a Ready agent, node-001 an
// agent not Ready, node-002 none. It returns the transports, the exec'd
// Pods and the collector Pods created.
func runWithAgent(t *testing.T, allowed bool) (map[string]transport, []string, int) {
	t.Helper()
	f := newFleet(false)
	for _, p := range []*corev1.Pod{agentPod("node-000", true), agentPod("node-001", false)} {
		if err := f.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	allowExec(f, allowed)
	in := fleetInspector(f, 3)
	var mu sync.Mutex
	var execd []string
	in.Exec = func(_ context.Context, ns, pod, container string, cmd []string, stdin []byte) ([]byte, error) {
		mu.Lock()
		defer mu.Unlock()
		zr, err := gzip.NewReader(bytes.NewReader(stdin))
		if err != nil {
			t.Fatalf("the request on stdin is not gzipped: %v", err)
		}
		req, _ := io.ReadAll(zr)
		if container != AgentContainerName || cmd[0] != AgentCollector || !strings.Contains(string(req), `"nodeName":"node-000"`) {
			t.Errorf("exec %s/%s %s %v with %s", ns, pod, container, cmd, req)
		}
		execd = append(execd, pod)
		return []byte("W a library warning\n{\"kind\":\"NodeObservation\"}\n"), nil
	}
	in.transports = map[string]transport{}
	opts := PodSpecOptions{Namespace: testNS, Image: "img", RunID: "ragent", Profile: ProfileNetAdmin}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, v := range in.runAll(ctx, opts, fleetPlan(3)) {
		if v.Observation == nil {
			t.Fatalf("node %s: %s", v.Node, v.Failure)
		}
	}
	return in.transports, execd, f.count("create")
}

func TestAgentUsedWhereReadyAndPermitted(t *testing.T) {
	tr, execd, _ := runWithAgent(t, true)
	if len(execd) != 1 || execd[0] != "svctrace-agent-node-000" {
		t.Errorf("exec'd into %v, want only the Ready agent on node-000", execd)
	}
	want := map[string]string{"node-000": TransportAgent, "node-001": TransportEphemeral, "node-002": TransportEphemeral}
	for n, w := range want {
		if tr[n].name != w {
			t.Errorf("node %s transport %q, want %q", n, tr[n].name, w)
		}
	}
}

func TestAgentNotUsedWithoutExecPermission(t *testing.T) {
	tr, execd, _ := runWithAgent(t, false)
	if len(execd) != 0 {
		t.Errorf("exec'd into %v without the permission", execd)
	}
	if tr["node-000"].name != TransportEphemeral || !strings.Contains(tr["node-000"].note, "pods/exec") {
		t.Errorf("node-000 %+v, want a collector Pod and a note naming pods/exec", tr["node-000"])
	}
}

// agentFleet is n nodes, each with a Ready agent the user may exec into,
// and an inspector whose execs answer an empty observation.
func agentFleet(t *testing.T, n int) (*fleet, *Inspector) {
	t.Helper()
	f := newFleet(false)
	for _, p := range fleetPlan(n) {
		if err := f.Tracker().Add(agentPod(p.Name, true)); err != nil {
			t.Fatal(err)
		}
	}
	allowExec(f, true)
	in := fleetInspector(f, n)
	in.Flags.Image, in.Flags.CollectorNamespace = "img", testNS
	in.Exec = func(context.Context, string, string, string, []string, []byte) ([]byte, error) {
		return []byte(`{"kind":"NodeObservation"}`), nil
	}
	return f, in
}

// TestAgentOnEveryNodeCreatesNoPod: where the agent serves every planned
// node, a trace creates nothing, not even the dry-run Pod of the preflight
// check, and every node reports the agent as its transport.
func TestAgentOnEveryNodeCreatesNoPod(t *testing.T) {
	f, in := agentFleet(t, 3)
	nr, err := in.Inspect(context.Background(), plan.NodePlan{Service: "default/web", Nodes: fleetPlan(3)})
	if err != nil {
		t.Fatal(err)
	}
	// (The access review is answered before the fleet counts it.)
	if c := f.count("create"); c != 0 {
		t.Errorf("%d Pods created, want none", c)
	}
	if c := f.count("watch"); c != 0 {
		t.Errorf("%d watches started for a run without collector Pods, want none", c)
	}
	for _, n := range nr.Collector.Nodes {
		if !n.Inspected || n.Transport != TransportAgent {
			t.Errorf("node %s inspected %t through %q, want the agent", n.Node, n.Inspected, n.Transport)
		}
	}
}

// TestAgentsPrefetched: the agents Prefetch read (while the trace reads the
// Service) are the ones Inspect uses, though the Pods are gone by then:
// they are listed once per inspection, and a second inspection reads them
// again.
func TestAgentsPrefetched(t *testing.T) {
	f, in := agentFleet(t, 2)
	for i := 1; i <= 2; i++ {
		in.Prefetch(context.Background())
		// Once listed, the agent Pods go: only what Prefetch read can
		// still name them.
		for f.count("list") < i {
			time.Sleep(time.Millisecond)
		}
		for _, n := range []string{"node-000", "node-001"} {
			if err := f.Tracker().Delete(podsGVR, testNS, "svctrace-agent-"+n); err != nil {
				t.Fatal(err)
			}
		}
		nr, err := in.Inspect(context.Background(), plan.NodePlan{Service: "default/web", Nodes: fleetPlan(2)})
		if err != nil {
			t.Fatal(err)
		}
		if c := f.count("list"); c != i {
			t.Errorf("inspection %d: %d lists, want the agent Pods listed once per inspection (%d)", i, c, i)
		}
		for _, n := range nr.Collector.Nodes {
			if n.Transport != TransportAgent {
				t.Errorf("inspection %d: node %s through %q, want the agent", i, n.Node, n.Transport)
			}
		}
		for _, n := range []string{"node-000", "node-001"} {
			if err := f.Tracker().Add(agentPod(n, true)); err != nil {
				t.Fatal(err)
			}
		}
	}
}
