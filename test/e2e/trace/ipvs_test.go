package trace_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/svctrace/kubectl-svctrace/bundle"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// ipvsNode is the testbed's IPVS node (test/testbed/ipvs-node.sh): a
// user-mode Linux kernel on the testbed bridge running the real kube-proxy
// in IPVS mode and a real kubelet with containerd, registered with the
// testbed's API server and tainted so that only the Pods that tolerate it
// run there. Traces run the plugin itself, whose collector Pod runs there.
//
// Without the kubelet (SVTB_IPVS_KUBELET=0) the node has two Pod network
// namespaces with the echo server: the test then gives it a Node object
// (kept Ready by renewing its Lease) and traces with the real planner,
// requests and judge, running the collector binary inside the node instead
// of in a Pod (ipvsInspector).
type ipvsNode struct {
	Name, IP, Zone string
	// IPs are the node's addresses of every family the cluster runs,
	// primary first.
	IPs         []string
	Pods        map[string]string // name → IP
	Pods6       map[string]string // name → IPv6 address, on a dual-stack testbed
	script, dir string
	kubelet     bool
	taint       corev1.Taint
}

// ipvsEchoLabel marks the echo Pods a test runs on the IPVS node.
const ipvsEchoLabel = "ipvs-echo"

func setupIPVSNode(t *testing.T, tb *framework.Testbed, ns string) *ipvsNode {
	t.Helper()
	if os.Getenv("SVTB_IPVS_NODE") == "0" {
		t.Skip("SVTB_IPVS_NODE=0: the testbed has no IPVS node")
	}
	script := filepath.Join(tb.RepoRoot, "test", "testbed", "ipvs-node.sh")
	// kube-proxy there restarts when a test deletes the Node object: allow
	// it the time a restart takes in user-mode Linux.
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(2 * time.Second) {
		out, err := exec.Command("bash", script, "status").CombinedOutput()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the IPVS node is not up (make testbed-up brings it up; SVTB_IPVS_NODE=0 skips it): %s", out)
		}
	}
	out, err := exec.Command("bash", script, "env").Output()
	if err != nil {
		t.Fatal(err)
	}
	n := &ipvsNode{Pods: map[string]string{}, Pods6: map[string]string{}, script: script}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		for _, kv := range strings.Fields(sc.Text()) {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "IPVS_NODE":
				n.Name = v
			case "IPVS_NODE_IP":
				n.IP = v
			case "IPVS_NODE_IPS":
				n.IPs = strings.Split(v, ",")
			case "IPVS_NODE_ZONE":
				n.Zone = v
			case "IPVS_NODE_DIR":
				n.dir = v
			case "IPVS_NODE_KUBELET":
				n.kubelet = v == "1"
			case "IPVS_NODE_TAINT": // key=value:effect
				kv, effect, _ := strings.Cut(v, ":")
				key, val, _ := strings.Cut(kv, "=")
				n.taint = corev1.Taint{Key: key, Value: val, Effect: corev1.TaintEffect(effect)}
			case "IPVS_POD":
				name, ip, _ := strings.Cut(v, "=")
				n.Pods[name] = ip
			case "IPVS_POD6":
				name, ip, _ := strings.Cut(v, "=")
				n.Pods6[name] = ip
			}
		}
	}
	if n.Name == "" || n.dir == "" || (!n.kubelet && len(n.Pods) < 2) {
		t.Fatalf("ipvs-node.sh env: %s", out)
	}
	if n.kubelet {
		n.requireRegistered(t, tb)
		tb.DeployEcho(t, ns, framework.EchoOptions{Name: ipvsEchoLabel, Replicas: 2, Nodes: []string{n.Name}, Tolerations: n.tolerations()})
		for _, p := range tb.WaitPodsReady(t, ns, map[string]string{"app": ipvsEchoLabel}, 2) {
			n.Pods[p.Name] = p.Status.PodIP
		}
		return n
	}
	// The collector binary, run inside the node.
	bin := filepath.Join(n.dir, "bin", "svctrace-collector")
	build := exec.Command("go", "build", "-o", bin, "./cmd/svctrace-collector")
	build.Dir, build.Env = tb.RepoRoot, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the collector: %v\n%s", err, out)
	}
	n.registerNode(t, tb)
	return n
}

// tolerations let a Pod run on the IPVS node.
func (n *ipvsNode) tolerations() []corev1.Toleration {
	return []corev1.Toleration{{Key: n.taint.Key, Operator: corev1.TolerationOpEqual, Value: n.taint.Value, Effect: n.taint.Effect}}
}

// requireRegistered checks that the node's own kubelet registered it: Ready,
// the kubelet's version, the node's address, zone and taint.
func (n *ipvsNode) requireRegistered(t *testing.T, tb *framework.Testbed) {
	t.Helper()
	node, err := tb.Client.CoreV1().Nodes().Get(framework.Context(t, 30*time.Second), n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the IPVS node's kubelet did not register %s: %v", n.Name, err)
	}
	ready := false
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			ready = c.Status == corev1.ConditionTrue
		}
	}
	var addr string
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			addr = a.Address
		}
	}
	tainted := false
	for _, tt := range node.Spec.Taints {
		tainted = tainted || (tt.Key == n.taint.Key && tt.Effect == n.taint.Effect)
	}
	if !ready || addr != n.IP || node.Labels[corev1.LabelTopologyZone] != n.Zone || !tainted ||
		!strings.HasPrefix(node.Status.NodeInfo.KubeletVersion, "v1.37") || !strings.Contains(node.Status.NodeInfo.KernelVersion, "6.1") {
		t.Fatalf("node %s: ready %v, address %q, zone %q, taints %v, kubelet %q, kernel %q", n.Name, ready, addr,
			node.Labels[corev1.LabelTopologyZone], node.Spec.Taints, node.Status.NodeInfo.KubeletVersion, node.Status.NodeInfo.KernelVersion)
	}
}

