package cli

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/cliexample"
	"github.com/svctrace/kubectl-svctrace/nodes"
)

// subcommandFlags are the flags each subcommand has besides kubectl's
// connection flags. A new subcommand declares its own here; any of the
// root's trace flags it shares must mean the same thing there.
var subcommandFlags = map[string][]string{
	"analyze":   {"color", "output"},
	"install":   {"collector-namespace", "image", "timeout"},
	"uninstall": {"collector-namespace", "image", "timeout"},
	"cleanup":   {"collector-namespace", "timeout"},
	"diff":      {"color", "output"},
	"mcp":       {"agent", "cluster-domain", "collector-namespace", "collector-start-timeout", "image", "max-parallel", "node-timeout", "privileged", "timeout"},
	"version":   nil,
}

// connectionFlags is what genericclioptions registers for kubectl.
func connectionFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	genericclioptions.NewConfigFlags(true).AddFlags(fs)
	return fs
}

// helpFlags are the flag names the "Flags:" section of a help text lists.
func helpFlags(help string) []string {
	_, section, ok := strings.Cut(help, "\nFlags:\n")
	if !ok {
		return nil
	}
	section, _, _ = strings.Cut(section, "\n\n")
	re := regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)`)
	var names []string
	for _, line := range strings.Split(section, "\n") {
		if m := re.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}

// TestConnectionFlags: every command takes kubectl's connection flags
// exactly as kubectl defines them, subcommands take none of the trace's
// flags they do not declare, and each help lists exactly the flags the
// command parses.
func TestConnectionFlags(t *testing.T) {
	root, _, _ := exampleRoot()
	kubectl := connectionFlags()
	for _, c := range cliexample.Commands(root) {
		if c != root && c.HasSubCommands() {
			// A group (agent) parses nothing; its subcommands do.
			continue
		}
		t.Run(c.CommandPath(), func(t *testing.T) {
			kubectl.VisitAll(func(want *pflag.Flag) {
				got := c.Flags().Lookup(want.Name)
				if got == nil {
					t.Errorf("no --%s: give the command addConnectionFlags", want.Name)
					return
				}
				if got.Shorthand != want.Shorthand || got.DefValue != want.DefValue || got.Usage != want.Usage || got.Value.Type() != want.Value.Type() {
					t.Errorf("--%s differs from kubectl's: -%s %q %q %s, want -%s %q %q %s", want.Name,
						got.Shorthand, got.DefValue, got.Usage, got.Value.Type(), want.Shorthand, want.DefValue, want.Usage, want.Value.Type())
				}
			})
			var own []string
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if kubectl.Lookup(f.Name) == nil {
					own = append(own, f.Name)
				}
			})
			slices.Sort(own)
			if c != root {
				want, ok := subcommandFlags[c.Name()]
				if !ok {
					t.Fatalf("declare the flags of %q in subcommandFlags", c.Name())
				}
				if !slices.Equal(own, want) {
					t.Errorf("flags besides the connection flags: %q, want %q", own, want)
				}
			}
			// cobra adds --help when the command runs.
			run, out, _ := exampleRoot()
			run.SetArgs(append(strings.Fields(strings.TrimPrefix(c.CommandPath(), cliexample.Prefix)), "--help"))
			if err := run.Execute(); err != nil {
				t.Fatal(err)
			}
			var parsed []string
			c.Flags().VisitAll(func(f *pflag.Flag) { parsed = append(parsed, f.Name) })
			parsed = append(parsed, "help")
			slices.Sort(parsed)
			if got := helpFlags(out.String()); !slices.Equal(got, parsed) {
				t.Errorf("help lists %q, the command parses %q", got, parsed)
			}
		})
	}
}

// writeKubeconfig writes a kubeconfig with contexts staging (current) and
// prod, each with its own API server.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for _, name := range []string{"staging", "prod"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ".example:6443"}
		cfg.AuthInfos[name+"-admin"] = &clientcmdapi.AuthInfo{Token: "t"}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name + "-admin", Namespace: "default"}
	}
	cfg.CurrentContext = "staging"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func collectorPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{nodes.LabelManagedBy: nodes.ManagedByValue, nodes.LabelName: nodes.NameValue}}}
}

// cleanupRoot builds the root command on a fake clientset whose client
// function resolves the real connection flags first and records the
// rest.Config they gave.
func cleanupRoot(objs ...runtime.Object) (*cobra.Command, *fake.Clientset, *rest.Config, *bytes.Buffer, *bytes.Buffer) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	client := fake.NewClientset(objs...)
	seen := &rest.Config{}
	f := NewTraceFlags()
	f.deps.getter = testGetter()
	f.deps.client = func(g genericclioptions.RESTClientGetter) (kubernetes.Interface, error) {
		cfg, err := g.ToRESTConfig()
		if err != nil {
			return nil, err
		}
		*seen = *cfg
		return client, nil
	}
	return newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3"}, f), client, seen, out, errOut
}

func TestCleanupConnectionFlags(t *testing.T) {
	kc := writeKubeconfig(t)
	tests := []struct {
		name      string
		args      []string
		host      string
		as        string
		timeout   time.Duration
		namespace string
	}{
		{"current context", []string{"cleanup", "--kubeconfig", kc}, "https://staging.example:6443", "", 0, nodes.DefaultCollectorNamespace},
		{"--context", []string{"cleanup", "--kubeconfig", kc, "--context", "prod"}, "https://prod.example:6443", "", 0, nodes.DefaultCollectorNamespace},
		{"flags before the subcommand", []string{"--kubeconfig", kc, "--context", "prod", "cleanup"}, "https://prod.example:6443", "", 0, nodes.DefaultCollectorNamespace},
		{"--as and --request-timeout", []string{"cleanup", "--kubeconfig", kc, "--context=prod", "--as", "alice", "--request-timeout", "7s"},
			"https://prod.example:6443", "alice", 7 * time.Second, nodes.DefaultCollectorNamespace},
		{"--server", []string{"cleanup", "--kubeconfig", kc, "-s", "https://other.example:6443"}, "https://other.example:6443", "", 0, nodes.DefaultCollectorNamespace},
		{"--collector-namespace", []string{"cleanup", "--kubeconfig", kc, "--collector-namespace", "netdebug"}, "https://staging.example:6443", "", 0, "netdebug"},
		{"-n does not move the cleanup", []string{"cleanup", "--kubeconfig", kc, "-n", "netdebug"}, "https://staging.example:6443", "", 0, nodes.DefaultCollectorNamespace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: tt.namespace, Name: "app"}}
			cmd, client, cfg, out, errOut := cleanupRoot(collectorPod("svctrace-system", "svctrace-a"), collectorPod("netdebug", "svctrace-b"), other)
			cmd.SetArgs(tt.args)
			if err := cmd.Execute(); err != nil {
				t.Fatalf("exit %d: %v", ExitCode(err), err)
			}
			if cfg.Host != tt.host || cfg.Impersonate.UserName != tt.as || cfg.Timeout != tt.timeout {
				t.Errorf("client for %s as %q timeout %s, want %s as %q timeout %s", cfg.Host, cfg.Impersonate.UserName, cfg.Timeout, tt.host, tt.as, tt.timeout)
			}
			want := map[string]string{"svctrace-system": "svctrace-a", "netdebug": "svctrace-b"}[tt.namespace]
			if out.String() != "pod/"+want+" deleted\n" || errOut.Len() != 0 {
				t.Errorf("stdout %q stderr %q, want pod/%s deleted", out, errOut, want)
			}
			left, _ := client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
			if len(left.Items) != 2 {
				t.Errorf("%d Pods left, want 2 (the other collector namespace's and the app's)", len(left.Items))
			}
		})
	}
}

func TestCleanupNothingFound(t *testing.T) {
	cmd, _, _, out, errOut := cleanupRoot()
	cmd.SetArgs([]string{"cleanup", "--collector-namespace", "netdebug"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 || errOut.String() != "No collector Pods found in namespace netdebug.\n" {
		t.Errorf("stdout %q stderr %q", out, errOut)
	}
}

func TestCleanupErrors(t *testing.T) {
	kc := writeKubeconfig(t)
	forbidden := func(verb string) k8stesting.ReactionFunc {
		return func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(verb+" denied"))
		}
	}
	tests := []struct {
		name    string
		args    []string
		react   func(*fake.Clientset)
		code    int
		message string
		stdout  string
	}{
		{"unknown context", []string{"cleanup", "--kubeconfig", kc, "--context", "nosuch"}, nil, ExitError, `context "nosuch" does not exist`, ""},
		{"missing kubeconfig", []string{"cleanup", "--kubeconfig", filepath.Join(t.TempDir(), "none")}, nil, ExitError, "cannot build a Kubernetes client", ""},
		{"list forbidden", []string{"cleanup"}, func(c *fake.Clientset) { c.PrependReactor("list", "pods", forbidden("list")) },
			ExitError, "cleanup in namespace svctrace-system: pods is forbidden: list denied", ""},
		{"one delete forbidden", []string{"cleanup"}, func(c *fake.Clientset) {
			c.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				if a.(k8stesting.DeleteAction).GetName() == "svctrace-b" {
					return forbidden("delete")(a)
				}
				return false, nil, nil
			})
		}, ExitError, "delete denied", "pod/svctrace-a deleted\n"},
		{"timeout", []string{"cleanup", "--timeout", "20ms"}, func(c *fake.Clientset) {
			c.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				time.Sleep(100 * time.Millisecond)
				return true, nil, context.DeadlineExceeded
			})
		}, ExitError, "timed out after 20ms (--timeout)", ""},
		{"argument", []string{"cleanup", "web"}, nil, ExitUsage, "takes no arguments", ""},
		{"zero --timeout", []string{"cleanup", "--timeout", "0s"}, nil, ExitUsage, "invalid --timeout", ""},
		{"bad --collector-namespace", []string{"cleanup", "--collector-namespace", "Net_Debug"}, nil, ExitUsage, "invalid --collector-namespace", ""},
		{"trace flag --port", []string{"cleanup", "--port", "http"}, nil, ExitUsage, "unknown flag: --port", ""},
		{"trace flag --no-node", []string{"cleanup", "--no-node"}, nil, ExitUsage, "unknown flag: --no-node", ""},
		{"trace flag -o", []string{"cleanup", "-o", "json"}, nil, ExitUsage, "unknown shorthand flag: 'o'", ""},
		{"trace flag --all-nodes", []string{"cleanup", "--all-nodes"}, nil, ExitUsage, "unknown flag: --all-nodes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd, client, _, out, _ := cleanupRoot(collectorPod("svctrace-system", "svctrace-a"), collectorPod("svctrace-system", "svctrace-b"))
			if tt.react != nil {
				tt.react(client)
			}
			args := tt.args
			if !slices.Contains(args, "--kubeconfig") {
				args = append(args, "--kubeconfig", kc)
			}
			cmd.SetArgs(args)
			err := cmd.Execute()
			if code := ExitCode(err); code != tt.code || err == nil || !strings.Contains(err.Error(), tt.message) {
				t.Fatalf("exit %d (%v), want %d and %q", code, err, tt.code, tt.message)
			}
			if out.String() != tt.stdout {
				t.Errorf("stdout %q, want %q", out, tt.stdout)
			}
		})
	}
}

// TestVersionNeedsNoCluster: version accepts the connection flags and never
// builds a client, so a missing kubeconfig or context is no error.
func TestVersionNeedsNoCluster(t *testing.T) {
	streams, _, out, _ := genericiooptions.NewTestIOStreams()
	f := NewTraceFlags()
	f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) {
		t.Error("version built a Kubernetes client")
		return nil, errors.New("no cluster")
	}
	cmd := newCmdSvctrace(streams, BuildInfo{}, f)
	cmd.SetArgs([]string{"version", "--kubeconfig", filepath.Join(t.TempDir(), "none"), "--context", "nosuch", "-n", "shop"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if want := "version:         dev\ncommit:          unknown\ndate:            unknown\ncollector image: " + DevCollectorImage + "\n"; out.String() != want {
		t.Errorf("output %q, want %q", out, want)
	}
	for _, args := range [][]string{{"version", "extra"}, {"version", "--port", "80"}, {"version", "-o", "json"}} {
		cmd := newCmdSvctrace(streams, BuildInfo{}, f)
		cmd.SetArgs(args)
		if err := cmd.Execute(); ExitCode(err) != ExitUsage {
			t.Errorf("%q: exit %d (%v), want %d", args, ExitCode(err), err, ExitUsage)
		}
	}
}

// TestSubcommandCompletion: the subcommands' connection flags and
// --collector-namespace complete as the root's do.
func TestSubcommandCompletion(t *testing.T) {
	kc := writeKubeconfig(t)
	objs := append(objects(true), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "svctrace-system"}})
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"cleanup", "--kubeconfig", kc, "-n", "kube"}, []string{"kube-system"}},
		{[]string{"cleanup", "--kubeconfig", kc, "--namespace", "kube"}, []string{"kube-system"}},
		{[]string{"cleanup", "--kubeconfig", kc, "--collector-namespace", "svc"}, []string{"svctrace-system"}},
		{[]string{"cleanup", "--kubeconfig", kc, "--context", ""}, []string{"prod", "staging"}},
		{[]string{"cleanup", "--kubeconfig", kc, "--cluster", "p"}, []string{"prod"}},
		{[]string{"cleanup", "--kubeconfig", kc, "--user", "s"}, []string{"staging-admin"}},
		{[]string{"version", "--kubeconfig", kc, "-n", "def"}, []string{"default"}},
		{[]string{"version", "--kubeconfig", kc, "--context", "st"}, []string{"staging"}},
		{[]string{"cleanup", "--kubeconfig", kc, ""}, nil},
		// The root's --context comes from its own getter (the test's in-memory kubeconfig).
		{[]string{"--context", ""}, []string{"test-ctx"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, _, run := testCmd(objs)
			if err := run(append([]string{"__complete"}, tt.args...)...); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			directive := lines[len(lines)-1]
			got := lines[:len(lines)-1]
			if !slices.Equal(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Errorf("completions %q, want %q", got, tt.want)
			}
			if directive != ":4" {
				t.Errorf("directive %s, want :4 (no file names)", directive)
			}
		})
	}
}
