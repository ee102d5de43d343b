package nodes

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func readyNode(name string, ready bool) *corev1.Node {
	st := corev1.ConditionTrue
	if !ready {
		st = corev1.ConditionUnknown
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st, Reason: "NodeStatusUnknown"}}}}
}

func webInput() *input.Input {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.50", ClusterIPs: []string{"10.96.0.50"}, Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	sl := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-1"}, AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}},
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.1.5"}, NodeName: ptr.To("n1")},
			{Addresses: []string{"10.244.3.5"}, NodeName: ptr.To("n3")},
		}}
	return &input.Input{Namespace: "default", Name: "web", Service: svc, Slices: []discoveryv1.EndpointSlice{sl},
		Nodes: map[string]*corev1.Node{"n1": readyNode("n1", true), "n2": readyNode("n2", true), "n3": readyNode("n3", false)}, NodesListed: true}
}

// inspectTrace plans the trace's nodes as trace.Run does (reading the
// nodes the plan needs through the inspector's client), runs the inspector
// and assembles the result.
func inspectTrace(t *testing.T, in *Inspector, inp *input.Input) *report.ServiceTrace {
	t.Helper()
	ctx := context.Background()
	sel := in.Flags.Selection()
	_ = plan.ReadNodes(ctx, in.Client, inp, sel, nil)
	nr, err := in.Inspect(ctx, plan.PlanNodes(inp, sel, nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	return trace.Assemble(inp, nr, trace.Options{Inspector: in})
}

func privilegedNS() *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: DefaultCollectorNamespace, Labels: map[string]string{PodSecurityEnforceLabel: "privileged"}}}
}

func TestInspectChoosesEndpointNodesAndReportsNotReady(t *testing.T) {
	sample, err := os.ReadFile("../collectors/testdata/observations/real-kube-proxy-iptables-netns.json")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []string
	var requests []collectorapi.Request
	in := &Inspector{Client: fake.NewClientset(privilegedNS()), Flags: *NewFlags("img"),
		runner: func(_ *Runner, _ context.Context, node string, req []byte) (*Output, error) {
			var r collectorapi.Request
			if err := json.Unmarshal(req, &r); err != nil {
				t.Errorf("request: %v", err)
			}
			mu.Lock()
			ran = append(ran, node)
			requests = append(requests, r)
			mu.Unlock()
			return &Output{Node: node, Log: sample}, nil
		}}
	tr := inspectTrace(t, in, webInput())
	sort.Strings(ran)
	if strings.Join(ran, ",") != "n1" {
		t.Errorf("collectors ran on %v, want only n1 (n3 is NotReady, n2 has no endpoint)", ran)
	}
	if len(requests) == 1 && (requests[0].NodeName != "n1" || len(requests[0].Endpoints) != 2 || requests[0].Service.Name != "web") {
		t.Errorf("request = %+v", requests[0])
	}
	var n3 *report.Check
	for i, c := range tr.Layer(report.LayerDatapath).Checks {
		if c.Code == report.CodeNodeCollectorFailed && c.Node == "n3" {
			n3 = &tr.Layer(report.LayerDatapath).Checks[i]
		}
	}
	if n3 == nil || !strings.Contains(n3.Message, "NotReady") {
		t.Errorf("n3 not reported as NotReady: %+v", tr.Layer(report.LayerDatapath).Checks)
	}
	if c := tr.Metadata.Collector; c == nil || c.Profile != "netadmin" || len(c.Nodes) != 2 {
		t.Errorf("collector metadata = %+v", c)
	}
}

func TestInspectFlagsSelectNodes(t *testing.T) {
	for _, tt := range []struct {
		flags func(*Flags)
		want  string
	}{
		{func(f *Flags) { f.AllNodes = true }, "n1,n2"},
		{func(f *Flags) { f.Nodes = []string{"n2"} }, "n2"},
	} {
		var mu sync.Mutex
		var ran []string
		f := NewFlags("img")
		tt.flags(f)
		in := &Inspector{Client: fake.NewClientset(privilegedNS()), Flags: *f,
			runner: func(_ *Runner, _ context.Context, node string, _ []byte) (*Output, error) {
				mu.Lock()
				ran = append(ran, node)
				mu.Unlock()
				return nil, &Failure{Kind: FailImage, Node: node, Message: "ErrImageNeverPull"}
			}}
		tr := inspectTrace(t, in, webInput())
		sort.Strings(ran)
		if got := strings.Join(ran, ","); got != tt.want {
			t.Errorf("ran on %s, want %s", got, tt.want)
		}
		for _, c := range tr.Layer(report.LayerDatapath).Checks {
			if c.Code == report.CodeNodeCollectorFailed && !strings.Contains(c.Message, "could not pull its image") && c.Node != "n3" {
				t.Errorf("image failure not specific: %s", c.Message)
			}
		}
	}
}

