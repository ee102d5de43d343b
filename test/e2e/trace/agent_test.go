package trace_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/nodes"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// agentRuns is how many traces of each transport the speed comparison times.
const agentRuns = 5

// TestNodeAgent installs the node agent with the collector image the
// testbed imports, traces a healthy Service through it and through
// collector Pods (--agent never), and expects the same verdict and each run
// on the transport it asked for (the ratio of the medians of five each is
// logged with the load average), the restricted user
// served by the agent with its added Role and by collector Pods, with a note,
// without it, and an uninstall that leaves nothing.
func TestNodeAgent(t *testing.T) {
	tb := framework.Setup(t)
	ns, _ := deployWeb(t, tb, 2, nil)

	install := func() {
		t.Helper()
		stdout, stderr, exit := run(t, "agent", "install", "--kubeconfig", tb.Kubeconfig, "--image", CollectorImage, "--timeout", "3m")
		if exit != 0 || !strings.Contains(stdout, "daemonset.apps/"+nodes.AgentNameValue) {
			t.Fatalf("agent install: exit %d, stdout %q, stderr %q", exit, stdout, stderr)
		}
	}
	uninstall := func() {
		t.Helper()
		if _, stderr, exit := run(t, "agent", "uninstall", "--kubeconfig", tb.Kubeconfig, "--timeout", "2m"); exit != 0 {
			t.Errorf("agent uninstall: exit %d, stderr %q", exit, stderr)
		}
	}
	install()
	t.Cleanup(func() { _, _, _ = run(t, "agent", "uninstall", "--kubeconfig", tb.Kubeconfig, "--timeout", "2m") })
	t.Run("idle cost", func(t *testing.T) { measureIdleAgents(t, 20*time.Second) })

	transports := func(r result) map[string]string {
		out := map[string]string{}
		if r.Trace == nil || r.Trace.Metadata.Collector == nil {
			return out
		}
		for _, n := range r.Trace.Metadata.Collector.Nodes {
			if n.Inspected {
				out[n.Node] = n.Transport
			}
		}
		return out
	}
	timed := func(args ...string) (result, time.Duration) {
		t.Helper()
		start := time.Now()
		r := svctrace(t, tb, args...)
		return r, time.Since(start)
	}
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}

	var viaAgent, viaPods []time.Duration
	var agentVerdict, podVerdict report.Status
	for i := range agentRuns {
		r, d := timed("web", "-n", ns)
		requireNoFail(t, r)
		for node, tr := range transports(r) {
			if tr != nodes.TransportAgent {
				t.Errorf("run %d: node %s used %q with the agent installed", i, node, tr)
			}
		}
		agentVerdict = r.Trace.Verdict.Status
		viaAgent = append(viaAgent, d)

		r, d = timed("web", "-n", ns, "--agent", "never")
		requireNoFail(t, r)
		for node, tr := range transports(r) {
			if tr != nodes.TransportEphemeral {
				t.Errorf("run %d: node %s used %q with --agent never", i, node, tr)
			}
		}
		podVerdict = r.Trace.Verdict.Status
		viaPods = append(viaPods, d)
	}
	if agentVerdict != podVerdict {
		t.Errorf("verdict %s through the agent, %s through collector Pods", agentVerdict, podVerdict)
	}
	ma, mp := median(viaAgent), median(viaPods)
	t.Logf("median of %d traces: agent %s, collector Pods %s, ratio %.1f×; load average %s", agentRuns, ma, mp, float64(mp)/float64(ma), loadAverage())
	// The ratio is a measurement (the README quotes it), not an assertion:
	// the transports above say each run took the path it should.

	t.Run("restricted user without the agent Role falls back with a note", func(t *testing.T) {
		r := svctraceWith(t, tb.RestrictedKubeconfig(), "web", "-n", ns)
		requireNoFail(t, r)
		for _, n := range r.Trace.Metadata.Collector.Nodes {
			if n.Inspected && (n.Transport != nodes.TransportEphemeral || !strings.Contains(n.TransportNote, "pods/exec")) {
				t.Errorf("node %s: transport %q note %q, want a collector Pod and a note naming pods/exec", n.Node, n.Transport, n.TransportNote)
			}
		}
	})

	t.Run("restricted user with the agent Role uses the agent", func(t *testing.T) {
		ctx := framework.Context(t, time.Minute)
		if _, err := tb.KubectlRun(ctx, "-n", collectorNS, "create", "rolebinding", "svctrace-agent-user-e2e",
			"--role=svctrace-agent-user", "--user=svctrace-user"); err != nil {
			t.Fatalf("bind svctrace-agent-user (deploy/rbac.yaml applied by the testbed?): %v", err)
		}
		t.Cleanup(func() {
			_ = tb.Client.RbacV1().RoleBindings(collectorNS).Delete(context.Background(), "svctrace-agent-user-e2e", metav1.DeleteOptions{})
		})
		r := svctraceWith(t, tb.RestrictedKubeconfig(), "web", "-n", ns)
		requireNoFail(t, r)
		for node, tr := range transports(r) {
			if tr != nodes.TransportAgent {
				t.Errorf("node %s used %q with the agent Role bound", node, tr)
			}
		}
	})

	t.Run("uninstall leaves nothing", func(t *testing.T) {
		uninstall()
		ctx := framework.Context(t, time.Minute)
		if _, err := tb.Client.AppsV1().DaemonSets(collectorNS).Get(ctx, nodes.AgentNameValue, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("agent DaemonSet after uninstall: %v", err)
		}
		pods, err := tb.Client.CoreV1().Pods(collectorNS).List(ctx, metav1.ListOptions{LabelSelector: nodes.AgentSelector})
		if err != nil || len(pods.Items) != 0 {
			t.Errorf("agent Pods after uninstall: %v, %v", len(pods.Items), err)
		}
		assertNoCollectorPods(t, tb)
	})
}

