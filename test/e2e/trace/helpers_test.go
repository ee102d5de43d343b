// Package trace_test runs the real kubectl-svctrace binary against the
// project's testbed (real kube-apiserver, kubelets, kube-proxy in iptables and
// nftables mode, CoreDNS) with real collector Pods, and asserts the layer, the
// check code and the node of what it reports. Run with `make e2e`.
package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/nodes"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// CollectorImage is the collector image the testbed imports into every node.
const CollectorImage = "svctrace.local/collector:dev"

const collectorNS = "svctrace-system"

var binPath string

func TestMain(m *testing.M) {
	if framework.Enabled() {
		dir, err := os.MkdirTemp("", "svctrace-e2e-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		binPath = filepath.Join(dir, "kubectl-svctrace")
		root, err := framework.RepoRoot()
		if err == nil {
			cmd := exec.Command("go", "build", "-o", binPath, "./cmd/kubectl-svctrace")
			cmd.Dir = root
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			err = cmd.Run()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "building kubectl-svctrace:", err)
			os.Exit(1)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// result is one run of the binary.
type result struct {
	Trace  *report.ServiceTrace
	Exit   int
	Stdout string
	Stderr string
}

// svctrace runs kubectl-svctrace with the testbed's kubeconfig and the
// testbed's collector image, -o json, and decodes the trace.
func svctrace(t *testing.T, tb *framework.Testbed, args ...string) result {
	t.Helper()
	return svctraceWith(t, tb.Kubeconfig, args...)
}

func svctraceWith(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	r := runSvctrace(t, kubeconfig, args...)
	assertNoCollectorPods(t, framework.Setup(t))
	return r
}

// runSvctrace is svctraceWith without the check that no collector Pod is
// left, for traces that run at the same time as others. With
// SVCTRACE_RECORD_SCENARIOS set, the trace also saves its bundle there (see
// framework.RecordDir), so that every scenario of this suite can become a
// recorded scenario of the judge.
func runSvctrace(t *testing.T, kubeconfig string, args ...string) result {
	t.Helper()
	full := append([]string{"--kubeconfig", kubeconfig, "--image", CollectorImage, "-o", "json", "--timeout", "150s"}, args...)
	if dir := framework.RecordDir(t, args); dir != "" {
		full = append(full, "--save", dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, full...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{Stdout: out.String(), Stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.Exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running kubectl-svctrace: %v", err)
	}
	if out.Len() > 0 {
		var tr report.ServiceTrace
		if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
			t.Fatalf("output is not a ServiceTrace: %v\n%s", err, out.String())
		}
		r.Trace = &tr
		validateSchema(t, out.Bytes())
	}
	t.Cleanup(func() {
		if t.Failed() {
			// The findings first: a CI log keeps the head of a long message.
			t.Logf("kubectl-svctrace %s\nexit %d\nfindings:\n%s\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), r.Exit, findings(r.Trace), r.Stderr, r.Stdout)
		}
	})
	return r
}

// findings lists the verdict and every check that did not pass, one line
// each.
func findings(tr *report.ServiceTrace) string {
	if tr == nil {
		return "  (no trace)"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  verdict %s %s %s %s: %s\n", tr.Verdict.Status, tr.Verdict.FirstFailingLayer, tr.Verdict.Code, tr.Verdict.Node, tr.Verdict.Summary)
	for _, l := range tr.Layers {
		for _, c := range l.Checks {
			if c.Status == report.StatusPass || c.Status == report.StatusSkipped {
				continue
			}
			msg := c.Message
			if len(msg) > 400 {
				msg = msg[:400] + "…"
			}
			fmt.Fprintf(&b, "  %s %s %s %s: %s\n", l.Name, c.Status, c.Code, c.Node, msg)
		}
	}
	return b.String()
}

// check finds a check by layer, code and node ("" = any node).
func check(tr *report.ServiceTrace, layer report.LayerName, code, node string) *report.Check {
	if tr == nil {
		return nil
	}
	l := tr.Layer(layer)
	if l == nil {
		return nil
	}
	for i := range l.Checks {
		c := &l.Checks[i]
		if c.Code == code && (node == "" || c.Node == node) {
			return c
		}
	}
	return nil
}

func requireCheck(t *testing.T, r result, layer report.LayerName, code, node string) *report.Check {
	t.Helper()
	c := check(r.Trace, layer, code, node)
	if c == nil {
		t.Fatalf("no %s check in layer %s for node %q; layer checks: %s", code, layer, node, summarize(r.Trace, layer))
	}
	return c
}

func summarize(tr *report.ServiceTrace, layer report.LayerName) string {
	if tr == nil {
		return "<no trace>"
	}
	var parts []string
	for _, c := range tr.Layer(layer).Checks {
		parts = append(parts, fmt.Sprintf("%s[%s %s]%s", c.Code, c.Status, c.Node, c.Message))
	}
	return strings.Join(parts, "\n  ")
}

// requireNoFailingLayer: no layer of the trace fails (warnings allowed).
func requireNoFailingLayer(t *testing.T, r result) {
	t.Helper()
	if r.Trace == nil {
		t.Fatalf("no trace (exit %d): %s", r.Exit, r.Stderr)
	}
	for _, l := range r.Trace.Layers {
		if l.Status == report.StatusFail {
			t.Errorf("layer %s failed: %s\n  %s", l.Name, l.Reason, summarize(r.Trace, l.Name))
		}
	}
}

func requireNoFail(t *testing.T, r result) {
	t.Helper()
	requireNoFailingLayer(t, r)
	if r.Exit != 0 {
		t.Errorf("exit %d, want 0 (verdict %s: %s)", r.Exit, r.Trace.Verdict.Status, r.Trace.Verdict.Summary)
	}
}

func assertNoCollectorPods(t *testing.T, tb *framework.Testbed) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		list, err := tb.Client.CoreV1().Pods(collectorNS).List(context.Background(), metav1.ListOptions{LabelSelector: nodes.ManagedSelector})
		if err != nil {
			t.Errorf("listing collector pods: %v", err)
			return
		}
		if len(list.Items) == 0 {
			return
		}
		// Pods deleted with grace 0 vanish within moments; wait out the lag.
		if time.Now().After(deadline) {
			var names []string
			for _, p := range list.Items {
				names = append(names, p.Name+" ("+string(p.Status.Phase)+")")
			}
			t.Errorf("collector Pod(s) left behind in %s: %s", collectorNS, strings.Join(names, ", "))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

// validateSchema checks a real -o json result against the documented schema
// (docs/schema/servicetrace.v1alpha1.json), as a bot consuming it would.
func validateSchema(t *testing.T, doc []byte) {
	t.Helper()
	schemaOnce.Do(func() {
		root, err := framework.RepoRoot()
		if err != nil {
			schemaErr = err
			return
		}
		f, err := os.Open(filepath.Join(root, "docs", "schema", "servicetrace.v1alpha1.json"))
		if err != nil {
			schemaErr = err
			return
		}
		defer f.Close()
		sdoc, err := jsonschema.UnmarshalJSON(f)
		if err != nil {
			schemaErr = err
			return
		}
		c := jsonschema.NewCompiler()
		c.AssertFormat()
		if schemaErr = c.AddResource("servicetrace.v1alpha1.json", sdoc); schemaErr == nil {
			schema, schemaErr = c.Compile("servicetrace.v1alpha1.json")
		}
	})
	if schemaErr != nil {
		t.Fatalf("loading the schema: %v", schemaErr)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Errorf("-o json output does not validate against the schema: %v", err)
	}
}
