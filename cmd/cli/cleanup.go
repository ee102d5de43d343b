package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/kubectl-svctrace/nodes"
)

// DefaultCleanupTimeout bounds a whole cleanup (the list and every delete).
const DefaultCleanupTimeout = 60 * time.Second

var cleanupLong = `Delete the collector Pods that interrupted traces left behind.

kubectl svctrace deletes its collector Pods on every path it controls, Ctrl-C included. A
plugin killed with SIGKILL, or one that lost the API server mid-delete, cannot: such a Pod
stops on its own (activeDeadlineSeconds), but its object stays until cleanup deletes it.
cleanup deletes, in --collector-namespace, every Pod that matches the label selector
  ` + nodes.ManagedSelector + `
those of a trace running there at this moment included.

kubectl's connection flags (--kubeconfig, --context, --as, --request-timeout, …) choose the
cluster and the identity, as in kubectl. -n/--namespace does not choose where to clean up:
collector Pods run in --collector-namespace whatever the traced Service's namespace.

Exit codes:
  0  collector Pods deleted, or none found
  1  the cluster could not be reached, or a list or delete failed or timed out
  2  usage error (bad arguments or flags)`

var cleanupExample = `  # Delete collector Pods left behind by interrupted traces
  kubectl svctrace cleanup

  # The same in another cluster: kubectl's --kubeconfig and --context
  kubectl svctrace cleanup --kubeconfig ~/.kube/prod.yaml --context prod

  # The same in a custom collector namespace
  kubectl svctrace cleanup --collector-namespace netdebug`

// CleanupOptions is what cleanup needs: the flags it registers and, after
// Complete, the client.
type CleanupOptions struct {
	// CollectorNamespace is where the collector Pods run (--collector-namespace).
	CollectorNamespace string
	// Timeout bounds the whole cleanup (--timeout); --request-timeout bounds
	// each request, as in kubectl.
	Timeout time.Duration

	// Client is built by Complete from the connection flags.
	Client kubernetes.Interface

	genericiooptions.IOStreams
}

// NewCleanupOptions returns the defaults: the collector namespace a trace
// uses unless told otherwise.
func NewCleanupOptions(streams genericiooptions.IOStreams) *CleanupOptions {
	return &CleanupOptions{
		CollectorNamespace: nodes.DefaultCollectorNamespace,
		Timeout:            DefaultCleanupTimeout,
		IOStreams:          streams,
	}
}

// AddFlags registers cleanup's own flags; the connection flags come from
// addConnectionFlags.
func (o *CleanupOptions) AddFlags(flags *pflag.FlagSet) {
	flags.StringVar(&o.CollectorNamespace, "collector-namespace", o.CollectorNamespace, "namespace the collector Pods run in (the --collector-namespace of the traces)")
	flags.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up the whole cleanup after this long")
}

// Complete builds the client from the connection flags.
func (o *CleanupOptions) Complete(getter genericclioptions.RESTClientGetter, newClient clientFunc) error {
	client, err := newClient(getter)
	if err != nil {
		return fmt.Errorf("cannot build a Kubernetes client: %w", err)
	}
	o.Client = client
	return nil
}

// Validate checks the flags.
func (o *CleanupOptions) Validate() error {
	if errs := validation.IsDNS1123Label(o.CollectorNamespace); len(errs) > 0 {
		return usageErrorf("invalid --collector-namespace %q: %s", o.CollectorNamespace, strings.Join(errs, "; "))
	}
	if o.Timeout <= 0 {
		return usageErrorf("invalid --timeout %s: must be positive", o.Timeout)
	}
	if o.Client == nil {
		return errors.New("no Kubernetes client")
	}
	return nil
}

// Run deletes the collector Pods, printing each deleted one to Out as kubectl
// delete does, and "none found" to ErrOut.
func (o *CleanupOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	ns := o.CollectorNamespace
	deleted, err := nodes.Cleanup(ctx, o.Client, ns)
	for _, name := range deleted {
		fmt.Fprintf(o.Out, "pod/%s deleted\n", name)
	}
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return fmt.Errorf("cleanup in namespace %s timed out after %s (--timeout)", ns, o.Timeout)
		case errors.Is(ctx.Err(), context.Canceled):
			return fmt.Errorf("cleanup in namespace %s interrupted", ns)
		}
		return fmt.Errorf("cleanup in namespace %s: %w", ns, err)
	}
	if len(deleted) == 0 {
		fmt.Fprintf(o.ErrOut, "No collector Pods found in namespace %s.\n", ns)
	}
	return nil
}

// newCmdCleanup deletes leftover collector Pods (see cleanupLong). It takes
// kubectl's connection flags of its own and none of the trace's flags but
// the two that mean the same here.
func newCmdCleanup(streams genericiooptions.IOStreams, newClient clientFunc) *cobra.Command {
	o := NewCleanupOptions(streams)
	var connection *genericclioptions.ConfigFlags
	cmd := &cobra.Command{
		Use:     "cleanup [flags]",
		Short:   "Delete collector Pods left behind by interrupted traces",
		Long:    cleanupLong,
		Example: cleanupExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("cleanup takes no arguments, got %q", args)
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Complete(connection, newClient); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	connection = addConnectionFlags(cmd, newClient)
	o.AddFlags(cmd.Flags())
	_ = cmd.RegisterFlagCompletionFunc("collector-namespace", completeNamespaces(clientSource{
		getter: func() genericclioptions.RESTClientGetter { return connection },
		client: newClient,
	}))
	return cmd
}
