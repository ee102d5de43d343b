package nodes

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

const testNS = "svctrace-system"

// fakeCluster is a fake clientset whose collector Pods go through the
// statuses a test scripts, one per status read.
type fakeCluster struct {
	*fake.Clientset
	mu       sync.Mutex
	statuses []corev1.PodStatus
	reads    int
	seq      int32
	created  []*corev1.Pod
	// watcher, when set, is what a watch on pods returns.
	watcher *watch.FakeWatcher
	watches int
}

func newFakeCluster(t *testing.T, statuses ...corev1.PodStatus) *fakeCluster {
	t.Helper()
	fc := &fakeCluster{Clientset: fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}}), statuses: statuses}
	// The fake tracker does not honour generateName.
	fc.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if p.Name == "" {
			p.Name = fmt.Sprintf("%s%d", p.GenerateName, atomic.AddInt32(&fc.seq, 1))
		}
		fc.mu.Lock()
		fc.created = append(fc.created, p.DeepCopy())
		fc.mu.Unlock()
		return false, nil, nil
	})
	// Watching is forbidden unless a test scripts a watcher: the polling
	// path is what the scripted statuses exercise.
	fc.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		fc.mu.Lock()
		defer fc.mu.Unlock()
		if fc.watcher != nil {
			fc.watches++
			return true, fc.watcher, nil
		}
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no watch"))
	})
	fc.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.GetAction).GetName()
		obj, err := fc.Tracker().Get(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, testNS, name)
		if err != nil {
			return true, nil, err
		}
		p := obj.(*corev1.Pod).DeepCopy()
		fc.mu.Lock()
		i := fc.reads
		if i >= len(fc.statuses) {
			i = len(fc.statuses) - 1
		}
		fc.reads++
		fc.mu.Unlock()
		if i >= 0 {
			p.Status = fc.statuses[i]
		}
		return true, p, nil
	})
	return fc
}

func (fc *fakeCluster) remainingPods(t *testing.T) []string {
	t.Helper()
	list, err := fc.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func newRunner(fc *fakeCluster, log string) *Runner {
	return &Runner{
		Client:         fc,
		Options:        PodSpecOptions{Namespace: testNS, Image: "svctrace.local/collector:dev", RunID: "run1", Service: "default/web"},
		PollInterval:   time.Millisecond,
		StartTimeout:   200 * time.Millisecond,
		CleanupTimeout: time.Second,
		ReadLog: func(context.Context, string, string) ([]byte, error) {
			return []byte(log), nil
		},
	}
}

func waiting(reason, msg string) corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: ContainerName, Image: "svctrace.local/collector:dev",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}}}
}

func running() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}
}

func exited(code int32, reason string) corev1.PodStatus {
	phase := corev1.PodSucceeded
	if code != 0 {
		phase = corev1.PodFailed
	}
	return corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}}}
}

func TestRunSuccessReturnsObservationAndDeletesPod(t *testing.T) {
	fc := newFakeCluster(t, corev1.PodStatus{Phase: corev1.PodPending}, waiting("ContainerCreating", ""), running(), exited(0, "Completed"))
	r := newRunner(fc, "W1129 some library warning\n{\"kind\":\"NodeObservation\"}\n")
	var stages []Stage
	var mu sync.Mutex
	r.Progress = func(_ string, s Stage, _ string) { mu.Lock(); stages = append(stages, s); mu.Unlock() }

	out, err := r.Run(context.Background(), "node1", []byte(`{"kind":"CollectRequest"}`))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if string(out.Log) != `{"kind":"NodeObservation"}` {
		t.Errorf("observation = %q", out.Log)
	}
	if left := fc.remainingPods(t); len(left) != 0 {
		t.Errorf("collector Pods left behind: %v", left)
	}
	want := []Stage{StageCreating, StageScheduling, StagePulling, StageCollecting, StageReading, StageDone, StageDeleted}
	if fmt.Sprint(stages) != fmt.Sprint(want) {
		t.Errorf("stages = %v, want %v", stages, want)
	}
	p := fc.created[0]
	if p.Spec.NodeName != "node1" || !p.Spec.HostNetwork || *p.Spec.AutomountServiceAccountToken {
		t.Errorf("pod spec not pinned/hostNetwork/no token: %+v", p.Spec)
	}
	if got := p.Spec.Containers[0].Args[1]; got != `{"kind":"CollectRequest"}` {
		t.Errorf("request arg = %q", got)
	}
}

