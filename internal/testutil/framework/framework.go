// Package framework connects end-to-end tests to the svctrace testbed (a local
// two-node cluster, see test/testbed/README.md) and gives them what they need
// to build the situations svctrace must explain: a namespace per test, the echo
// app on chosen nodes, Services of any shape, commands inside node network
// namespaces and Pods, and fault injection where every fault has an undo that
// runs at test cleanup.
//
// Tests run only when SVCTRACE_E2E=1. With it set, an unreachable testbed is a
// test failure, not a skip.
package framework

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Node is one testbed node: a real kubelet in its own network namespace.
type Node struct {
	Name  string // Kubernetes node name, equal to Netns
	Netns string // /var/run/netns/<Netns>
	// IP and PodCIDR are the primary IP family's; IPs and PodCIDRs every
	// family's the testbed runs, primary first.
	IP        string
	IPs       []string
	PodCIDR   string
	PodCIDRs  []string
	Zone      string
	ProxyMode string // iptables or nftables
}

// Testbed is a connection to the running testbed.
type Testbed struct {
	// CNI is the Pod network between the kubelet nodes: "flannel" (VXLAN
	// through the real flanneld) or "ptp" (static routes).
	CNI string
	// IPFamilies are the cluster's IP families, primary first: "ipv4",
	// "ipv6" or both (SVTB_IP_FAMILIES of its bring-up).
	IPFamilies []string
	// KubeDNSIPs are kube-dns's ClusterIPs, primary first.
	KubeDNSIPs []string
	Kubeconfig string
	Config     *rest.Config
	Client     kubernetes.Interface
	Nodes      []Node
	KubeDNSIP  string
	// Kubectl is the pinned kubectl from the testbed's binary cache.
	Kubectl string
	// EchoClient is the echo binary, runnable on the nodes as a probe client.
	EchoClient string
	RepoRoot   string
	info       map[string]string
}

var (
	once     sync.Once
	shared   *Testbed
	setupErr error
)

// Enabled reports whether end-to-end tests were asked for.
func Enabled() bool { return os.Getenv("SVCTRACE_E2E") == "1" }

// Setup returns the shared testbed connection. It skips the test unless
// SVCTRACE_E2E=1 and fails it when the testbed cannot be reached.
func Setup(t testing.TB) *Testbed {
	t.Helper()
	if !Enabled() {
		t.Skip("end-to-end test: set SVCTRACE_E2E=1 and bring the testbed up (make e2e)")
	}
	once.Do(func() { shared, setupErr = connect() })
	if setupErr != nil {
		t.Fatalf("testbed not reachable (make testbed-up): %v", setupErr)
	}
	return shared
}

// RepoRoot finds the repository root from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "test", "testbed", "lib.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("repository root (with test/testbed/lib.sh) not found above the working directory")
		}
		dir = parent
	}
}

func connect() (*Testbed, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	kc := os.Getenv("SVCTRACE_KUBECONFIG")
	if kc == "" {
		kc = filepath.Join(root, ".testbed", "kubeconfig")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kc, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return nil, fmt.Errorf("apiserver /readyz via %s: %w", cfg.Host, err)
	}
	tb := &Testbed{Kubeconfig: kc, Config: cfg, Client: cs, RepoRoot: root}
	out, err := exec.Command("bash", filepath.Join(root, "test", "testbed", "ctl.sh"), "info").Output()
	if err != nil {
		return nil, fmt.Errorf("ctl.sh info: %w", err)
	}
	tb.info = map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			tb.info[k] = v
		}
	}
	for _, n := range strings.Fields(tb.info["NODES"]) {
		k := strings.ToUpper(strings.ReplaceAll(n, "-", "_"))
		tb.Nodes = append(tb.Nodes, Node{Name: n, Netns: tb.info[k+"_NETNS"], IP: tb.info[k+"_IP"],
			IPs: list(tb.info[k+"_IPS"], tb.info[k+"_IP"]), PodCIDR: tb.info[k+"_POD_CIDR"],
			PodCIDRs: list(tb.info[k+"_POD_CIDRS"], tb.info[k+"_POD_CIDR"]),
			Zone:     tb.info[k+"_ZONE"], ProxyMode: tb.info[k+"_PROXY_MODE"]})
	}
	if len(tb.Nodes) == 0 {
		return nil, fmt.Errorf("ctl.sh info listed no nodes")
	}
	tb.KubeDNSIP, tb.Kubectl, tb.EchoClient = tb.info["KUBE_DNS_IP"], tb.info["KUBECTL"], tb.info["ECHO_CLIENT"]
	tb.CNI = tb.info["CNI"]
	tb.IPFamilies = list(tb.info["IP_FAMILIES"], "ipv4")
	tb.KubeDNSIPs = list(tb.info["KUBE_DNS_IPS"], tb.KubeDNSIP)
	return tb, nil
}