// registerNode creates the Node object (Ready, its address and zone) and
// renews its Lease every 10 s until the test ends, so that the node
// lifecycle controller keeps it Ready; both are deleted at cleanup.
func (n *ipvsNode) registerNode(t *testing.T, tb *framework.Testbed) {
	ctx := framework.Context(t, 10*time.Minute)
	nodes := tb.Client.CoreV1().Nodes()
	_ = nodes.Delete(ctx, n.Name, metav1.DeleteOptions{})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: map[string]string{
		corev1.LabelHostname: n.Name, corev1.LabelTopologyZone: n.Zone, "svctrace.dev/ipvs-node": "uml"}},
		// No Pod CIDR: no kubelet runs Pods here, the echo servers in
		// 10.244.3.0/24 are not Pods, and an endpoint IP inside a node's Pod
		// CIDR that no Pod owns is a ghost (EPS017).
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: "svctrace.dev/no-kubelet", Effect: corev1.TaintEffectNoSchedule}}}}
	now := metav1.Now()
	// An InternalIP a family, as a dual-stack kubelet reports them.
	var addrs []corev1.NodeAddress
	ips := n.IPs
	if len(ips) == 0 {
		ips = []string{n.IP}
	}
	for _, ip := range ips {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	status := corev1.NodeStatus{
		Addresses: append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: n.Name}),
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "no kubelet: user-mode Linux node of the svctrace testbed, kept Ready by the e2e", LastHeartbeatTime: now, LastTransitionTime: now}},
		NodeInfo: corev1.NodeSystemInfo{KernelVersion: "6.1.176", OperatingSystem: "linux", Architecture: "amd64"}}
	// Created with its status, as a kubelet registers its node: kube-proxy
	// there, waiting for its Node, finds the node's IPs at once. A Node
	// created bare and given its addresses afterwards makes kube-proxy exit
	// on "NodeIPs changed" and restart, which takes 30-40 s in user-mode
	// Linux.
	node.Status = status
	_, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create node %s: %v", n.Name, err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = nodes.Delete(c, n.Name, metav1.DeleteOptions{})
		_ = tb.Client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(c, n.Name, metav1.DeleteOptions{})
	})
	// The node lifecycle controller writes the new Node too: retry on conflict.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Status = status
		_, err = nodes.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatalf("node status: %v", err)
	}
	framework.RenewNodeLease(t, tb.Client, n.Name)
}

// tryExec runs a command inside the node.
func (n *ipvsNode) tryExec(args ...string) (string, error) {
	out, err := exec.Command("bash", append([]string{n.script, "exec"}, args...)...).CombinedOutput()
	return string(out), err
}

// exec runs a command inside the node; it must succeed.
func (n *ipvsNode) exec(t *testing.T, args ...string) string {
	t.Helper()
	out, err := n.tryExec(args...)
	if err != nil {
		t.Fatalf("in %s: %v: %v\n%s", n.Name, args, err, out)
	}
	return string(out)
}

// ipvsInspector runs the plan's collector for the IPVS node inside it; the
// other planned nodes are reported as not inspected.
type ipvsInspector struct {
	t *testing.T
	n *ipvsNode
}

func (u ipvsInspector) Inspect(ctx context.Context, np plan.NodePlan) (*plan.NodeReport, error) {
	rep := &plan.NodeReport{Collector: &report.CollectorRun{Image: "svctrace-collector binary run in the UML node", Profile: "netadmin"},
		Nodes: append([]plan.NodeView(nil), np.NotInspected...)}
	for _, pn := range np.Nodes {
		v := plan.NodeView{Node: pn.Name, Roles: pn.Roles, Profile: "netadmin"}
		if pn.Name != u.n.Name {
			v.Failure = "the IPVS e2e inspects only " + u.n.Name
			rep.Nodes = append(rep.Nodes, v)
			continue
		}
		b, err := json.Marshal(pn.CollectRequest())
		if err != nil {
			return nil, err
		}
		f := filepath.Join(u.n.dir, fmt.Sprintf("request-%d.json", time.Now().UnixNano()))
		if err := os.WriteFile(f, b, 0o644); err != nil {
			return nil, err
		}
		out, err := exec.CommandContext(ctx, "bash", u.n.script, "exec", filepath.Join(u.n.dir, "bin", "svctrace-collector"), "--request-file", f).Output()
		_ = os.Remove(f)
		var obs collectorapi.Observation
		if err == nil {
			err = json.Unmarshal(out, &obs)
		}
		if err != nil {
			v.Failure = fmt.Sprintf("collector in %s: %v: %s", u.n.Name, err, out)
		} else {
			v.Observation = &obs
		}
		rep.Nodes = append(rep.Nodes, v)
	}
	return rep, ctx.Err()
}

// traceIPVS traces a Service with the IPVS node's collector; exit is what
// kubectl-svctrace would exit with.
func traceIPVS(t *testing.T, tb *framework.Testbed, n *ipvsNode, ns, name string) (*report.ServiceTrace, int) {
	t.Helper()
	if n.kubelet {
		r := svctrace(t, tb, name, "-n", ns, "--node", n.Name)
		if r.Trace == nil {
			t.Fatalf("kubectl-svctrace %s --node %s: exit %d, no trace: %s", name, n.Name, r.Exit, r.Stderr)
		}
		return r.Trace, r.Exit
	}
	opts := trace.Options{Inspector: ipvsInspector{t, n}, Nodes: plan.NodeSelection{Nodes: []string{n.Name}}}
	in, nr, err := trace.Collect(framework.Context(t, 3*time.Minute), tb.Client, ns, name, opts)
	if err != nil {
		t.Fatalf("trace %s/%s: %v", ns, name, err)
	}
	tr := trace.Assemble(in, nr, opts)
	// Recorded like the plugin's traces (--save), so that the IPVS node's
	// states join the judge's scenario corpus.
	if dir := framework.RecordDir(t, nil); dir != "" {
		b, err := bundle.New(in, nr, opts, tr)
		if err == nil {
			err = b.Write(dir)
		}
		if err != nil {
			t.Fatalf("recording the trace of %s/%s: %v", ns, name, err)
		}
	}
	exit := 0
	for _, l := range tr.Layers {
		if l.Status == report.StatusUnknown && exit == 0 {
			exit = 4
		}
		if l.Status == report.StatusFail {
			exit = 3
		}
	}
	return tr, exit
}

// ipvsService creates a selector-less Service whose EndpointSlice lists the
// IPVS node's echo Pods (ready, on that node), and waits until kube-proxy
// there programmed its ClusterIP with every endpoint.
func ipvsService(t *testing.T, tb *framework.Testbed, n *ipvsNode, ns string, svc *corev1.Service, remote ...string) *corev1.Service {
	t.Helper()
	return ipvsServiceWith(t, tb, n, ns, svc, true, remote...)
}

