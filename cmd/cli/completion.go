package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// completionTimeout keeps a shell's tab key from hanging on a slow cluster.
const completionTimeout = 5 * time.Second

// completionLimit bounds the names one completion lists (one page).
const completionLimit = 500

// completeServices completes SERVICE with the Service names of the namespace
// (-n or the context's), keeping a typed svc/ prefix.
func completeServices(f *TraceFlags) cobra.CompletionFunc {
	return func(_ *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		prefix, partial := "", toComplete
		if kind, rest, ok := strings.Cut(toComplete, "/"); ok {
			prefix, partial = kind+"/", rest
		}
		names := listNames(f, func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Services(ns).List(ctx, opts)
		})
		var out []cobra.Completion
		for _, n := range filterPrefix(names, partial) {
			out = append(out, prefix+n)
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaces completes -n/--namespace.
func completeNamespaces(f *TraceFlags) cobra.CompletionFunc {
	return completeNames(f, func(ctx context.Context, c kubernetes.Interface, _ string, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Namespaces().List(ctx, opts)
	})
}

// CompleteNodeNames completes a node name (--node).
func CompleteNodeNames(f *TraceFlags) cobra.CompletionFunc {
	return completeNames(f, func(ctx context.Context, c kubernetes.Interface, _ string, opts metav1.ListOptions) (runtime.Object, error) {
		return c.CoreV1().Nodes().List(ctx, opts)
	})
}

// completeNames completes the names one list returns.
func completeNames(f *TraceFlags, list lister) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return filterPrefix(listNames(f, list), toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// lister lists one kind of object (ns is the namespace of -n or the context).
type lister func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error)

func registerCompletions(cmd *cobra.Command, f *TraceFlags) {
	// Errors only mean the flag does not exist, which AddFlags rules out.
	_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces(f))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]cobra.Completion{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]cobra.Completion{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("node", CompleteNodeNames(f))
	_ = cmd.RegisterFlagCompletionFunc("collector-namespace", completeNamespaces(f))
}

// listNames runs one list (one page) for completion and returns the
// objects' names; any error yields no completions (a shell completion must
// not print errors).
func listNames(f *TraceFlags, list lister) []string {
	getter := f.restClientGetter()
	client, err := f.deps.client(getter)
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
