package cli

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/svctrace/kubectl-svctrace/render"
)

// completionTimeout keeps a shell's tab key from hanging on a slow cluster.
const completionTimeout = 5 * time.Second

// completionLimit bounds the names one completion lists (one page).
const completionLimit = 500

// clientSource is where one command's completions get the kubeconfig and a
// client: that command's own connection flags, read when the shell asks
// (after cobra parsed the words typed so far).
type clientSource struct {
	getter func() genericclioptions.RESTClientGetter
	client clientFunc
}

// clients is the root command's clientSource: the trace's connection flags
// (or the test getter) and the deps' client, both read at completion time.
func (f *TraceFlags) clients() clientSource {
	return clientSource{
		getter: f.restClientGetter,
		client: func(g genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return f.deps.client(g) },
	}
}

// completeServices completes SERVICE with the Service names of the namespace
// (-n or the context's), keeping a typed svc/ prefix; after httproute/,
// gateway/, ingress/ … it completes that kind's names (targetNames).
func completeServices(f *TraceFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		prefix, partial := "", toComplete
		if kind, rest, ok := strings.Cut(toComplete, "/"); ok {
			prefix, partial = kind+"/", rest
		}
		names := targetNames(f, prefix)
		var out []cobra.Completion
		for _, n := range filterPrefix(names, partial) {
			out = append(out, prefix+n)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaces completes -n/--namespace and --collector-namespace.
func completeNamespaces(src clientSource) cobra.CompletionFunc {
	return completeNames(src, func(ctx context.Context, c kubernetes.Interface, _ string, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Namespaces().List(ctx, opts)
	})
}

// CompleteNodeNames completes a node name (--node).
func CompleteNodeNames(f *TraceFlags) cobra.CompletionFunc {
	return completeNames(f.clients(), func(ctx context.Context, c kubernetes.Interface, _ string, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Nodes().List(ctx, opts)
	})
}

// completeNames completes the names one list returns.
func completeNames(src clientSource, list lister) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return filterPrefix(listNames(src, list), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeKubeconfig completes --context, --cluster and --user with the
// names the kubeconfig (--kubeconfig, KUBECONFIG or ~/.kube/config) holds,
// as kubectl does; it needs no cluster.
func completeKubeconfig(src clientSource, names func(*clientcmdapi.Config) []string) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		raw, err := src.getter().ToRawKubeConfigLoader().RawConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return filterPrefix(names(&raw), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// registerConnectionCompletions completes kubectl's connection flags the
// way kubectl does: namespaces from the cluster, contexts, clusters and
// users from the kubeconfig. Every command calls it for its own flags.
func registerConnectionCompletions(cmd *cobra.Command, src clientSource) {
	// Errors only mean the flag does not exist, which ConfigFlags.AddFlags rules out.
	_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces(src))
	_ = cmd.RegisterFlagCompletionFunc("context", completeKubeconfig(src, func(c *clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.Contexts)) }))
	_ = cmd.RegisterFlagCompletionFunc("cluster", completeKubeconfig(src, func(c *clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.Clusters)) }))
	_ = cmd.RegisterFlagCompletionFunc("user", completeKubeconfig(src, func(c *clientcmdapi.Config) []string { return slices.Sorted(maps.Keys(c.AuthInfos)) }))
}

// lister lists one kind of object (ns is the namespace of -n or the context).
type lister func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error)

func registerCompletions(cmd *cobra.Command, f *TraceFlags) {
	registerConnectionCompletions(cmd, f.clients())
	// Errors only mean the flag does not exist, which AddFlags rules out.
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(render.Formats, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]cobra.Completion{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("node", CompleteNodeNames(f))
	_ = cmd.RegisterFlagCompletionFunc("collector-namespace", completeNamespaces(f.clients()))
}

// listNames runs one list (one page) for completion and returns the
// objects' names; any error yields no completions (a shell completion must
// not print errors).
func listNames(src clientSource, list lister) []string {
	getter := src.getter()
	client, err := src.client(getter)
	if err != nil {
		return nil
	}
	ns, _, err := getter.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	obj, err := list(ctx, client, ns, metav1.ListOptions{Limit: completionLimit})
	if err != nil {
		return nil
	}
	items, err := meta.ExtractList(obj)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(items))
	for _, it := range items {
		if m, err := meta.Accessor(it); err == nil {
			names = append(names, m.GetName())
		}
	}
	return names
}

func filterPrefix(names []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}