// ipvsServiceWith is ipvsService whose slice lists the IPVS node's echo
// Pods only when local is true.
func ipvsServiceWith(t *testing.T, tb *framework.Testbed, n *ipvsNode, ns string, svc *corev1.Service, local bool, remote ...string) *corev1.Service {
	t.Helper()
	svc.Spec.Selector = nil
	out := tb.CreateService(t, ns, svc)
	pods := n.Pods
	if !local {
		pods = nil
	}
	// The node's Pods are of the testbed's primary family, as is a
	// SingleStack Service's ClusterIP.
	addressType := discoveryv1.AddressTypeIPv4
	if tb.IPFamilies[0] == "ipv6" {
		addressType = discoveryv1.AddressTypeIPv6
	}
	es := n.slice(out, addressType, pods)
	for _, ip := range remote { // "ip@node"
		addr, node, _ := strings.Cut(ip, "@")
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{addr}, NodeName: ptr.To(node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return ipvsSlice(t, tb, n, out, es)
}

// slice is an EndpointSlice of svc listing pods (name → address of
// addressType), ready, on the IPVS node.
func (n *ipvsNode) slice(svc *corev1.Service, addressType discoveryv1.AddressType, pods map[string]string) *discoveryv1.EndpointSlice {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: svc.Name + "-ipvs-", Namespace: svc.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name, discoveryv1.LabelManagedBy: "svctrace-e2e"}},
		AddressType: addressType,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(framework.EchoHTTPPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	for _, name := range sortedKeys(pods) {
		es.Endpoints = append(es.Endpoints, discoveryv1.Endpoint{Addresses: []string{pods[name]}, NodeName: ptr.To(n.Name),
			Zone: ptr.To(n.Zone), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
	}
	return es
}

// ipvsSlice creates the slice of out and waits until kube-proxy in the IPVS
// node programmed out's ClusterIP of the slice's family with every endpoint.
func ipvsSlice(t *testing.T, tb *framework.Testbed, n *ipvsNode, out *corev1.Service, es *discoveryv1.EndpointSlice) *corev1.Service {
	t.Helper()
	// The sync metrics before the slice: any sync counted after them
	// completed after this read (a failed read leaves zero: kube-proxy is
	// restarting, and every sync it counts will come after it).
	prev, _ := n.syncMetrics()
	if _, err := tb.Client.DiscoveryV1().EndpointSlices(out.Namespace).Create(framework.Context(t, 30*time.Second), es, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := len(es.Endpoints)
	clusterIP := out.Spec.ClusterIP
	for _, ip := range out.Spec.ClusterIPs {
		if (es.AddressType == discoveryv1.AddressTypeIPv6) == strings.Contains(ip, ":") {
			clusterIP = ip
		}
	}
	vip := net.JoinHostPort(clusterIP, strconv.Itoa(int(out.Spec.Ports[0].Port)))
	// The virtual servers are written during a sync, its ipsets and iptables
	// rules at its end. kube-proxy's metrics, read from outside the node (an
	// exec in user-mode Linux takes the CPU its sync needs), say when a sync
	// completed; the virtual server is listed after each one that completed
	// once kube-proxy had queued the slice's change. It is programmed when
	// the list is whole and the sync behind it had started after that queue
	// (its start is its end minus the growth of the duration histogram's sum
	// when the count grew by one), or, when that cannot be told, once a sync
	// completed after the list, or no sync was queued after the last one
	// for 10 s (kube-proxy in user-mode Linux often syncs again right after
	// programming a Service). Every timestamp compared is the guest's own:
	// its clock is not this host's. Three minutes: kube-proxy may be
	// restarting (it exits when the previous test deletes its Node, and
	// waits for the new one), which takes 30-40 s in user-mode Linux before
	// its first sync.
	deadline := time.Now().Add(3 * time.Minute)
	queuedAt := 0.0 // when kube-proxy queued a sync for the slice
	got := -1
	var listedAt time.Time
	var last syncMetrics
	listedCount := 0
	for ; time.Now().Before(deadline); time.Sleep(time.Second) {
		m, err := n.syncMetrics()
		if err != nil {
			continue
		}
		last = m
		if m.count < prev.count {
			// kube-proxy restarted: every sync it counts now came after the
			// previous read, its first one (the count is 1) from its own
			// start with every Service and slice it listed.
			prev = syncMetrics{}
		}
		if queuedAt == 0 && m.queued > prev.queued {
			queuedAt = m.queued
		}
		if !listedAt.IsZero() {
			if m.count > listedCount || (m.last >= m.queued && time.Since(listedAt) > 10*time.Second) {
				return out
			}
			continue
		}
		if queuedAt == 0 || m.count == prev.count {
			continue
		}
		started := 0.0
		if m.count == prev.count+1 {
			started = m.last - (m.sum - prev.sum)
		}
		prev = m
		list, _ := n.tryExec("ipvsadm", "-Ln", "-t", vip) // "No such service" until kube-proxy syncs
		if got = strings.Count(list, "Masq"); got != want {
			continue
		}
		if started >= queuedAt {
			return out
		}
		listedAt, listedCount = time.Now(), m.count
	}
	// What kube-proxy was doing: its log is on this host, in the node's
	// directory.
	logTail, _ := exec.Command("tail", "-n", "30", filepath.Join(n.dir, "kube-proxy.log")).Output()
	t.Logf("kube-proxy's metrics at the end (guest clock): last sync %.3f, last queued %.3f, %d syncs (%.1f s); queued for the slice at %.3f\nkube-proxy.log:\n%s",
		last.last, last.queued, last.count, last.sum, queuedAt, logTail)
	t.Fatalf("kube-proxy (ipvs) in %s programmed %d of %d real servers for %s (-1: no sync completed after it queued the slice's change)", n.Name, got, want, vip)
	return nil
}

// syncMetrics is what kube-proxy's metrics say of its syncs: the last
// completed and the last queued (Unix seconds, the latest of any family),
// and the duration histogram's count and sum over every family.
type syncMetrics struct {
	last, queued, sum float64
	count             int
}

// syncMetrics reads kube-proxy's metrics on the node's address, from the
// control plane's network namespace.
func (n *ipvsNode) syncMetrics() (syncMetrics, error) {
	var m syncMetrics
	out, err := exec.Command("ip", "netns", "exec", "svtb-cp", "curl", "-sf", "-m", "3", "http://"+net.JoinHostPort(n.IP, "10249")+"/metrics").Output()
	if err != nil {
		return m, err
	}
	for _, l := range strings.Split(string(out), "\n") {
		var v float64
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if _, err := fmt.Sscan(f[1], &v); err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(f[0], "kubeproxy_sync_proxy_rules_last_timestamp_seconds"):
			m.last = max(m.last, v)
		case strings.HasPrefix(f[0], "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds"):
			m.queued = max(m.queued, v)
		case strings.HasPrefix(f[0], "kubeproxy_sync_proxy_rules_duration_seconds_sum"):
			m.sum += v
		case strings.HasPrefix(f[0], "kubeproxy_sync_proxy_rules_duration_seconds_count"):
			m.count += int(v)
		}
	}
	if m.count == 0 {
		return m, fmt.Errorf("no completed sync in kube-proxy's metrics on %s", n.Name)
	}
	return m, nil
}

func sortedKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func ipvsPort() corev1.ServicePort {
	return corev1.ServicePort{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(framework.EchoHTTPPort)}
}

func requireTraceCheck(t *testing.T, tr *report.ServiceTrace, layer report.LayerName, code, node string) *report.Check {
	t.Helper()
	c := check(tr, layer, code, node)
	if c == nil {
		t.Fatalf("no %s in layer %s for node %q; layer %s: %s", code, layer, node, tr.Layer(layer).Status, summarize(tr, layer))
	}
	return c
}

func refuseTraceCheck(t *testing.T, tr *report.ServiceTrace, layer report.LayerName, code string) {
	t.Helper()
	if c := check(tr, layer, code, ""); c != nil {
		t.Errorf("unexpected %s on %s: %s", code, c.Node, c.Message)
	}
}

// TestIPVSNode traces Services on the IPVS node as the real kube-proxy in
// IPVS mode programmed them, and after breaking them by hand there.
func TestIPVSNode(t *testing.T) {
	tb := framework.Setup(t)
	ns := tb.Namespace(t)
	n := setupIPVSNode(t, tb, ns)

	t.Run("ClusterIP healthy", func(t *testing.T) {
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}}})
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, n.Name)
		requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSDeprecated, n.Name)
		owner := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPOwner, n.Name)
		if !strings.Contains(owner.Message, "ipvs") {
			t.Errorf("owner %q", owner.Message)
		}
		for _, c := range []string{report.CodeDPNodePortMissing, report.CodeDPIPVSNotOnDummy, report.CodeDPIPVSSetReject, report.CodeDPIPVSSysctl} {
			refuseTraceCheck(t, tr, report.LayerDatapath, c)
		}
		if exit != 0 {
			t.Errorf("exit %d, want 0: %s (%s)", exit, tr.Verdict.Summary, tr.Verdict.Code)
		}
	})

	t.Run("NodePort healthy", func(t *testing.T) {
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{ipvsPort()}}})
		np := net.JoinHostPort(n.IP, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
		if out := n.exec(t, "ipvsadm", "-Ln", "-t", np); strings.Count(out, "Masq") != len(n.Pods) {
			t.Fatalf("NodePort virtual server %s: %s", np, out)
		}
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, n.Name)
		refuseTraceCheck(t, tr, report.LayerDatapath, report.CodeDPNodePortMissing)
		refuseTraceCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSSetMissing)
		if exit != 0 {
			t.Errorf("exit %d, want 0: %s (%s)", exit, tr.Verdict.Summary, tr.Verdict.Code)
		}
	})

	t.Run("NodePort missing from KUBE-NODE-PORT-TCP", func(t *testing.T) {
		// Under externalTrafficPolicy Cluster the nat KUBE-NODE-PORT chain
		// marks NodePort traffic for masquerade by this set
		// (ipsetWithIptablesChain); without the entry, replies from a
		// Pod on another node go straight to the client, which drops them.
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "np-nomasq"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: []corev1.ServicePort{ipvsPort()}}})
		port := strconv.Itoa(int(svc.Spec.Ports[0].NodePort))
		n.exec(t, "ipset", "del", "KUBE-NODE-PORT-TCP", port)
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		if out := n.exec(t, "ipset", "list", "KUBE-NODE-PORT-TCP"); slices.Contains(strings.Fields(out), port) {
			t.Skipf("kube-proxy re-added %s to KUBE-NODE-PORT-TCP before the trace finished; nothing to judge", port)
		}
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPMasqExternal, n.Name)
		if !strings.Contains(c.Message, port) {
			t.Errorf("%s does not name the NodePort %s: %q", c.Code, port, c.Message)
		}
		if exit != 3 {
			t.Errorf("exit %d, want 3", exit)
		}
	})

	t.Run("ETP Local", func(t *testing.T) {
		// One endpoint on this node, one elsewhere: the NodePort virtual
		// servers hold only the local one.
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "local"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				Ports: []corev1.ServicePort{ipvsPort()}}}, "10.244.1.250@"+tb.NodeNames()[0])
		np := net.JoinHostPort(n.IP, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
		if out := n.exec(t, "ipvsadm", "-Ln", "-t", np); strings.Contains(out, "10.244.1.250") || strings.Count(out, "Masq") != len(n.Pods) {
			t.Fatalf("ETP Local NodePort virtual server %s holds more than the local endpoints: %s", np, out)
		}
		tr, _ := traceIPVS(t, tb, n, ns, svc.Name)
		requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, n.Name)
		refuseTraceCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSExternalRealServers)
		refuseTraceCheck(t, tr, report.LayerDatapath, report.CodeDPETPLocalNoLocal)
	})

	t.Run("ETP Local without a local endpoint", func(t *testing.T) {
		// The only endpoint is on another node. kube-proxy's IPVS proxier
		// then gives the NodePort virtual servers the cluster-wide endpoints
		// (pkg/proxy/ipvs syncEndpoint, kubernetes#97081: local Pods may
		// still use the node port) and drops external traffic with iptables
		// (the Service in serviceNoLocalEndpointsExternal): by design, a
		// warning that names what external clients see.
		remoteNode := tb.NodeNames()[0]
		tb.DeployEcho(t, ns, framework.EchoOptions{Name: "remote", Replicas: 1, Nodes: []string{remoteNode}})
		remote := tb.WaitPodsReady(t, ns, map[string]string{"app": "remote"}, 1)[0].Status.PodIP
		svc := ipvsServiceWith(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "local-remote"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
				Ports: []corev1.ServicePort{ipvsPort()}}}, false, remote+"@"+remoteNode)
		np := net.JoinHostPort(n.IP, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
		if out := n.exec(t, "ipvsadm", "-Ln", "-t", np); !strings.Contains(out, fmt.Sprintf("%s:%d", remote, framework.EchoHTTPPort)) {
			t.Fatalf("ETP Local NodePort virtual server %s without a local endpoint: %s (kube-proxy v1.37 lists the cluster endpoints)", np, out)
		}
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSETPLocalFallback, n.Name)
		if c.Status != report.StatusWarn {
			t.Errorf("%s is %s, want a warning", c.Code, c.Status)
		}
		refuseTraceCheck(t, tr, report.LayerDatapath, report.CodeDPNodePortMissing)
		refuseTraceCheck(t, tr, report.LayerDatapath, report.CodeDPMissingEndpoints)
		if exit == 3 {
			t.Errorf("exit 3: the drop is by design (%s %s)", tr.Verdict.Code, tr.Verdict.Summary)
		}
	})

	t.Run("session affinity", func(t *testing.T) {
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "sticky"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}, SessionAffinity: corev1.ServiceAffinityClientIP,
				SessionAffinityConfig: &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To(int32(300))}}}})
		tr, _ := traceIPVS(t, tb, n, ns, svc.Name)
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPAffinityOK, n.Name)
		if !strings.Contains(c.Message, "300") {
			t.Errorf("affinity: %q", c.Message)
		}
	})

	t.Run("real server removed with ipvsadm", func(t *testing.T) {
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "rs-gone"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}}})
		vip := fmt.Sprintf("%s:80", svc.Spec.ClusterIP)
		gone := n.Pods[sortedKeys(n.Pods)[1]] + fmt.Sprintf(":%d", framework.EchoHTTPPort)
		n.exec(t, "ipvsadm", "-d", "-t", vip, "-r", gone)
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		if out := n.exec(t, "ipvsadm", "-Ln", "-t", vip); strings.Contains(out, gone) {
			t.Skipf("kube-proxy re-added %s before the trace finished; nothing to judge", gone)
		}
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPMissingEndpoints, n.Name)
		if !strings.Contains(c.Message, gone) {
			t.Errorf("DP007 does not name %s: %q", gone, c.Message)
		}
		if exit != 3 {
			t.Errorf("exit %d, want 3", exit)
		}
	})

	t.Run("bridge-nf-call-iptables off", func(t *testing.T) {
		if !n.kubelet {
			t.Skip("SVTB_IPVS_KUBELET=0: no CNI bridge on the IPVS node")
		}
		// A client Pod on the same CNI bridge as the Service's endpoints: the
		// endpoint's reply is bridged straight back to it, and only
		// br_netfilter with bridge-nf-call-iptables=1 sends it through
		// conntrack, which reverses IPVS's DNAT.
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "bridged"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}}})
		tb.DeployEcho(t, ns, framework.EchoOptions{Name: "bclient", Replicas: 1, Nodes: []string{n.Name}, Tolerations: n.tolerations()})
		client := tb.WaitPodsReady(t, ns, map[string]string{"app": "bclient"}, 1)[0]
		url := fmt.Sprintf("http://%s:80/", svc.Spec.ClusterIP)
		get := func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := tb.ExecInPod(ctx, ns, client.Name, "echo", "/echo", "get", url)
			return err
		}
		if err := get(); err != nil {
			t.Fatalf("%s from %s with bridge-nf-call-iptables=1: %v", url, client.Name, err)
		}
		n.exec(t, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=0")
		t.Cleanup(func() { _, _ = n.tryExec("sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1") })
		if err := get(); err == nil {
			t.Fatalf("%s still answers %s with bridge-nf-call-iptables=0: the fault is not real here", url, client.Name)
		}
		r := svctrace(t, tb, svc.Name, "-n", ns, "--from", "pod/"+client.Name)
		c := requireCheck(t, r, report.LayerRoute, report.CodeRTBridgeNFSameNode, n.Name)
		if !strings.Contains(c.Message, "bridge-nf-call-iptables=0") || !strings.Contains(c.Message, "cni0") {
			t.Errorf("%s does not name the setting and the bridge: %q", c.Code, c.Message)
		}
		if r.Exit != 3 {
			t.Errorf("exit %d, want 3", r.Exit)
		}
	})

	t.Run("ClusterIP missing from kube-ipvs0", func(t *testing.T) {
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "no-dummy"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}}})
		n.exec(t, "ip", "addr", "del", svc.Spec.ClusterIP+"/32", "dev", "kube-ipvs0")
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		if out := n.exec(t, "ip", "-o", "addr", "show", "dev", "kube-ipvs0"); strings.Contains(out, svc.Spec.ClusterIP+"/") {
			t.Skipf("kube-proxy re-bound %s before the trace finished; nothing to judge", svc.Spec.ClusterIP)
		}
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSNotOnDummy, n.Name)
		if !strings.Contains(c.Message, svc.Spec.ClusterIP) {
			t.Errorf("%s does not name %s: %q", report.CodeDPIPVSNotOnDummy, svc.Spec.ClusterIP, c.Message)
		}
		if exit != 3 {
			t.Errorf("exit %d, want 3", exit)
		}
	})
}

