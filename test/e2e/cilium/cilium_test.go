// Package cilium_test traces Services on a node owned by the real Cilium
// v1.20.2 agent (test/testbed/cilium): the planner, requests and judge are
// svctrace's, the collector binary runs inside the user-mode Linux guest and
// reads the maps the agent programmed from the private API server's
// Services and EndpointSlices.
//
// Opt-in (SVCTRACE_E2E_CILIUM=1, root): a cold build of the agent takes
// about half an hour. make e2e-cilium runs it.
package cilium_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/svctrace/kubectl-svctrace/bundle"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// As in test/testbed/cilium/lib.sh.
const (
	stateDir  = "/var/lib/svctrace-cilium"
	cpNetns   = "/var/run/netns/svcil-cp"
	nodeName  = "svcil-node1"
	nodeIP    = "10.77.0.11"
	namespace = "default"
	innerEnv  = "SVCTRACE_E2E_CILIUM_INNER"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func nodeScript(t *testing.T) string {
	return filepath.Join(repoRoot(t), "test", "testbed", "cilium", "node.sh")
}

func node(t *testing.T, args ...string) string {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("bash", append([]string{nodeScript(t)}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node.sh %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	t.Logf("node.sh %s: %.1fs", strings.Join(args, " "), time.Since(start).Seconds())
	return out.String()
}

// TestTraceOnRealCiliumAgent brings the node up (node.sh up), builds the
// collector, and runs the trace itself in the control plane's netns, where
// the API server listens; node.sh down runs at the end
// (SVCTRACE_E2E_CILIUM_KEEP=1 keeps the node).
func TestTraceOnRealCiliumAgent(t *testing.T) {
	if os.Getenv(innerEnv) == "1" {
		traceOnNode(t)
		return
	}
	if os.Getenv("SVCTRACE_E2E_CILIUM") != "1" {
		t.Skip("SVCTRACE_E2E_CILIUM=1 runs it (make e2e-cilium): a node with the real Cilium agent in user-mode Linux")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, user-mode Linux)")
	}
	node(t, "up")
	if os.Getenv("SVCTRACE_E2E_CILIUM_KEEP") != "1" {
		t.Cleanup(func() { node(t, "down") })
	}
	bin := filepath.Join(stateDir, "node", "bin", "svctrace-collector")
	build := exec.Command("nice", "go", "build", "-trimpath", "-o", bin, "./cmd/svctrace-collector")
	build.Dir, build.Env = repoRoot(t), append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the collector: %v\n%s", err, out)
	}
	cmd := exec.Command("nsenter", "--net="+cpNetns, "--", os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1",
		"-test.timeout=30m")
	cmd.Env = append(os.Environ(), innerEnv+"=1")
	out, err := cmd.CombinedOutput()
	t.Logf("in netns svcil-cp:\n%s", out)
	if err != nil {
		t.Fatalf("trace in netns svcil-cp: %v", err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatal("the trace in netns svcil-cp did not pass")
	}
}

// ciliumInspector runs the plan's collector for the Cilium node inside the
// guest (node.sh exec); other planned nodes are reported as not inspected.
type ciliumInspector struct{ t *testing.T }

func (u ciliumInspector) Inspect(ctx context.Context, np plan.NodePlan) (*plan.NodeReport, error) {
	rep := &plan.NodeReport{Collector: &report.CollectorRun{Image: "svctrace-collector binary run in the UML guest", Profile: "netadmin"},
		Nodes: append([]plan.NodeView(nil), np.NotInspected...)}
	for _, pn := range np.Nodes {
		v := plan.NodeView{Node: pn.Name, Roles: pn.Roles, Profile: "netadmin"}
		if pn.Name != nodeName {
			v.Failure = "the Cilium e2e inspects only " + nodeName
			rep.Nodes = append(rep.Nodes, v)
			continue
		}
		b, err := json.Marshal(pn.Request)
		if err != nil {
			return nil, err
		}
		f := filepath.Join(stateDir, "node", fmt.Sprintf("request-%d.json", time.Now().UnixNano()))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return nil, err
		}
		start := time.Now()
		out, err := exec.CommandContext(ctx, "bash", nodeScript(u.t), "exec", filepath.Join(stateDir, "node", "bin", "svctrace-collector"), "--request-file", f).Output()
		u.t.Logf("collector in %s: %.1fs", nodeName, time.Since(start).Seconds())
		_ = os.Remove(f)
		var obs collectorapi.Observation
		if err == nil {
			err = json.Unmarshal(out, &obs)
		}
		if err != nil {
			v.Failure = fmt.Sprintf("collector in %s: %v: %s", nodeName, err, out)
		} else {
			v.Observation = &obs
		}
		rep.Nodes = append(rep.Nodes, v)
	}
	return rep, ctx.Err()
}

func slice(name, svc string, ips ...string) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(8080)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, ip := range ips {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(nodeName),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}})
	}
	return sl
}

