package trace_test

import (
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestAppListensOnlyOnLoopback: the app binds 127.0.0.1 (its readiness probe
// runs inside the Pod, so it is Ready and in the EndpointSlice), and the
// Service's traffic is refused. The collector on the Pod's node reads the
// Pod's sockets through /proc/<pid>/net (hostPID, no extra capability) and
// says so.
func TestAppListensOnlyOnLoopback(t *testing.T) {
	tb := framework.Setup(t)
	n := tb.Nodes[0]
	ns := tb.Namespace(t)
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "web", Replicas: 1, Nodes: []string{n.Name}, Bind: "127.0.0.1"})
	tb.CreateService(t, ns, framework.NewService("web", "web"))
	tb.WaitReadyEndpoints(t, ns, "web", 1)
	r := svctrace(t, tb, "web", "-n", ns)
	if r.Exit != 3 {
		t.Errorf("exit %d, want 3", r.Exit)
	}
	c := requireCheck(t, r, report.LayerEndpoints, report.CodeEpsLoopbackOnly, n.Name)
	if !strings.Contains(c.Message, "127.0.0.1:8080/TCP") {
		t.Errorf("message does not show the loopback listener: %q", c.Message)
	}
	if l := evidenceItems(c, "listeners"); len(l) != 1 || l[0] != "127.0.0.1:8080/TCP" {
		t.Errorf("listeners in evidence %v, want only 127.0.0.1:8080/TCP", l)
	}
	if d := check(r.Trace, report.LayerEndpoints, report.CodeEpsRefused, ""); d != nil {
		t.Errorf("the refusal the sockets explain is reported twice: %s", d.Message)
	}
	if r.Trace.Verdict.FirstFailingLayer != report.LayerEndpoints || !strings.Contains(r.Trace.Verdict.LikelyCause, "only on") {
		t.Errorf("verdict %+v, want the loopback finding as the likely cause", r.Trace.Verdict)
	}
	if col := r.Trace.Metadata.Collector; col == nil || !col.HostPID || col.Profile != "netadmin" {
		t.Errorf("collector metadata %+v, want the netadmin profile with hostPID", col)
	}
}

// evidenceItems returns a check's evidence list field.
func evidenceItems(c *report.Check, key string) []string {
	if c == nil || c.Evidence == nil {
		return nil
	}
	for _, f := range c.Evidence.Fields {
		if f.Key == key {
			return f.Items
		}
	}
	return nil
}
