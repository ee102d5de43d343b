package teardown

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// offlineBundle is a trace of a faulty Service saved while the testbed
// runs, to be judged again once it is down.
type offlineBundle struct {
	bin, dir string
	saved    *report.ServiceTrace
}

// runJSON runs the plugin binary and decodes its -o json output.
func runJSON(t *testing.T, bin string, env []string, args ...string) (*report.ServiceTrace, int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	exit := 0
	if ee, ok := err.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running %s: %v", bin, err)
	}
	var tr report.ServiceTrace
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatalf("%v: output is not a ServiceTrace (exit %d): %v\n%s\n%s", args, exit, err, out.String(), errb.String())
	}
	return &tr, exit, errb.String()
}

// saveFaultyTrace deploys an app listening on the wrong port behind a
// Service and saves its trace (--save), collectors and all.
func saveFaultyTrace(t *testing.T, root string) *offlineBundle {
	t.Helper()
	tb := framework.Setup(t)
	b := &offlineBundle{bin: filepath.Join(t.TempDir(), "kubectl-svctrace"), dir: filepath.Join(t.TempDir(), "bundle")}
	build := exec.Command("go", "build", "-o", b.bin, "./cmd/kubectl-svctrace")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ns := tb.Namespace(t)
	n := tb.Nodes[0]
	tb.DeployEcho(t, ns, framework.EchoOptions{Name: "web", Replicas: 1, Nodes: []string{n.Name}, ListenHTTPPort: 8081})
	tb.CreateService(t, ns, framework.NewService("web", "web"))
	tb.WaitReadyEndpoints(t, ns, "web", 1)
	tr, exit, stderr := runJSON(t, b.bin, os.Environ(), "web", "-n", ns, "--kubeconfig", tb.Kubeconfig,
		"--image", "svctrace.local/collector:dev", "-o", "json", "--timeout", "150s", "--save", b.dir)
	if exit != 3 || tr.Verdict.Code == "" {
		t.Fatalf("the faulty Service traced exit %d verdict %s %s, want exit 3 with a failing code\n%s", exit, tr.Verdict.Status, tr.Verdict.Code, stderr)
	}
	b.saved = tr
	// The namespace goes now: the cluster it lived in is about to go.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = tb.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	return b
}

// judgeOffline runs analyze on the bundle with no cluster to reach (the
// testbed is down, and no kubeconfig is given) and checks it judges the
// trace as it was judged when it was taken.
func (b *offlineBundle) judgeOffline(t *testing.T) {
	t.Helper()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KUBECONFIG=" + filepath.Join(t.TempDir(), "none")}
	got, exit, stderr := runJSON(t, b.bin, env, "analyze", b.dir, "-o", "json")
	if exit != 3 {
		t.Errorf("analyze with the testbed down: exit %d, want 3 (the saved trace's fault)\n%s", exit, stderr)
	}
	w, g := b.saved.Verdict, got.Verdict
	t.Logf("saved with the testbed up: %s %s on %s; judged again with it down: %s %s on %s", w.Status, w.Code, w.Node, g.Status, g.Code, g.Node)
	if g.Status != w.Status || g.Code != w.Code || g.Node != w.Node || g.Fingerprint != w.Fingerprint || g.FirstFailingLayer != w.FirstFailingLayer {
		t.Errorf("offline verdict %s %s %s %s (%s), when saved %s %s %s %s (%s)", g.Status, g.FirstFailingLayer, g.Code, g.Node, g.Fingerprint,
			w.Status, w.FirstFailingLayer, w.Code, w.Node, w.Fingerprint)
	}
	if gk, wk := framework.CheckKeys(got), framework.CheckKeys(b.saved); !slices.Equal(gk, wk) {
		t.Errorf("offline checks differ from the saved trace:\n got %v\nwant %v", gk, wk)
	}
}