// list splits a comma-separated ctl.sh info value; def stands for a
// missing one (a testbed brought up before the key existed).
func list(v, def string) []string {
	if v == "" {
		v = def
	}
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// HasFamily reports whether the cluster runs that IP family ("ipv4" or
// "ipv6").
func (tb *Testbed) HasFamily(family string) bool {
	for _, f := range tb.IPFamilies {
		if f == family {
			return true
		}
	}
	return false
}

// DualStack reports whether the cluster runs both IP families.
func (tb *Testbed) DualStack() bool { return tb.HasFamily("ipv4") && tb.HasFamily("ipv6") }

// IPOf returns the node's address in family ("ipv4" or "ipv6"), or "".
func (n Node) IPOf(family string) string {
	for _, ip := range n.IPs {
		if strings.Contains(ip, ":") == (family == "ipv6") {
			return ip
		}
	}
	return ""
}

// Node returns the testbed node with that name.
func (tb *Testbed) Node(t testing.TB, name string) Node {
	t.Helper()
	for _, n := range tb.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("no testbed node %q", name)
	return Node{}
}

// NodeNames lists the testbed's node names in order (node1 first).
func (tb *Testbed) NodeNames() []string {
	var names []string
	for _, n := range tb.Nodes {
		names = append(names, n.Name)
	}
	return names
}

// Context returns a context bounded by d and cancelled at test cleanup.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Namespace creates a fresh namespace for this test and deletes it at cleanup.
func (tb *Testbed) Namespace(t testing.TB) string {
	t.Helper()
	ctx := Context(t, time.Minute)
	ns, err := tb.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "e2e-" + sanitize(t.Name()) + "-",
		Labels:       map[string]string{"svctrace.io/e2e": "true"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = tb.Client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

func sanitize(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = strings.Trim(out[:40], "-")
	}
	return out
}

// Run executes a command with a timeout and returns stdout; stderr is in the error.
func Run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// ExecInNode runs a command inside a node's network namespace (nsenter --net,
// so it shares the host's mount namespace, like the node's own daemons).
func (tb *Testbed) ExecInNode(ctx context.Context, node string, args ...string) (string, error) {
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("ExecInNode needs root")
	}
	return Run(ctx, "nsenter", append([]string{"--net=/var/run/netns/" + node, "--"}, args...)...)
}

// ExecInPod runs a command in a Pod's container with the testbed's pinned kubectl.
func (tb *Testbed) ExecInPod(ctx context.Context, ns, pod, container string, args ...string) (string, error) {
	a := []string{"--kubeconfig", tb.Kubeconfig, "-n", ns, "exec", pod}
	if container != "" {
		a = append(a, "-c", container)
	}
	return Run(ctx, tb.Kubectl, append(append(a, "--"), args...)...)
}

// Kubectl runs the pinned kubectl against the testbed.
func (tb *Testbed) KubectlRun(ctx context.Context, args ...string) (string, error) {
	return Run(ctx, tb.Kubectl, append([]string{"--kubeconfig", tb.Kubeconfig}, args...)...)
}

// Ctl runs test/testbed/ctl.sh (the testbed's fault-injection API).
func (tb *Testbed) Ctl(ctx context.Context, args ...string) (string, error) {
	return Run(ctx, "bash", append([]string{filepath.Join(tb.RepoRoot, "test", "testbed", "ctl.sh")}, args...)...)
}

// RestrictedKubeconfig is the kubeconfig of user svctrace-user, bound only to
// the RBAC svctrace documents (test/testbed/manifests/rbac-svctrace.yaml).
func (tb *Testbed) RestrictedKubeconfig() string {
	if p := os.Getenv("SVCTRACE_KUBECONFIG_RESTRICTED"); p != "" {
		return p
	}
	return filepath.Join(filepath.Dir(tb.Kubeconfig), "kubeconfig-restricted")
}

// RestrictedClient connects as svctrace-user (see RestrictedKubeconfig).
func (tb *Testbed) RestrictedClient(t testing.TB) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", tb.RestrictedKubeconfig())
	if err != nil {
		t.Fatalf("restricted kubeconfig: %v", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cs
}