func TestRunFailuresAreSpecificAndDeletePod(t *testing.T) {
	tests := []struct {
		name     string
		statuses []corev1.PodStatus
		kind     FailureKind
		contains string
	}{
		{"image never pull", []corev1.PodStatus{waiting("ErrImageNeverPull", `Container image "x" is not present with pull policy of Never`)}, FailImage, "ErrImageNeverPull"},
		{"image pull backoff", []corev1.PodStatus{waiting("ContainerCreating", ""), waiting("ImagePullBackOff", "Back-off pulling image")}, FailImage, "Back-off"},
		{"oom", []corev1.PodStatus{running(), exited(137, "OOMKilled")}, FailOOM, "OOM"},
		{"crash", []corev1.PodStatus{running(), exited(2, "Error")}, FailCrash, "code 2"},
		{"deadline", []corev1.PodStatus{running(), {Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "Pod was active on the node longer than the specified deadline"}}, FailDeadline, "deadline"},
		{"node never starts it", []corev1.PodStatus{{Phase: corev1.PodPending}}, FailNotStarted, "not started after 200ms (waiting for the kubelet on the node to start the Pod); --collector-start-timeout raises the limit"},
		{"kubelet rejects", []corev1.PodStatus{{Phase: corev1.PodFailed, Reason: "OutOfcpu", Message: "Node didn't have enough resource"}}, FailRejected, "OutOfcpu"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := newFakeCluster(t, tt.statuses...)
			_, err := newRunner(fc, "").Run(context.Background(), "node1", []byte(`{}`))
			var f *Failure
			if !errors.As(err, &f) {
				t.Fatalf("err = %v, want a *Failure", err)
			}
			if f.Kind != tt.kind || !strings.Contains(err.Error(), tt.contains) || f.Node != "node1" {
				t.Errorf("failure = %s (kind %s), want kind %s containing %q", err, f.Kind, tt.kind, tt.contains)
			}
			if left := fc.remainingPods(t); len(left) != 0 {
				t.Errorf("collector Pods left behind: %v", left)
			}
		})
	}
}

func TestRunCanceledAtEachStageDeletesPod(t *testing.T) {
	for _, st := range []corev1.PodStatus{{Phase: corev1.PodPending}, waiting("ContainerCreating", ""), running()} {
		fc := newFakeCluster(t, st)
		r := newRunner(fc, "")
		r.StartTimeout = time.Hour
		ctx, cancel := context.WithCancel(context.Background())
		r.Progress = func(_ string, s Stage, _ string) {
			if s == StageScheduling || s == StagePulling || s == StageCollecting {
				go func() { time.Sleep(5 * time.Millisecond); cancel() }()
			}
		}
		_, err := r.Run(ctx, "node1", []byte(`{}`))
		var f *Failure
		if !errors.As(err, &f) || f.Kind != FailCanceled {
			t.Fatalf("err = %v, want Canceled", err)
		}
		if left := fc.remainingPods(t); len(left) != 0 {
			t.Errorf("collector Pods left behind after cancel: %v", left)
		}
		cancel()
	}
}

