package trace_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/svctrace/kubectl-svctrace/cmd/cli"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/cliexample"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
	"github.com/svctrace/kubectl-svctrace/nodes"
)

// run runs the built kubectl-svctrace as a user would and returns what it
// printed and its exit code.
func run(t *testing.T, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	return runIn(t, "", nil, args...)
}

// runIn runs the binary in dir ("": the test's) and, when interrupt is set,
// sends it SIGINT once interrupt says its output so far is enough, as a user
// pressing Ctrl-C would.
func runIn(t *testing.T, dir string, interrupt func(stdout string) bool, args ...string) (stdout, stderr string, exit int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Dir = dir
	var out, errb syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	var err error
	if interrupt == nil {
		err = cmd.Run()
	} else if err = cmd.Start(); err == nil {
		go func() {
			for ctx.Err() == nil && !interrupt(out.String()) {
				time.Sleep(200 * time.Millisecond)
			}
			_ = cmd.Process.Signal(os.Interrupt)
		}()
		err = cmd.Wait()
	}
	if ee, ok := err.(*exec.ExitError); ok {
		exit = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running kubectl-svctrace: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubectl-svctrace %s\nexit %d\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), exit, errb.String(), out.String())
		}
	})
	return out.String(), errb.String(), exit
}

// currentContext is the context a kubeconfig file selects.
func currentContext(t *testing.T, kubeconfig string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", kubeconfig, err)
	}
	if cfg.CurrentContext == "" {
		t.Fatalf("kubeconfig %s has no current-context", kubeconfig)
	}
	return cfg.CurrentContext
}

// TestCleanupConnectionFlags runs cleanup the way a user with several
// clusters does after a kill -9: kubectl's --kubeconfig and --context pick
// the cluster (the restricted user's, whose RBAC allows Pods only in
// svctrace-system), --collector-namespace the namespace. The package's tests
// run one at a time, so no other test's collector Pod is deleted here.
func TestCleanupConnectionFlags(t *testing.T) {
	tb := framework.Setup(t)
	kc := tb.RestrictedKubeconfig()
	kctx := currentContext(t, kc)
	cleanup := []string{"cleanup", "--kubeconfig", kc, "--context", kctx, "--collector-namespace", collectorNS}
	assertNoCollectorPods(t, tb)

	t.Run("nothing to delete", func(t *testing.T) {
		stdout, stderr, exit := run(t, cleanup...)
		if exit != 0 || stdout != "" || !strings.Contains(stderr, "No collector Pods found in namespace "+collectorNS) {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0 and \"No collector Pods found\"", exit, stdout, stderr)
		}
	})

	t.Run("leftover deleted", func(t *testing.T) {
		// A Pod that looks like a collector left by a killed plugin. Its
		// nodeSelector matches no node, so it never runs.
		ctx := framework.Context(t, 2*time.Minute)
		pod, err := tb.Client.CoreV1().Pods(collectorNS).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "svctrace-e2e-leftover-", Labels: map[string]string{
				nodes.LabelManagedBy: nodes.ManagedByValue, nodes.LabelName: nodes.NameValue}},
			Spec: corev1.PodSpec{
				NodeSelector: map[string]string{"svctrace.dev/e2e": "no-such-node"},
				Containers:   []corev1.Container{{Name: nodes.ContainerName, Image: CollectorImage, ImagePullPolicy: corev1.PullNever}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create leftover collector Pod: %v", err)
		}
		t.Cleanup(func() {
			_ = tb.Client.CoreV1().Pods(collectorNS).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		})
		stdout, stderr, exit := run(t, cleanup...)
		if exit != 0 || stdout != "pod/"+pod.Name+" deleted\n" {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0 and pod/%s deleted", exit, stdout, stderr, pod.Name)
		}
		err = framework.Eventually(ctx, 30*time.Second, 500*time.Millisecond, func(ctx context.Context) error {
			_, err := tb.Client.CoreV1().Pods(collectorNS).Get(ctx, pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if err == nil {
				return context.DeadlineExceeded
			}
			return err
		})
		if err != nil {
			t.Errorf("Pod %s still there after cleanup: %v", pod.Name, err)
		}
	})

	t.Run("unknown context", func(t *testing.T) {
		args := []string{"cleanup", "--kubeconfig", kc, "--context", "nosuch", "--collector-namespace", collectorNS}
		stdout, stderr, exit := run(t, args...)
		if exit != 1 || stdout != "" || !strings.Contains(stderr, `error: cannot build a Kubernetes client: context "nosuch" does not exist`) {
			t.Errorf("exit %d, stdout %q, stderr %q; want 1 and an error naming the context", exit, stdout, stderr)
		}
	})
}

// setFlag gives args --name value (or -short value): it replaces the value
// the example typed, or appends the flag.
func setFlag(args []string, name, short, value string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		switch {
		case a == "--":
			return append(out[:i], append([]string{"--" + name, value}, out[i:]...)...)
		case (a == "--"+name || (short != "" && a == "-"+short)) && i+1 < len(out):
			out[i+1] = value
			return out
		case strings.HasPrefix(a, "--"+name+"="):
			out[i] = "--" + name + "=" + value
			return out
		}
	}
	return append(out, "--"+name, value)
}