// TestInspectPreflightFailureIsReported: a collector namespace that rejects
// the Pod makes the node layers unknown with the fix; the API layers stand.
func TestInspectPreflightFailureIsReported(t *testing.T) {
	ns := privilegedNS()
	ns.Labels[PodSecurityEnforceLabel] = "restricted"
	in := &Inspector{Client: fake.NewClientset(ns), Flags: *NewFlags("img")}
	tr := inspectTrace(t, in, webInput())
	for _, l := range report.NodeLayers {
		if got := tr.Layer(l); got.Status != report.StatusUnknown || !strings.Contains(got.Reason, "restricted") {
			t.Errorf("layer %s: %s %q, want unknown naming the PSA level", l, got.Status, got.Reason)
		}
	}
	if got := tr.Layer(report.LayerService); got.Status == report.StatusUnknown || got.Status == report.StatusSkipped {
		t.Errorf("service layer %s: the API layers must still be judged", got.Status)
	}
}

// TestInspectForbiddenNamesTheRule: without create on pods in the
// collector namespace the report names the verb, resource and namespace.
func TestInspectForbiddenNamesTheRule(t *testing.T) {
	client := fake.NewClientset(privilegedNS())
	client.PrependReactor("create", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("RBAC: access denied"))
	})
	in := &Inspector{Client: client, Flags: *NewFlags("img")}
	tr := inspectTrace(t, in, webInput())
	want := "missing permission: verb create on resource pods (API group \"\") in namespace svctrace-system"
	if got := tr.Layer(report.LayerDatapath).Reason; !strings.Contains(got, want) {
		t.Fatalf("datapath reason %q, want it to contain %q", got, want)
	}
}

func TestFlagsValidate(t *testing.T) {
	for _, tt := range []struct {
		mut  func(*Flags)
		want string
	}{
		{func(f *Flags) { f.AllNodes, f.Nodes = true, []string{"a"} }, "mutually exclusive"},
		{func(f *Flags) { f.MaxParallel = 0 }, "max-parallel"},
		{func(f *Flags) { f.From = "deploy/x" }, "--from"},
		{func(f *Flags) { f.From = "pod/x" }, ""},
	} {
		f := NewFlags("img")
		tt.mut(f)
		err := f.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate = %v, want %q", err, tt.want)
		}
	}
}

func TestResolveFrom(t *testing.T) {
	c := fake.NewClientset(
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "client"}, Spec: corev1.PodSpec{NodeName: "n2"}, Status: corev1.PodStatus{PodIP: "10.244.2.9"}},
		readyNode("n1", true))
	pc, err := ResolveFrom(context.Background(), c, "default", "pod/shop/client")
	if err != nil || pc.NodeName != "n2" || pc.Pod == nil {
		t.Fatalf("pod: %+v %v", pc, err)
	}
	if _, err := ResolveFrom(context.Background(), c, "default", "pod/client"); err == nil || !strings.Contains(err.Error(), "not found in namespace default") {
		t.Errorf("missing pod: %v", err)
	}
	if pc, err := ResolveFrom(context.Background(), c, "default", "node/n1"); err != nil || pc.Node == nil {
		t.Errorf("node: %+v %v", pc, err)
	}
}