// waitHealthz waits until kube-proxy's /healthz says every proxier (one
// a family) has synced the changes it queued.
func (n *ipvsNode) waitHealthz(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		out, err := n.tryExec("curl", "-fsS", "-m", "5", "http://127.0.0.1:10256/healthz")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			logTail, _ := exec.Command("tail", "-n", "30", filepath.Join(n.dir, "kube-proxy.log")).Output()
			t.Fatalf("kube-proxy in %s not healthy after %s: %v %s\nkube-proxy.log:\n%s", n.Name, limit, err, out, logTail)
		}
		time.Sleep(2 * time.Second)
	}
}

// restartKubeProxy rewrites the mode in the node's kube-proxy
// configuration and restarts it (node-guest.sh's loop starts it again with
// the new file), then waits until it reports that mode and is healthy.
func (n *ipvsNode) restartKubeProxy(t *testing.T, mode string) {
	t.Helper()
	cfg := filepath.Join(n.dir, "kube-proxy.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "mode: ") {
			l = "mode: " + mode
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(cfg, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	n.exec(t, "sh", "-c", "kill -CONT $(cat /run/kube-proxy.pid); kill $(cat /run/kube-proxy.pid)")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, _ := n.tryExec("curl", "-fsS", "-m", "2", "http://127.0.0.1:10249/proxyMode")
		_, herr := n.tryExec("curl", "-fsS", "-m", "2", "http://127.0.0.1:10256/livez")
		if strings.TrimSpace(got) == mode && herr == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-proxy in %s did not come back in %s mode (proxyMode %q, healthz %v)", n.Name, mode, got, herr)
		}
		time.Sleep(time.Second)
	}
}

