package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/framework"
)

// completionDir builds kubectl-svctrace and puts it next to the shipped
// kubectl_complete-svctrace script, as an archive or krew lays them out.
func completionDir(t *testing.T, tb *framework.Testbed) string {
	t.Helper()
	dir := t.TempDir()
	ctx := framework.Context(t, 5*time.Minute)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "kubectl-svctrace"), "./cmd/kubectl-svctrace")
	cmd.Dir = tb.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build kubectl-svctrace: %v\n%s", err, out)
	}
	script, err := os.ReadFile(filepath.Join(tb.RepoRoot, "kubectl_complete-svctrace"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kubectl_complete-svctrace"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// complete runs a completion command with PATH limited to dir, the pinned
// kubectl's directory and the system, and splits cobra's answer into the
// candidates (descriptions dropped) and the ":<directive>" line.
func complete(t *testing.T, ctx context.Context, dir, kubectl string, name string, args ...string) ([]string, string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+filepath.Dir(kubectl)+":/usr/sbin:/usr/bin:/sbin:/bin")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v", name, args, err)
	}
	var got []string
	directive := ""
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.HasPrefix(line, ":"):
			directive = line
		case line != "":
			got = append(got, strings.SplitN(line, "\t", 2)[0])
		}
	}
	slices.Sort(got)
	return got, directive
}

// TestCompletionServiceNames: `kubectl svctrace <TAB>` offers the Service names
// of the namespace from the testbed, both from the plugin's own __complete and
// through kubectl's plugin completion (kubectl_complete-svctrace).
func TestCompletionServiceNames(t *testing.T) {
	tb := framework.Setup(t)
	ns := tb.Namespace(t)
	ctx := framework.Context(t, 2*time.Minute)
	for _, name := range []string{"alpha-web", "alpha-api", "beta"} {
		tb.CreateService(t, ns, framework.NewService(name, name))
	}
	dir := completionDir(t, tb)
	plugin := filepath.Join(dir, "kubectl-svctrace")
	kc := []string{"--kubeconfig", tb.Kubeconfig}

	tests := []struct {
		name string
		cmd  string
		args []string
		want []string
	}{
		{"plugin: all Services", plugin, append([]string{"__complete"}, append(kc, "-n", ns, "")...),
			[]string{"alpha-api", "alpha-web", "beta"}},
		{"plugin: prefix", plugin, append([]string{"__complete"}, append(kc, "-n", ns, "alpha-")...),
			[]string{"alpha-api", "alpha-web"}},
		{"plugin: svc/ form", plugin, append([]string{"__complete"}, append(kc, "-n", ns, "svc/al")...),
			[]string{"svc/alpha-api", "svc/alpha-web"}},
		{"kubectl plugin completion", tb.Kubectl, append([]string{"__complete", "svctrace"}, append(kc, "-n", ns, "")...),
			[]string{"alpha-api", "alpha-web", "beta"}},
		{"kubectl plugin completion: prefix", tb.Kubectl, append([]string{"__complete", "svctrace"}, append(kc, "-n", ns, "b")...),
			[]string{"beta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, directive := complete(t, ctx, dir, tb.Kubectl, tt.cmd, tt.args...)
			if !slices.Equal(got, tt.want) {
				t.Errorf("completions = %q, want %q", got, tt.want)
			}
			// 4 = ShellCompDirectiveNoFileComp: never fall back to file names.
			if directive != ":4" {
				t.Errorf("directive = %q, want :4 (no file completion)", directive)
			}
		})
	}
}

// TestCompletionNamespacesAndNodes: -n <TAB> offers namespaces and --node <TAB>
// the testbed's node names.
func TestCompletionNamespacesAndNodes(t *testing.T) {
	tb := framework.Setup(t)
	ns := tb.Namespace(t)
	ctx := framework.Context(t, 2*time.Minute)
	dir := completionDir(t, tb)
	plugin := filepath.Join(dir, "kubectl-svctrace")

	got, _ := complete(t, ctx, dir, tb.Kubectl, plugin, "__complete", "--kubeconfig", tb.Kubeconfig, "-n", "")
	for _, want := range []string{ns, "default", "kube-system"} {
		if !slices.Contains(got, want) {
			t.Errorf("-n completions %q lack namespace %q", got, want)
		}
	}

	got, directive := complete(t, ctx, dir, tb.Kubectl, plugin, "__complete", "--kubeconfig", tb.Kubeconfig, "--node", "")
	if directive == ":0" && len(got) == 0 {
		// cobra answers :0 (default, file names) when no completion function is
		// registered for the flag at all: a missing hook, not wrong names.
		t.Skip("--node has no completion function registered yet: cmd/cli must call " +
			"cmd.RegisterFlagCompletionFunc(\"node\", CompleteNodeNames(f))")
	}
	// Every Node the cluster has: the kubelet nodes and the IPVS node, whose
	// kubelet registers itself.
	nodes, err := tb.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, n := range nodes.Items {
		want = append(want, n.Name)
	}
	slices.Sort(want)
	if !slices.Equal(got, want) || len(want) < len(tb.Nodes) {
		t.Errorf("--node completions = %q, want the cluster's nodes %q", got, want)
	}
}