// TestInspectReadsOnlyTheChosenNodes: when the trace read no nodes (a healthy
// Service), the inspector GETs the endpoint nodes it will inspect, lists
// nothing, and still skips the NotReady one and a node that does not exist.
func TestInspectReadsOnlyTheChosenNodes(t *testing.T) {
	inp := webInput()
	inp.Nodes, inp.NodesListed = nil, false
	inp.Slices[0].Endpoints = append(inp.Slices[0].Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.244.9.5"}, NodeName: ptr.To("gone")})
	cordoned := readyNode("n1", true)
	cordoned.Spec.Unschedulable = true // inspected anyway, and said so
	client := fake.NewClientset(privilegedNS(), cordoned, readyNode("n2", true), readyNode("n3", false))
	var mu sync.Mutex
	var ran []string
	in := &Inspector{Client: client, Flags: *NewFlags("img"),
		runner: func(_ *Runner, _ context.Context, node string, _ []byte) (*Output, error) {
			mu.Lock()
			ran = append(ran, node)
			mu.Unlock()
			return nil, &Failure{Kind: FailImage, Node: node, Message: "ErrImageNeverPull"}
		}}
	tr := inspectTrace(t, in, inp)
	if got := strings.Join(ran, ","); got != "n1" {
		t.Errorf("ran on %q, want n1", got)
	}
	var gets []string
	for _, a := range client.Actions() {
		if a.GetResource().Resource != "nodes" {
			continue
		}
		if a.GetVerb() != "get" {
			t.Errorf("nodes %s: want only gets", a.GetVerb())
		}
		gets = append(gets, a.(k8stesting.GetAction).GetName())
	}
	sort.Strings(gets)
	if strings.Join(gets, ",") != "gone,n1,n3" {
		t.Errorf("nodes read %v, want gone,n1,n3", gets)
	}
	failures := map[string]string{}
	for _, n := range tr.Metadata.Collector.Nodes {
		failures[n.Node] = n.Failure
		if n.Cordoned != (n.Node == "n1") {
			t.Errorf("node %s cordoned=%v", n.Node, n.Cordoned)
		}
	}
	if failures["gone"] != "no such node" || !strings.Contains(failures["n3"], "NotReady") {
		t.Errorf("skipped nodes %v", failures)
	}
}

// TestCiliumMapsWithoutAnnotationsAreReadAgainWithBPF: the nodes carry no
// Cilium annotation; the first collector (netadmin) sees Cilium's pinned
// maps through the always-mounted bpffs but may not open them, so that node
// is read again with netadmin+bpf, and the report says so.
func TestCiliumMapsWithoutAnnotationsAreReadAgainWithBPF(t *testing.T) {
	var mu sync.Mutex
	var profiles []Profile
	in := &Inspector{Client: fake.NewClientset(privilegedNS()), Flags: *NewFlags("img"),
		runner: func(r *Runner, _ context.Context, node string, _ []byte) (*Output, error) {
			mu.Lock()
			profiles = append(profiles, r.Options.Profile)
			mu.Unlock()
			pod, err := NewPod(node, []byte(`{}`), r.Options)
			if err != nil {
				t.Fatal(err)
			}
			if m := pod.Spec.Containers[0].VolumeMounts; m[len(m)-1].MountPath != "/sys/fs/bpf" || !m[len(m)-1].ReadOnly {
				t.Errorf("profile %s: bpffs not mounted read-only: %+v", r.Options.Profile, m)
			}
			c := &collectorapi.CiliumObservation{Detected: true, LayoutNote: "x"}
			if r.Options.Profile == ProfileNetAdmin {
				c.Error = "cilium_lb4_services_v2: open: operation not permitted"
			}
			obs := collectorapi.Observation{NodeName: node}
			obs.Sections.EBPF = &collectorapi.Section[collectorapi.EBPFObservation]{Status: collectorapi.StatusOK,
				Data: &collectorapi.EBPFObservation{Cilium: c}}
			b, _ := json.Marshal(obs)
			return &Output{Node: node, Log: b}, nil
		}}
	inp := webInput()
	np := plan.PlanNodes(inp, plan.NodeSelection{}, nil, "")
	if np.EBPFHint {
		t.Fatal("no node carries Cilium annotations, yet the plan hints eBPF")
	}
	nr, err := in.Inspect(context.Background(), np)
	if err != nil {
		t.Fatal(err)
	}
	if len(profiles) != 2 || profiles[0] != ProfileNetAdmin || profiles[1] != ProfileBPF {
		t.Fatalf("collector profiles %v, want netadmin then netadmin+bpf", profiles)
	}
	var n1 *report.CollectorNode
	for i := range nr.Collector.Nodes {
		if nr.Collector.Nodes[i].Node == "n1" {
			n1 = &nr.Collector.Nodes[i]
		}
	}
	if n1 == nil || n1.Profile != string(ProfileBPF) || !n1.Inspected {
		t.Fatalf("n1 in the report: %+v", n1)
	}
	for _, v := range nr.Nodes {
		if v.Node == "n1" && (v.Observation == nil || v.Observation.Sections.EBPF.Data.Cilium.Error != "") {
			t.Fatalf("n1 kept the refused read: %+v", v)
		}
	}
}
