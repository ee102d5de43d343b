package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/svctrace/kubectl-svctrace/nodes"
)

var cleanupExample = `  # Delete collector Pods left behind by interrupted traces
  kubectl svctrace cleanup

  # The same in a custom collector namespace
  kubectl svctrace cleanup --collector-namespace netdebug`

// newCmdCleanup deletes leftover collector Pods. svctrace deletes its Pods on
// every path; this is for the cases no process can cover (the plugin was
// SIGKILLed, or lost the API mid-delete). activeDeadlineSeconds ends such a
// Pod anyway; cleanup removes the object.
func newCmdCleanup(streams genericiooptions.IOStreams, f *TraceFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "cleanup",
		Short:   "Delete collector Pods left behind by interrupted traces",
		Example: cleanupExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := f.deps.client(f.restClientGetter())
			if err != nil {
				return fmt.Errorf("cannot build a Kubernetes client: %w", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.Timeout)
			defer cancel()
			ns := f.Nodes.CollectorNamespace
			deleted, err := nodes.Cleanup(ctx, client, ns)
			for _, name := range deleted {
				fmt.Fprintf(streams.Out, "pod/%s deleted\n", name)
			}
			if err != nil {
				return fmt.Errorf("cleanup in namespace %s: %w", ns, err)
			}
			if len(deleted) == 0 {
				fmt.Fprintf(streams.ErrOut, "No collector Pods found in namespace %s.\n", ns)
			}
			return nil
		},
	}
}