// TestIPVSNodeProxyFaults: the real kube-proxy on the IPVS node stopped
// while its endpoints change, and switched between modes, leaving what the
// other mode wrote.
func TestIPVSNodeProxyFaults(t *testing.T) {
	tb := framework.Setup(t)
	ns := tb.Namespace(t)
	n := setupIPVSNode(t, tb, ns)

	t.Run("kube-proxy stopped then an endpoint removed", func(t *testing.T) {
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "frozen"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}}})
		// SIGSTOP: the process is there, its rules stay, it reacts to nothing.
		n.exec(t, "sh", "-c", "kill -STOP $(cat /run/kube-proxy.pid)")
		t.Cleanup(func() { _, _ = n.tryExec("sh", "-c", "kill -CONT $(cat /run/kube-proxy.pid)") })
		gone := n.Pods[sortedKeys(n.Pods)[1]]
		ctx := framework.Context(t, 30*time.Second)
		slices, err := tb.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
		if err != nil || len(slices.Items) != 1 {
			t.Fatalf("slices of %s: %v (%d)", svc.Name, err, len(slices.Items))
		}
		es := slices.Items[0]
		var kept []discoveryv1.Endpoint
		for _, e := range es.Endpoints {
			if e.Addresses[0] != gone {
				kept = append(kept, e)
			}
		}
		es.Endpoints = kept
		if _, err := tb.Client.DiscoveryV1().EndpointSlices(ns).Update(ctx, &es, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPStaleEndpoints, n.Name)
		if !strings.Contains(c.Message, gone) {
			t.Errorf("%s does not name the removed endpoint %s: %q", report.CodeDPStaleEndpoints, gone, c.Message)
		}
		if exit != 3 {
			t.Errorf("exit %d, want 3", exit)
		}
	})

	t.Run("switched to iptables mode: IPVS leftovers", func(t *testing.T) {
		svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "switched"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}}})
		n.restartKubeProxy(t, "iptables")
		t.Cleanup(func() { n.restartKubeProxy(t, "ipvs") })
		// A dual-stack node's first iptables sync writes both families
		// (iptables-legacy in the guest, a few seconds each when the host
		// is loaded).
		deadline := time.Now().Add(180 * time.Second)
		for {
			out, _ := n.tryExec("iptables", "-t", "nat", "-S", "KUBE-SERVICES")
			if strings.Contains(out, svc.Spec.ClusterIP+"/32") && strings.Contains(out, "KUBE-SVC-") {
				break
			}
			if time.Now().After(deadline) {
				logTail, _ := exec.Command("tail", "-n", "30", filepath.Join(n.dir, "kube-proxy.log")).Output()
				t.Fatalf("kube-proxy (iptables) in %s did not program %s: %s\nkube-proxy.log:\n%s", n.Name, svc.Spec.ClusterIP, out, logTail)
			}
			time.Sleep(time.Second)
		}
		// Its first sync of both families can take minutes in the guest
		// (the IPv4 and IPv6 proxiers' iptables-restore runs contend for
		// the xtables lock; seen: "Sync failed" ipFamily=IPv6, retried
		// 30 s later), and while it syncs it may not answer the
		// collector, which then judges the owner by fingerprint. /healthz
		// is 200 only once every family's proxier has synced.
		n.waitHealthz(t, 4*time.Minute)
		// kube-proxy in iptables mode leaves the IPVS proxier's state.
		vip := fmt.Sprintf("%s:80", svc.Spec.ClusterIP)
		if out := n.exec(t, "ipvsadm", "-Ln", "-t", vip); !strings.Contains(out, "Masq") {
			t.Skipf("kube-proxy in iptables mode removed the IPVS virtual server %s; no leftover to judge", vip)
		}
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		owner := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPOwner, n.Name)
		if !strings.Contains(owner.Message, "iptables") {
			t.Errorf("owner %q, want kube-proxy iptables", owner.Message)
		}
		requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, n.Name)
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPLeftovers, n.Name)
		if !strings.Contains(c.Message, "ipvs") || !strings.Contains(c.Message, vip) {
			t.Errorf("%s does not name the IPVS virtual server %s: %q", report.CodeDPLeftovers, vip, c.Message)
		}
		if exit == 3 {
			t.Errorf("exit 3: leftovers that do not capture the Service are a warning, not a failure (%s)", tr.Verdict.Code)
		}

		// Back to IPVS mode, with a KUBE-SVC jump for this Service in nat
		// KUBE-SERVICES (as an old iptables-save restored by hand would put
		// it, or as the iptables proxier left it until the IPVS proxier's
		// first sync): it captures the ClusterIP before IPVS sees it.
		n.restartKubeProxy(t, "ipvs")
		if out := n.exec(t, "iptables", "-t", "nat", "-S", "KUBE-SERVICES"); strings.Contains(out, "KUBE-SVC-") {
			t.Logf("right after the switch back, KUBE-SERVICES still jumps to KUBE-SVC chains:\n%s", out)
		}
		comment := fmt.Sprintf("%s/%s:http cluster IP", ns, svc.Name)
		n.exec(t, "sh", "-c", fmt.Sprintf("iptables -t nat -N KUBE-SVC-SVTBIPVSLEFT00 2>/dev/null; "+
			"iptables -t nat -A KUBE-SVC-SVTBIPVSLEFT00 -p tcp -j DNAT --to-destination %s:%d && "+
			"iptables -t nat -I KUBE-SERVICES 1 -d %s/32 -p tcp --dport 80 -m comment --comment '%s' -j KUBE-SVC-SVTBIPVSLEFT00",
			n.Pods[sortedKeys(n.Pods)[0]], framework.EchoHTTPPort, svc.Spec.ClusterIP, comment))
		t.Cleanup(func() {
			_, _ = n.tryExec("sh", "-c", fmt.Sprintf("iptables -t nat -D KUBE-SERVICES -d %s/32 -p tcp --dport 80 -m comment --comment '%s' -j KUBE-SVC-SVTBIPVSLEFT00; "+
				"iptables -t nat -F KUBE-SVC-SVTBIPVSLEFT00; iptables -t nat -X KUBE-SVC-SVTBIPVSLEFT00", svc.Spec.ClusterIP, comment))
		})
		tr, _ = traceIPVS(t, tb, n, ns, svc.Name)
		c = requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPLeftovers, n.Name)
		if !strings.Contains(c.Message, "iptables") || !strings.Contains(c.Message, "ipvs is active") {
			t.Errorf("%s does not say IPVS is active and iptables holds this Service: %q", report.CodeDPLeftovers, c.Message)
		}
	})
}