func TestRunForbiddenCreateNamesPermission(t *testing.T) {
	fc := newFakeCluster(t)
	fc.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(`User "u" cannot create resource "pods" in API group "" in the namespace "svctrace-system"`))
	})
	_, err := newRunner(fc, "").Run(context.Background(), "node1", []byte(`{}`))
	var f *Failure
	if !errors.As(err, &f) || f.Kind != FailForbidden || !strings.Contains(err.Error(), `cannot create resource "pods"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestExtractJSON(t *testing.T) {
	tests := []struct{ in, want, errPart string }{
		{`{"a":1}`, `{"a":1}`, ""},
		{"warning\n{\"a\":1}\n", `{"a":1}`, ""},
		{"{\n  \"a\": 1\n}\n", "{\n  \"a\": 1\n}", ""},
		{"", "", "printed nothing"},
		{"panic: boom", "", "panic: boom"},
	}
	for _, tt := range tests {
		got, err := ExtractJSON([]byte(tt.in))
		if tt.errPart != "" {
			if err == nil || !strings.Contains(err.Error(), tt.errPart) {
				t.Errorf("ExtractJSON(%q) err = %v, want %q", tt.in, err, tt.errPart)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("ExtractJSON(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestPreflight(t *testing.T) {
	opts := PodSpecOptions{Namespace: testNS, Image: "img"}
	t.Run("privileged namespace passes", func(t *testing.T) {
		c := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{PodSecurityEnforceLabel: "privileged"}}})
		if err := Preflight(context.Background(), c, opts, "node1"); err != nil {
			t.Fatal(err)
		}
		var dry bool
		for _, a := range c.Actions() {
			if ca, ok := a.(k8stesting.CreateActionImpl); ok {
				if len(ca.CreateOptions.DryRun) != 1 || ca.CreateOptions.DryRun[0] != metav1.DryRunAll {
					t.Errorf("preflight create without dryRun=All: %+v", ca.CreateOptions)
				}
				dry = true
			}
		}
		if !dry {
			t.Errorf("preflight did not dry-run the collector Pod")
		}
	})
	t.Run("baseline namespace is refused before creating", func(t *testing.T) {
		c := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{PodSecurityEnforceLabel: "baseline"}}})
		err := Preflight(context.Background(), c, opts, "node1")
		var pe *PreflightError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), `"baseline"`) || !strings.Contains(err.Error(), "kubectl label namespace svctrace-system pod-security.kubernetes.io/enforce=privileged") {
			t.Fatalf("err = %v", err)
		}
		for _, a := range c.Actions() {
			if a.GetVerb() == "create" {
				t.Errorf("created something: %v", a)
			}
		}
	})
	t.Run("cluster default PSA seen through the dry run", func(t *testing.T) {
		c := fake.NewClientset(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS}})
		c.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New(`violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`))
		})
		err := Preflight(context.Background(), c, opts, "node1")
		var pe *PreflightError
		if !errors.As(err, &pe) || !strings.Contains(err.Error(), "hostNetwork=true") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("missing namespace", func(t *testing.T) {
		err := Preflight(context.Background(), fake.NewClientset(), opts, "node1")
		if err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestCleanupDeletesOnlyCollectorPods(t *testing.T) {
	mk := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: labels}}
	}
	c := fake.NewClientset(
		mk("svctrace-collector-a", map[string]string{LabelName: NameValue, LabelManagedBy: ManagedByValue}),
		mk("svctrace-collector-b", map[string]string{LabelName: NameValue, LabelManagedBy: ManagedByValue}),
		mk("someone-else", map[string]string{LabelName: "web"}),
	)
	deleted, err := Cleanup(context.Background(), c, testNS)
	if err != nil || len(deleted) != 2 {
		t.Fatalf("Cleanup = %v, %v", deleted, err)
	}
	left, _ := c.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if len(left.Items) != 1 || left.Items[0].Name != "someone-else" {
		t.Errorf("left = %v", left.Items)
	}
}

func TestNewPodLeastPrivilege(t *testing.T) {
	p, err := NewPod("n", []byte(`{}`), PodSpecOptions{Namespace: testNS, Image: "i"})
	if err != nil {
		t.Fatal(err)
	}
	sc := p.Spec.Containers[0].SecurityContext
	if sc.Privileged != nil || fmt.Sprint(sc.Capabilities.Add) != "[NET_ADMIN NET_RAW]" || fmt.Sprint(sc.Capabilities.Drop) != "[ALL]" || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("default profile not least privilege: %+v", sc)
	}
	if !p.Spec.HostNetwork || !p.Spec.HostPID || p.Spec.HostIPC {
		t.Errorf("want the node's network and PID namespaces (sockets of endpoint Pods), not its IPC: hostNetwork=%v hostPID=%v hostIPC=%v",
			p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC)
	}
	if sc.Capabilities != nil && slices.ContainsFunc(sc.Capabilities.Add, func(c corev1.Capability) bool { return c == "SYS_PTRACE" || c == "SYS_ADMIN" }) {
		t.Errorf("hostPID must not bring SYS_PTRACE/SYS_ADMIN along: %v", sc.Capabilities.Add)
	}
	if len(p.Spec.Tolerations) != 1 || p.Spec.Tolerations[0].Operator != corev1.TolerationOpExists {
		t.Errorf("does not tolerate every taint: %+v", p.Spec.Tolerations)
	}
	pp, _ := NewPod("n", []byte(`{}`), PodSpecOptions{Namespace: testNS, Image: "i", Profile: ProfilePrivileged})
	if !*pp.Spec.Containers[0].SecurityContext.Privileged {
		t.Errorf("privileged profile not privileged")
	}
	for _, prof := range []Profile{ProfileNetAdmin, ProfileBPF, ProfileNetns} {
		p, _ := NewPod("n", []byte(`{}`), PodSpecOptions{Namespace: testNS, Image: "i", Profile: prof})
		if sp := p.Spec.Containers[0].SecurityContext.SeccompProfile; sp == nil || sp.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("profile %s: seccomp %+v, want the runtime's default filter", prof, sp)
		}
	}
	for _, prof := range []Profile{ProfileBPF, ProfilePrivileged} {
		if p, _ := NewPod("n", []byte(`{}`), PodSpecOptions{Namespace: testNS, Image: "i", Profile: prof}); !p.Spec.HostPID {
			t.Errorf("profile %s without hostPID", prof)
		}
	}
}

// TestRunLargeAndOversizedRequests: a request over one argument's 128 KiB
// travels gzipped in --request-gz chunks; one no Pod could carry fails
// before anything is created.
func TestRunLargeAndOversizedRequests(t *testing.T) {
	var big strings.Builder
	big.WriteString(`{"kind":"CollectRequest","endpoints":[`)
	for i := range 6000 {
		if i > 0 {
			big.WriteByte(',')
		}
		fmt.Fprintf(&big, `{"ip":"10.%d.%d.%d","ready":true,"nodeName":"node-%02d"}`, 1+i/65536, (i/256)%256, i%256, i%50)
	}
	big.WriteString(`]}`)
	fc := newFakeCluster(t, running(), exited(0, "Completed"))
	if _, err := newRunner(fc, `{"kind":"NodeObservation"}`).Run(context.Background(), "node1", []byte(big.String())); err != nil {
		t.Fatal(err)
	}
	args := fc.created[0].Spec.Containers[0].Args
	var chunks []string
	for i := 0; i+1 < len(args); i += 2 {
		if args[i] != "--request-gz" || len(args[i+1]) >= 128<<10 {
			t.Fatalf("arg %d: %q (%d bytes)", i, args[i], len(args[i+1]))
		}
		chunks = append(chunks, args[i+1])
	}
	if got, err := collectorapi.DecodeRequestChunks(chunks); err != nil || string(got) != big.String() {
		t.Fatalf("request does not survive the Pod's arguments: %v", err)
	}

	noise := make([]byte, 3*collectorapi.RequestArgsMax/2)
	x := uint32(7)
	for i := range noise {
		x = x*1664525 + 1013904223
		noise[i] = byte(x >> 24)
	}
	fc = newFakeCluster(t, running())
	_, err := newRunner(fc, "").Run(context.Background(), "node1", noise)
	var f *Failure
	if !errors.As(err, &f) || f.Kind != FailCreate || !strings.Contains(f.Message, "--port") {
		t.Fatalf("oversized request: %v", err)
	}
	if len(fc.created) != 0 {
		t.Fatal("a Pod was created for a request it cannot carry")
	}
}

// TestRunFollowsAWatch: with watch allowed, the Pod's states arrive as
// events (no status reads); a Pod deleted under it is reported.
func TestRunFollowsAWatch(t *testing.T) {
	fc := newFakeCluster(t, running())
	fc.watcher = watch.NewFakeWithChanSize(8, false)
	pod := func(name string, st corev1.PodStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS}, Status: st}
	}
	fc.watcher.Modify(pod("svctrace-collector-1", waiting("ContainerCreating", "")))
	fc.watcher.Modify(pod("someone-else", exited(1, "Error"))) // another Pod: ignored
	fc.watcher.Modify(pod("svctrace-collector-1", running()))
	fc.watcher.Modify(pod("svctrace-collector-1", exited(0, "Completed")))
	r := newRunner(fc, `{"kind":"NodeObservation"}`)
	r.PollInterval = time.Hour // a status read would never come in time
	out, err := r.Run(context.Background(), "node1", []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Log) != `{"kind":"NodeObservation"}` || fc.watches != 1 || fc.reads != 0 {
		t.Fatalf("log %q, watches %d, status reads %d", out.Log, fc.watches, fc.reads)
	}

	fc = newFakeCluster(t, running())
	fc.watcher = watch.NewFakeWithChanSize(8, false)
	fc.watcher.Delete(pod("svctrace-collector-1", running()))
	_, err = newRunner(fc, "").Run(context.Background(), "node1", []byte(`{}`))
	var f *Failure
	if !errors.As(err, &f) || f.Kind != FailCrash || !strings.Contains(f.Message, "disappeared") {
		t.Fatalf("deleted Pod: %v", err)
	}

	// A stream that ends falls back to polling.
	fc = newFakeCluster(t, running(), exited(0, "Completed"))
	fc.watcher = watch.NewFakeWithChanSize(8, false)
	fc.watcher.Stop()
	if _, err := newRunner(fc, `{"kind":"NodeObservation"}`).Run(context.Background(), "node1", []byte(`{}`)); err != nil || fc.reads == 0 {
		t.Fatalf("after the stream ended: %v, status reads %d", err, fc.reads)
	}
}