func service(name string, typ corev1.ServiceType) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{Type: typ, Ports: []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80,
			TargetPort: intstr.FromInt32(8080)}}}}
}

// lbBackends are the backends `cilium-dbg bpf lb list` shows for a frontend.
func lbBackends(t *testing.T, frontend string) []string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	out := node(t, "exec", filepath.Join(home, ".cache", "svctrace", "cilium-v1.20.2", "bin", "cilium-dbg"), "bpf", "lb", "list")
	var got []string
	re := regexp.MustCompile(`^` + regexp.QuoteMeta(frontend) + `/TCP \([1-9][0-9]*\)\s+([0-9.]+):8080/TCP`)
	for _, l := range strings.Split(out, "\n") {
		if m := re.FindStringSubmatch(l); m != nil {
			got = append(got, m[1])
		}
	}
	return got
}

func waitMaps(t *testing.T, frontend string, want ...string) time.Duration {
	t.Helper()
	start := time.Now()
	for deadline := start.Add(3 * time.Minute); ; time.Sleep(2 * time.Second) {
		got := lbBackends(t, frontend)
		if sameSet(got, want) {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s in the maps holds %v, want %v", frontend, got, want)
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, x := range a {
		m[x] = true
	}
	for _, x := range b {
		if !m[x] {
			return false
		}
	}
	return true
}

func runTrace(t *testing.T, client kubernetes.Interface, name string) *report.ServiceTrace {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	opts := trace.Options{Inspector: ciliumInspector{t}, Nodes: plan.NodeSelection{Nodes: []string{nodeName}}}
	// Collect and Assemble are trace.Run, kept apart so that the trace can
	// be saved as --save would (framework.RecordDir).
	in, nodes, err := trace.Collect(ctx, client, namespace, name, opts)
	if err != nil {
		t.Fatalf("trace %s: %v", name, err)
	}
	tr := trace.Assemble(in, nodes, opts)
	t.Logf("trace %s: %.1fs", name, time.Since(start).Seconds())
	if dir := framework.RecordDir(t, nil); dir != "" {
		b, err := bundle.New(in, nodes, opts, tr)
		if err == nil {
			err = b.Write(dir)
		}
		if err != nil {
			t.Fatalf("saving the trace of %s: %v", name, err)
		}
	}
	for _, c := range tr.Layer(report.LayerDatapath).Checks {
		t.Logf("  %s %s %s %s: %s", name, c.Node, c.Code, c.Status, c.Message)
	}
	return tr
}

func datapathCodes(tr *report.ServiceTrace) map[string]report.Check {
	out := map[string]report.Check{}
	for _, c := range tr.Layer(report.LayerDatapath).Checks {
		if c.Node == nodeName {
			out[c.Code] = c
		}
	}
	return out
}

func traceOnNode(t *testing.T) {
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(stateDir, "pki", "admin.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	keepReady(t, client)
	names := []string{"e2e-web", "e2e-np"}
	types := []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort}
	ips := [][]string{{"10.78.1.50", "10.78.1.51"}, {"10.78.1.52"}}
	frontends := map[string]string{}
	for i, name := range names {
		_ = client.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		_ = client.DiscoveryV1().EndpointSlices(namespace).Delete(ctx, name+"-1", metav1.DeleteOptions{})
		svc, err := client.CoreV1().Services(namespace).Create(ctx, service(name, types[i]), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.DiscoveryV1().EndpointSlices(namespace).Create(ctx, slice(name+"-1", name, ips[i]...), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		frontends[name] = svc.Spec.ClusterIP + ":80"
		if types[i] == corev1.ServiceTypeNodePort {
			frontends[name+"/nodeport"] = fmt.Sprintf("%s:%d", nodeIP, svc.Spec.Ports[0].NodePort)
		}
		t.Cleanup(func() {
			_ = client.CoreV1().Services(namespace).Delete(context.Background(), name, metav1.DeleteOptions{})
			_ = client.DiscoveryV1().EndpointSlices(namespace).Delete(context.Background(), name+"-1", metav1.DeleteOptions{})
		})
	}
	for i, name := range names {
		t.Logf("%s (%s) in the maps %.1fs after its slice was created", name, frontends[name], waitMaps(t, frontends[name], ips[i]...).Seconds())
	}
	waitMaps(t, frontends["e2e-np/nodeport"], ips[1]...)

	for _, name := range names {
		tr := runTrace(t, client, name)
		got := datapathCodes(tr)
		if o, ok := got["DP018"]; !ok || !strings.Contains(o.Message, "Cilium") {
			t.Errorf("%s: DP018 with the Cilium owner: %+v", name, o)
		}
		for _, code := range []string{"DP003", "DP006", "DP007", "DP008", "DP020"} {
			if c, ok := got[code]; ok {
				t.Errorf("%s: unexpected %s: %s", name, code, c.Message)
			}
		}
		if s := tr.Layer(report.LayerDatapath).Status; s == report.StatusFail {
			t.Errorf("%s: datapath layer %s", name, s)
		}
		if _, ok := got["DP015"]; !ok {
			t.Errorf("%s: no DP015, the maps' backends not compared: %v", name, keys(got))
		}
	}

	// The agent stops; the slices move on without it: the maps keep the old backends.
	node(t, "agent", "stop")
	moved := [][]string{{"10.78.1.50", "10.78.1.53"}, {"10.78.1.54"}}
	for i, name := range names {
		sl, err := client.DiscoveryV1().EndpointSlices(namespace).Get(ctx, name+"-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sl.Endpoints = slice(name+"-1", name, moved[i]...).Endpoints
		if _, err := client.DiscoveryV1().EndpointSlices(namespace).Update(ctx, sl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(15 * time.Second) // longer than the agent takes to follow a slice (12-14 s measured), were it running
	if got := lbBackends(t, frontends["e2e-web"]); !sameSet(got, ips[0]) {
		t.Fatalf("the stopped agent's maps changed: %v", got)
	}
	stale := map[string]string{"e2e-web": "10.78.1.51:8080", "e2e-np": "10.78.1.52:8080"}
	for _, name := range names {
		tr := runTrace(t, client, name)
		got := datapathCodes(tr)
		c, ok := got["DP008"]
		if !ok {
			t.Errorf("%s: no DP008 with the agent stopped and the slices changed: %v", name, keys(got))
		} else if !strings.Contains(c.Message, stale[name]) {
			t.Errorf("%s: DP008 does not name %s: %s", name, stale[name], c.Message)
		}
		if s := tr.Layer(report.LayerDatapath).Status; s != report.StatusFail {
			t.Errorf("%s: datapath layer %s with stale backends", name, s)
		}
		if np := frontends[name+"/nodeport"]; np != "" {
			// The agent writes the NodePort at the node's address too: it is read and judged.
			var dp044 []string
			for _, c := range tr.Layer(report.LayerDatapath).Checks {
				if c.Code == "DP044" {
					dp044 = append(dp044, c.Message)
				}
			}
			if m := strings.Join(dp044, "\n"); !strings.Contains(m, "nodePort "+np+"/TCP") || !strings.Contains(m, "stale: "+stale[name]) {
				t.Errorf("%s: DP044 does not name the stale backend of %s: %s", name, np, m)
			}
		}
	}

	// The agent starts again and follows the slices: the finding goes.
	node(t, "agent", "start")
	t.Logf("agent start to the moved slices in the maps: %.1fs", waitMaps(t, frontends["e2e-web"], moved[0]...).Seconds())
	waitMaps(t, frontends["e2e-np"], moved[1]...)
	for _, name := range names {
		got := datapathCodes(runTrace(t, client, name))
		if c, ok := got["DP008"]; ok {
			t.Errorf("%s: DP008 after the agent restarted: %s", name, c.Message)
		}
	}
}

// keepReady marks the Node (made by node.sh up, no kubelet) Ready and renews
// its Lease every 10 s until the test ends, so that the node lifecycle
// controller keeps it Ready and the planner inspects it.
func keepReady(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	ctx := context.Background()
	nodes := client.CoreV1().Nodes()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "no kubelet: user-mode Linux node running the Cilium agent, kept Ready by the e2e", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("node status: %v", err)
	}
	framework.RenewNodeLease(t, client, nodeName)
}

func keys(m map[string]report.Check) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