// TestIPVSNodeKubelet: the IPVS node is a node like the others. Its own
// kubelet registered it, a Deployment spread over all three nodes runs a
// replica there, and a NodePort Service over those Pods traced with
// --all-nodes (a collector Pod on each node, the UML one included) passes,
// with the IPVS node's datapath read from the IPVS proxier's rules.
func TestIPVSNodeKubelet(t *testing.T) {
	tb := framework.Setup(t)
	// Told before setupIPVSNode, which waits for the node's kube-proxy to
	// come back from the previous test's Node deletion.
	if out, err := exec.Command("bash", filepath.Join(tb.RepoRoot, "test", "testbed", "ipvs-node.sh"), "env").Output(); err == nil && !strings.Contains(string(out), "IPVS_NODE_KUBELET=1") {
		t.Skip("SVTB_IPVS_KUBELET=0: the IPVS node runs no kubelet")
	}
	ns := tb.Namespace(t)
	n := setupIPVSNode(t, tb, ns)
	if !n.kubelet {
		t.Skip("SVTB_IPVS_KUBELET=0: the IPVS node runs no kubelet")
	}
	nodes := append(tb.NodeNames(), n.Name)
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "web", Replicas: int32(len(nodes)), Nodes: nodes, Tolerations: n.tolerations()})
	pods := tb.WaitPodsReady(t, ns, map[string]string{"app": "web"}, len(nodes))
	on := map[string]bool{}
	for _, p := range pods {
		on[p.Spec.NodeName] = true
	}
	if !on[n.Name] {
		t.Fatalf("no replica on %s: %v", n.Name, on)
	}
	svc := tb.CreateService(t, ns, framework.NewService("web", "web", framework.NodePort()))
	tb.WaitReadyEndpoints(t, ns, svc.Name, len(nodes))
	vip := fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	np := net.JoinHostPort(n.IP, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(time.Second) {
		a, _ := n.tryExec("ipvsadm", "-Ln", "-t", vip)
		b, _ := n.tryExec("ipvsadm", "-Ln", "-t", np)
		if strings.Count(a, "Masq") == len(nodes) && strings.Count(b, "Masq") == len(nodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-proxy (ipvs) in %s did not program %s and %s with %d real servers:\n%s\n%s", n.Name, vip, np, len(nodes), a, b)
		}
	}
	for _, extra := range [][]string{nil, {"--all-nodes"}} {
		r := svctrace(t, tb, append([]string{"web", "-n", ns}, extra...)...)
		requireNoFail(t, r)
		if r.Trace == nil {
			continue
		}
		refuseTraceCheck(t, r.Trace, report.LayerDatapath, report.CodeDPNodePortMissing)
		if extra == nil {
			continue
		}
		owner := requireTraceCheck(t, r.Trace, report.LayerDatapath, report.CodeDPOwner, n.Name)
		if !strings.Contains(owner.Message, "ipvs") {
			t.Errorf("owner on %s: %q", n.Name, owner.Message)
		}
		requireTraceCheck(t, r.Trace, report.LayerDatapath, report.CodeDPRulesMatch, n.Name)
		for _, node := range tb.NodeNames() {
			requireTraceCheck(t, r.Trace, report.LayerDatapath, report.CodeDPRulesMatch, node)
		}
	}
}