// measureIdleAgents reads the node agents' processes (svctrace-collector
// --wait, found in /proc: the testbed's nodes share this host's PID space)
// while no trace runs, and logs each one's resident memory and the CPU it
// used over the window: what the agent costs a node between traces.
func measureIdleAgents(t *testing.T, window time.Duration) {
	type sample struct{ rssKiB, ticks int64 }
	read := func() map[string]sample {
		out := map[string]sample{}
		dirs, _ := os.ReadDir("/proc")
		for _, d := range dirs {
			pid := d.Name()
			if _, err := strconv.Atoi(pid); err != nil {
				continue
			}
			cmd, err := os.ReadFile("/proc/" + pid + "/cmdline")
			if err != nil || !strings.Contains(string(cmd), "svctrace-collector\x00--wait") {
				continue
			}
			var s sample
			status, _ := os.ReadFile("/proc/" + pid + "/status")
			for _, l := range strings.Split(string(status), "\n") {
				if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
					s.rssKiB, _ = strconv.ParseInt(f[1], 10, 64)
				}
			}
			stat, _ := os.ReadFile("/proc/" + pid + "/stat")
			if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
				// Fields 14 and 15 (utime, stime) after the command's ")".
				if f := strings.Fields(string(stat)[i+1:]); len(f) > 12 {
					u, _ := strconv.ParseInt(f[11], 10, 64)
					st, _ := strconv.ParseInt(f[12], 10, 64)
					s.ticks = u + st
				}
			}
			out[pid] = s
		}
		return out
	}
	before := read()
	if len(before) == 0 {
		t.Fatal("no node agent process (svctrace-collector --wait) found in /proc")
	}
	time.Sleep(window)
	after := read()
	for pid, a := range after {
		b, ok := before[pid]
		if !ok {
			continue
		}
		// The kernel counts CPU time in USER_HZ ticks, 100 a second.
		t.Logf("agent pid %s idle for %s: RSS %d KiB, CPU %d ms (%.3f%% of a core)", pid, window, a.rssKiB,
			(a.ticks-b.ticks)*10, float64(a.ticks-b.ticks)*10/float64(window.Milliseconds())*100)
	}
}

// loadAverage is the host's 1, 5 and 15 minute load average.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}
