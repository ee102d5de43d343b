package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		names := listNames(f, func(ctx context.Context, c kubernetes.Interface, ns string) ([]string, error) {
			list, err := c.CoreV1().Services(ns).List(ctx, metav1.ListOptions{Limit: completionLimit})
			if err != nil {
				return nil, err
			}
			out := make([]string, 0, len(list.Items))
			for _, s := range list.Items {
				out = append(out, s.Name)
			}
			return out, nil
		})
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, partial) {
				out = append(out, prefix+n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeNamespaces completes -n/--namespace.
func completeNamespaces(f *TraceFlags) cobra.CompletionFunc {
	return completeClusterNames(f, func(ctx context.Context, c kubernetes.Interface) ([]metav1.ObjectMeta, error) {
		list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: completionLimit})
		if err != nil {
			return nil, err
		}
		out := make([]metav1.ObjectMeta, len(list.Items))
		for i := range list.Items {
			out[i] = list.Items[i].ObjectMeta
		}
		return out, nil
	})
}

// CompleteNodeNames completes a node name (--node).
func CompleteNodeNames(f *TraceFlags) cobra.CompletionFunc {
	return completeClusterNames(f, func(ctx context.Context, c kubernetes.Interface) ([]metav1.ObjectMeta, error) {
		list, err := c.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: completionLimit})
		if err != nil {
			return nil, err
		}
		out := make([]metav1.ObjectMeta, len(list.Items))
		for i := range list.Items {
			out[i] = list.Items[i].ObjectMeta
		}
		return out, nil
	})
}

// completeClusterNames completes the names of one cluster-scoped list.
func completeClusterNames(f *TraceFlags, list func(context.Context, kubernetes.Interface) ([]metav1.ObjectMeta, error)) cobra.CompletionFunc {
	return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		names := listNames(f, func(ctx context.Context, c kubernetes.Interface, _ string) ([]string, error) {
			items, err := list(ctx, c)
			if err != nil {
				return nil, err
			}
			out := make([]string, len(items))
			for i := range items {
				out[i] = items[i].Name
			}
			return out, nil
		})
		return filterPrefix(names, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

func registerCompletions(cmd *cobra.Command, f *TraceFlags) {
	// Errors only mean the flag does not exist, which AddFlags rules out.
	_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces(f))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]cobra.Completion{"json", "yaml"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]cobra.Completion{"auto", "always", "never"}, cobra.ShellCompDirectiveNoFileComp))
	_ = cmd.RegisterFlagCompletionFunc("node", CompleteNodeNames(f))
	_ = cmd.RegisterFlagCompletionFunc("collector-namespace", completeNamespaces(f))
}

// listNames runs one list for completion; any error yields no completions
// (a shell completion must not print errors).
func listNames(f *TraceFlags, list func(context.Context, kubernetes.Interface, string) ([]string, error)) []string {
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
	names, err := list(ctx, client, ns)
	if err != nil {
		return nil
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