// TestExamplesOnTestbed runs every example of every command's help against
// the testbed, as a user pasting it would: the trace examples on the Service
// web this test deploys (in its namespace instead of the example's), every
// example with the testbed's --kubeconfig and --context instead of the
// example's, which every command must accept.
func TestExamplesOnTestbed(t *testing.T) {
	tb := framework.Setup(t)
	ns, svc := deployWeb(t, tb, 1, nil)
	waitAllNodes(t, tb, svc, 1) // one example traces --all-nodes
	kctx := currentContext(t, tb.Kubeconfig)
	// A fresh root per example: Resolve leaves the parsed values in the flags.
	newRoot := func() *cobra.Command {
		streams, _, _, _ := genericiooptions.NewTestIOStreams()
		return cli.NewCmdSvctrace(streams, cli.BuildInfo{})
	}
	for _, c := range cliexample.Commands(newRoot()) {
		lines, err := cliexample.Parse(c.Example)
		if err != nil {
			t.Errorf("%s: Example: %v", c.CommandPath(), err)
			continue
		}
		for _, l := range lines {
			t.Run(c.CommandPath()+"/"+l.Text, func(t *testing.T) {
				got, positional, err := cliexample.Resolve(newRoot(), l.Args)
				if err != nil {
					t.Fatalf("example does not parse: %v", err)
				}
				args := setFlag(setFlag(l.Args, "kubeconfig", "", tb.Kubeconfig), "context", "", kctx)
				switch {
				case !got.HasParent():
					kind, name, err := cli.ParseTargetArg(positional[0])
					if err != nil {
						t.Fatal(err)
					}
					if kind != "" {
						t.Skipf("the example starts at %s %q; the testbed runs no Gateway or Ingress controller", kind, name)
					}
					if name != "web" {
						t.Skipf("the example traces Service %q; this test deploys only web", name)
					}
					args = setFlag(setFlag(args, "namespace", "n", ns), "image", "", CollectorImage)
					var interrupt func(string) bool
					if slices.Contains(args, "--watch") || slices.Contains(args, "-w") {
						// Ctrl-C once the first full trace is printed.
						interrupt = func(out string) bool { return strings.Contains(out, "PASS") }
					}
					stdout, _, exit := runIn(t, t.TempDir(), interrupt, args...)
					assertNoCollectorPods(t, tb)
					if exit != 0 {
						t.Fatalf("exit %d, want 0: web is healthy", exit)
					}
					if strings.Contains(l.Text, "-o json") && !json.Valid([]byte(stdout)) {
						t.Errorf("-o json printed no JSON:\n%s", stdout)
					}
				case got.Name() == "version":
					stdout, _, exit := run(t, args...)
					if exit != 0 || !strings.Contains(stdout, "collector image: "+CollectorImage) {
						t.Errorf("exit %d, output %q", exit, stdout)
					}
				case got.Name() == "cleanup":
					stdout, stderr, exit := run(t, args...)
					if exit != 0 || (stdout == "" && !strings.Contains(stderr, "No collector Pods found")) {
						t.Errorf("exit %d, stdout %q, stderr %q", exit, stdout, stderr)
					}
				case got.Name() == "analyze" || got.Name() == "diff":
					// The example's paths, made for real in a scratch
					// directory: bundles by --save, results by -o json.
					dir := t.TempDir()
					for _, p := range positional {
						trace := []string{"web", "--kubeconfig", tb.Kubeconfig, "--context", kctx, "-n", ns, "--image", CollectorImage}
						if strings.HasSuffix(p, ".json") {
							stdout, _, exit := runIn(t, dir, nil, append(trace, "-o", "json")...)
							if exit != 0 {
								t.Fatalf("trace for %s: exit %d", p, exit)
							}
							if err := os.WriteFile(filepath.Join(dir, p), []byte(stdout), 0o600); err != nil {
								t.Fatal(err)
							}
						} else if _, _, exit := runIn(t, dir, nil, append(trace, "--save", p)...); exit != 0 {
							t.Fatalf("trace --save %s: exit %d", p, exit)
						}
					}
					stdout, _, exit := runIn(t, dir, nil, args...)
					if exit != 0 {
						t.Fatalf("exit %d, want 0 (web is healthy)", exit)
					}
					if strings.Contains(l.Text, "-o json") && !json.Valid([]byte(stdout)) {
						t.Errorf("-o json printed no JSON:\n%s", stdout)
					}
				case got.Name() == "install" || got.Name() == "uninstall":
					// The agent's install waits for its Pods on every node;
					// each example is followed by an uninstall, so nothing
					// stays for the next example or test.
					if got.Name() == "install" {
						args = setFlag(args, "image", "", CollectorImage)
					}
					if _, stderr, exit := run(t, args...); exit != 0 {
						t.Errorf("exit %d, stderr %q", exit, stderr)
					}
					uninstall := []string{"agent", "uninstall", "--timeout", "2m"}
					for i, a := range args {
						if (a == "--kubeconfig" || a == "--context") && i+1 < len(args) {
							uninstall = append(uninstall, a, args[i+1])
						}
					}
					if _, stderr, exit := run(t, uninstall...); exit != 0 {
						t.Errorf("agent uninstall after the example: exit %d, stderr %q", exit, stderr)
					}
				case got.Name() == "mcp":
					// A client that connects and hangs up at once: the
					// server must start with these flags and end cleanly
					// when stdin closes.
					if _, stderr, exit := runIn(t, t.TempDir(), nil, args...); exit != 0 {
						t.Errorf("exit %d, stderr %q", exit, stderr)
					}
				default:
					t.Errorf("no rule to run the examples of %s on the testbed: add one here", got.CommandPath())
				}
			})
		}
	}
}

// syncBuffer is a bytes.Buffer safe to read while the process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
