package cli

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
)

// clientFunc builds a clientset from a command's connection flags; tests
// replace it with one that returns a fake clientset.
type clientFunc func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error)

// addConnectionFlags gives a subcommand kubectl's connection flags
// (--kubeconfig, --context, -n/--namespace, --as, --request-timeout, …),
// unchanged and with kubectl's shell completions, and returns them for the
// command's Complete. Every subcommand calls it; TestConnectionFlags fails
// for one that does not.
//
// Each command registers its own ConfigFlags as local flags, instead of the
// root registering one set as persistent flags the way kubectl and
// cilium-cli do. Their roots only dispatch; svctrace's root is itself the
// trace command, with a flag set of its own (TraceFlags.AddFlags). Making
// only the connection part of it persistent would split the root's flags
// into two kinds nobody sees at the call site, and every subcommand would
// depend on the trace's flag struct: that is how cleanup came to read
// --collector-namespace and --timeout values it never registered. Local
// flags keep each command's help listing exactly what that command parses,
// under "Flags:", and each command's Options depend only on the
// RESTClientGetter they are given. The cost is one ConfigFlags per command,
// which is nothing, since a process runs one command. Flags typed before the
// subcommand's name still reach it (`kubectl svctrace --context prod
// cleanup`): cobra hands every word but the name to the subcommand's flag set.
func addConnectionFlags(cmd *cobra.Command, newClient clientFunc) *genericclioptions.ConfigFlags {
	flags := genericclioptions.NewConfigFlags(true)
	flags.AddFlags(cmd.Flags())
	registerConnectionCompletions(cmd, clientSource{
		getter: func() genericclioptions.RESTClientGetter { return flags },
		client: newClient,
	})
	return flags
}