// TestIPVSNodeTracedMidSync traces the IPVS node right after an endpoint
// leaves the Service's EndpointSlice, while the real kube-proxy there (in
// user-mode Linux, where a sync takes seconds) has not applied the change
// yet: the rules keep that endpoint, and the trace must say kube-proxy has
// not synced yet (a warning), not that the datapath kept it (DP008, a
// failure). Once kube-proxy has synced, the rules match. A trace that came
// after the sync must find the rules matching; the endpoint is brought back
// (untraced) and removed again, at most three removals, until one trace
// caught kube-proxy before its sync. Returns are not traced: an endpoint
// brought back while its real server still drains at weight 0 was once read
// before any of kube-proxy's metrics showed the change (a hand-made slice has
// no trigger time, its managed-field time whole seconds only).
func TestIPVSNodeTracedMidSync(t *testing.T) {
	tb := framework.Setup(t)
	ns := tb.Namespace(t)
	n := setupIPVSNode(t, tb, ns)
	svc := ipvsService(t, tb, n, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "midsync"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}}})
	vip := fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port)
	moved := n.Pods[sortedKeys(n.Pods)[1]]
	ctx := framework.Context(t, 5*time.Minute)
	setReady := func(ready bool) {
		slices, err := tb.Client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc.Name})
		if err != nil || len(slices.Items) != 1 {
			t.Fatalf("slices of %s: %v (%d)", svc.Name, err, len(slices.Items))
		}
		es := slices.Items[0]
		for i := range es.Endpoints {
			if es.Endpoints[i].Addresses[0] == moved {
				es.Endpoints[i].Conditions.Ready = ptr.To(ready)
			}
		}
		if _, err := tb.Client.DiscoveryV1().EndpointSlices(ns).Update(ctx, &es, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// waitWeighted waits for kube-proxy to have applied the change. A
	// removed real server the trace's probes connected through stays, weight
	// 0, until its connections expire (kube-proxy's graceful termination):
	// only the weighted ones count.
	waitWeighted := func(want int) {
		err := framework.Eventually(ctx, 90*time.Second, time.Second, func(context.Context) error {
			list, _ := n.tryExec("ipvsadm", "-Ln", "-t", vip)
			got := 0
			for _, l := range strings.Split(list, "\n") {
				// "  -> 10.244.3.11:8080  Masq  1  0  0": forward, weight, conns
				if f := strings.Fields(l); len(f) >= 4 && f[2] == "Masq" && f[3] != "0" {
					got++
				}
			}
			if got != want {
				return fmt.Errorf("%d weighted real servers, want %d:\n%s", got, want, list)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("kube-proxy never applied the change: %v", err)
		}
	}
	caught := false
	for removal := 1; removal <= 3 && !caught; removal++ {
		if removal > 1 {
			setReady(true)
			waitWeighted(len(n.Pods))
		}
		setReady(false)
		tr, exit := traceIPVS(t, tb, n, ns, svc.Name)
		refuseTraceCheck(t, tr, report.LayerDatapath, report.CodeDPMissingEndpoints)
		refuseTraceCheck(t, tr, report.LayerDatapath, report.CodeDPStaleEndpoints)
		if c := check(tr, report.LayerDatapath, report.CodeDPSyncPending, n.Name); c != nil {
			caught = true
			t.Logf("removal %d: %s", removal, c.Message)
			if c.Status != report.StatusWarn || !strings.Contains(c.Message, moved) {
				t.Errorf("%s is %s and names %q, want a warning naming %s", c.Code, c.Status, c.Message, moved)
			}
			if exit == 3 {
				t.Errorf("exit 3 mid-sync: %s %s", tr.Verdict.Code, tr.Verdict.Summary)
			}
		} else {
			requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, n.Name)
			t.Logf("removal %d: kube-proxy had synced before the read", removal)
		}
		waitWeighted(len(n.Pods) - 1)
	}
	if !caught {
		t.Fatalf("no trace caught kube-proxy before it applied a change (3 removals)")
	}
	// Synced now: the same Service's rules match.
	err := framework.Eventually(ctx, 90*time.Second, 2*time.Second, func(context.Context) error {
		tr, _ := traceIPVS(t, tb, n, ns, svc.Name)
		if check(tr, report.LayerDatapath, report.CodeDPRulesMatch, n.Name) == nil {
			return fmt.Errorf("no %s yet: %s", report.CodeDPRulesMatch, summarize(tr, report.LayerDatapath))
		}
		return nil
	})
	if err != nil {
		t.Errorf("after kube-proxy synced: %v", err)
	}
}

// TestIPVSNodeDualStack: on a dual-stack testbed the IPVS node's kube-proxy
// runs both families (one proxier each); a RequireDualStack Service with an
// IPv4 and an IPv6 slice (either family first) is programmed in both, and the
// trace judges each family against its own virtual server: no FAIL, a rules
// match per family; a SingleStack IPv6 Service gets the IPv6 match alone.
// A fault in one family (a real server removed, the ClusterIP unbound from
// kube-ipvs0) is named with that family's addresses and leaves the other
// family's rules matched.
func TestIPVSNodeDualStack(t *testing.T) {
	tb := framework.Setup(t)
	requireDualStack(t, tb)
	ns := tb.Namespace(t)
	n := setupIPVSNode(t, tb, ns)
	if len(n.Pods6) == 0 {
		t.Fatal("a dual-stack testbed whose IPVS node has no IPv6 Pod addresses (ipvs-node.sh env lists no IPVS_POD6)")
	}
	// service creates a Service of the families (RequireDualStack for
	// two, SingleStack for one) with a slice of the node's Pods per family.
	service := func(t *testing.T, name string, families ...corev1.IPFamily) *corev1.Service {
		t.Helper()
		policy := corev1.IPFamilyPolicyRequireDualStack
		if len(families) == 1 {
			policy = corev1.IPFamilyPolicySingleStack
		}
		out := tb.CreateService(t, ns, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{ipvsPort()}, IPFamilyPolicy: &policy, IPFamilies: families}})
		if len(out.Spec.ClusterIPs) != len(families) {
			t.Fatalf("%s Service of %v got ClusterIPs %v", policy, families, out.Spec.ClusterIPs)
		}
		for _, f := range families {
			if f == corev1.IPv6Protocol {
				ipvsSlice(t, tb, n, out, n.slice(out, discoveryv1.AddressTypeIPv6, n.Pods6))
			} else {
				ipvsSlice(t, tb, n, out, n.slice(out, discoveryv1.AddressTypeIPv4, n.Pods))
			}
		}
		return out
	}
	dual := func(t *testing.T, name string) *corev1.Service {
		t.Helper()
		return service(t, name, corev1.IPv4Protocol, corev1.IPv6Protocol)
	}
	// matched counts the node's DP015 checks per family, by their JSON
	// family field.
	matched := func(tr *report.ServiceTrace) (v4, v6 int) {
		for _, c := range tr.Layer(report.LayerDatapath).Checks {
			if c.Node != n.Name || c.Code != report.CodeDPRulesMatch {
				continue
			}
			switch c.Family {
			case "IPv6":
				v6++
			case "IPv4":
				v4++
			default:
				t.Errorf("%s on %s carries no family: %s", c.Code, c.Node, c.Message)
			}
		}
		return v4, v6
	}

	// Healthy Services of every family shape kube-proxy's IPVS proxier
	// serves: both families in either order, and IPv6 alone (its IPv4
	// proxier then has nothing for the Service).
	for _, tt := range []struct {
		name     string
		families []corev1.IPFamily
		v4, v6   int
	}{
		{"healthy", []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}, 1, 1},
		{"healthy IPv6 first", []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}, 1, 1},
		{"healthy SingleStack IPv6", []corev1.IPFamily{corev1.IPv6Protocol}, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := service(t, "dual-"+strconv.Itoa(len(tt.families))+strings.ToLower(string(tt.families[0])), tt.families...)
			tr, exit := traceIPVS(t, tb, n, ns, out.Name)
			for _, c := range tr.Layer(report.LayerDatapath).Checks {
				if c.Status == report.StatusFail {
					t.Errorf("%s on %s: %s", c.Code, c.Node, c.Message)
				}
			}
			if v4, v6 := matched(tr); v4 != tt.v4 || v6 != tt.v6 {
				t.Errorf("want %d IPv4 and %d IPv6 %s on %s, got %d and %d", tt.v4, tt.v6, report.CodeDPRulesMatch, n.Name, v4, v6)
			}
			if exit == 3 {
				t.Errorf("exit 3 on a healthy Service of %v: %s (%s)", tt.families, tr.Verdict.Summary, tr.Verdict.Code)
			}
		})
	}

	t.Run("IPv6 real server removed", func(t *testing.T) {
		out := dual(t, "dual-rs")
		vip := net.JoinHostPort(out.Spec.ClusterIPs[1], "80")
		gone := net.JoinHostPort(n.Pods6[sortedKeys(n.Pods6)[1]], strconv.Itoa(framework.EchoHTTPPort))
		n.exec(t, "ipvsadm", "-d", "-t", vip, "-r", gone)
		tr, exit := traceIPVS(t, tb, n, ns, out.Name)
		if o := n.exec(t, "ipvsadm", "-Ln", "-t", vip); strings.Contains(o, gone) {
			t.Skipf("kube-proxy re-added %s before the trace finished; nothing to judge", gone)
		}
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPMissingEndpoints, n.Name)
		if !strings.Contains(c.Message, gone) || !strings.Contains(c.Message, "IPv6") || c.Family != "IPv6" {
			t.Errorf("%s does not name %s and its family (family field %q): %q", c.Code, gone, c.Family, c.Message)
		}
		for _, c := range tr.Layer(report.LayerDatapath).Checks {
			if c.Code == report.CodeDPMissingEndpoints && c.Node == n.Name && !strings.Contains(c.Message, "IPv6") {
				t.Errorf("the IPv4 virtual server is blamed too: %s", c.Message)
			}
		}
		if v4, _ := matched(tr); v4 != 1 {
			t.Errorf("the IPv4 family's rules are not matched (%d %s)", v4, report.CodeDPRulesMatch)
		}
		if exit != 3 {
			t.Errorf("exit %d, want 3", exit)
		}
	})

	t.Run("IPv6 ClusterIP missing from kube-ipvs0", func(t *testing.T) {
		out := dual(t, "dual-dummy")
		v6 := out.Spec.ClusterIPs[1]
		n.exec(t, "ip", "-6", "addr", "del", v6+"/128", "dev", "kube-ipvs0")
		tr, exit := traceIPVS(t, tb, n, ns, out.Name)
		if o := n.exec(t, "ip", "-6", "-o", "addr", "show", "dev", "kube-ipvs0"); strings.Contains(o, v6+"/") {
			t.Skipf("kube-proxy re-bound %s before the trace finished; nothing to judge", v6)
		}
		c := requireTraceCheck(t, tr, report.LayerDatapath, report.CodeDPIPVSNotOnDummy, n.Name)
		// Only the IPv6 address is named unbound; the link's bound
		// addresses (the IPv4 ClusterIP among them) follow in parentheses.
		if !strings.HasPrefix(c.Message, v6+" not bound") {
			t.Errorf("%s does not name %s alone as not bound: %q", c.Code, v6, c.Message)
		}
		if exit != 3 {
			t.Errorf("exit %d, want 3", exit)
		}
	})
}
