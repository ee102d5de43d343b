package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/svctrace/kubectl-svctrace/deploy"
	"github.com/svctrace/kubectl-svctrace/nodes"
)

var agentLong = `Install or uninstall the opt-in svctrace node agent.

The agent is a DaemonSet (deploy/agent.yaml) whose Pods run the collector image idle: no
credentials (automountServiceAccountToken: false), no listening port, nothing read until a
trace execs the collector in it through the API server, with the tracing user's own
credentials (create on pods/exec in --collector-namespace, the svctrace-agent-user Role of
deploy/rbac.yaml). A trace then uses the agent on every node where its Pod is Ready and the
user may exec, and a short-lived collector Pod elsewhere; the report says which per node.

Exit codes:
  0  installed (all agent Pods Ready) or uninstalled (none left)
  1  the cluster could not be reached, a request failed, or --timeout passed
  2  usage error`

var agentInstallExample = `  # Install the node agent with the plugin's collector image, wait until it runs everywhere
  kubectl svctrace agent install

  # Install it from a mirror of the collector image, giving its Pods 10 minutes to start
  kubectl svctrace agent install --image registry.example.com/svctrace/collector:v0.1.0 --timeout 10m`

var agentUninstallExample = `  # Remove the node agent and wait until its Pods are gone
  kubectl svctrace agent uninstall`

var agentExample = `  # Install the node agent with the plugin's collector image, wait until it runs everywhere
  kubectl svctrace agent install

  # Remove it and wait until its Pods are gone
  kubectl svctrace agent uninstall`

// AgentOptions installs or uninstalls the node agent.
type AgentOptions struct {
	// Uninstall: remove the DaemonSet instead of applying it.
	Uninstall          bool
	Image              string
	CollectorNamespace string
	Timeout            time.Duration
	// PollInterval is how often rollout and removal are checked.
	PollInterval time.Duration

	Client kubernetes.Interface
	genericiooptions.IOStreams
}

// AddFlags registers the agent's flags.
func (o *AgentOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Image, "image", o.Image, "collector image the agent runs (the same as the collector Pods')")
	fs.StringVar(&o.CollectorNamespace, "collector-namespace", o.CollectorNamespace, "namespace of the agent (the traces' --collector-namespace)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up waiting for the agent's Pods after this long")
}

// Complete builds the client.
func (o *AgentOptions) Complete(getter genericclioptions.RESTClientGetter, newClient clientFunc) error {
	c, err := newClient(getter)
	if err != nil {
		return fmt.Errorf("cannot build a Kubernetes client: %w", err)
	}
	o.Client = c
	return nil
}

// Validate checks the flags.
func (o *AgentOptions) Validate() error {
	if o.Image == "" && !o.Uninstall {
		return usageErrorf("--image must not be empty")
	}
	if o.Timeout <= 0 {
		return usageErrorf("invalid --timeout %s: must be positive", o.Timeout)
	}
	if o.Client == nil {
		return errors.New("no Kubernetes client")
	}
	return nil
}

// AgentDaemonSet is the shipped manifest with the image and namespace set.
func AgentDaemonSet(image, namespace string) (*appsv1.DaemonSet, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(deploy.Agent, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("the embedded agent manifest: %w", err)
	}
	ds, ok := obj.(*appsv1.DaemonSet)
	if !ok {
		return nil, fmt.Errorf("the embedded agent manifest is a %T, not a DaemonSet", obj)
	}
	ds.Namespace = namespace
	for i := range ds.Spec.Template.Spec.Containers {
		ds.Spec.Template.Spec.Containers[i].Image = image
	}
	return ds, nil
}

// Run installs (create or update, then wait for every agent Pod Ready) or
// uninstalls (delete, then wait until no agent Pod is left).
func (o *AgentOptions) Run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	interval := o.PollInterval
	if interval <= 0 {
		interval = time.Second
	}
	dss := o.Client.AppsV1().DaemonSets(o.CollectorNamespace)
	pods := o.Client.CoreV1().Pods(o.CollectorNamespace)
	if o.Uninstall {
		fg := metav1.DeletePropagationForeground
		err := dss.Delete(ctx, nodes.AgentNameValue, metav1.DeleteOptions{PropagationPolicy: &fg})
		if apierrors.IsNotFound(err) {
			fmt.Fprintf(o.ErrOut, "The node agent is not installed in namespace %s.\n", o.CollectorNamespace)
		} else if err != nil {
			return fmt.Errorf("deleting the agent DaemonSet: %w", err)
		} else {
			fmt.Fprintf(o.Out, "daemonset.apps/%s deleted\n", nodes.AgentNameValue)
		}
		err = wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
			l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: nodes.AgentSelector})
			if err != nil {
				return false, err
			}
			_, err = dss.Get(ctx, nodes.AgentNameValue, metav1.GetOptions{})
			return len(l.Items) == 0 && apierrors.IsNotFound(err), nil
		})
		if err != nil {
			return fmt.Errorf("waiting for the agent's Pods to go: %w", err)
		}
		return nil
	}
	ds, err := AgentDaemonSet(o.Image, o.CollectorNamespace)
	if err != nil {
		return err
	}
	cur, err := dss.Get(ctx, ds.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := dss.Create(ctx, ds, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the agent DaemonSet: %w", err)
		}
		fmt.Fprintf(o.Out, "daemonset.apps/%s created\n", ds.Name)
	case err != nil:
		return fmt.Errorf("reading the agent DaemonSet: %w", err)
	default:
		cur.Spec = ds.Spec
		cur.Labels = ds.Labels
		if _, err := dss.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating the agent DaemonSet: %w", err)
		}
		fmt.Fprintf(o.Out, "daemonset.apps/%s configured\n", ds.Name)
	}
	err = wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		d, err := dss.Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := d.Status
		return d.Generation <= st.ObservedGeneration && st.DesiredNumberScheduled > 0 &&
			st.UpdatedNumberScheduled == st.DesiredNumberScheduled && st.NumberReady == st.DesiredNumberScheduled, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the agent's Pods to be Ready on every node: %w", err)
	}
	return nil
}

func newCmdAgent(streams genericiooptions.IOStreams, image string, newClient clientFunc) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "agent (install|uninstall) [flags]",
		Short:   "Install or uninstall the opt-in node agent",
		Long:    agentLong,
		Example: agentExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("agent needs a subcommand: install or uninstall")
		},
		ValidArgsFunction: cobra.NoFileCompletions,
	}
	for _, uninstall := range []bool{false, true} {
		o := &AgentOptions{Uninstall: uninstall, Image: image, CollectorNamespace: nodes.DefaultCollectorNamespace,
			Timeout: 5 * time.Minute, IOStreams: streams}
		use, short, example := "install", "Install the node agent DaemonSet and wait until it is Ready", agentInstallExample
		if uninstall {
			use, short, example = "uninstall", "Remove the node agent and wait until its Pods are gone", agentUninstallExample
		}
		var connection *genericclioptions.ConfigFlags
		sub := &cobra.Command{
			Use:               use + " [flags]",
			Short:             short,
			Example:           example,
			Args:              cobra.NoArgs,
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
		connection = addConnectionFlags(sub, newClient)
		o.AddFlags(sub.Flags())
		cmd.AddCommand(sub)
	}
	return cmd
}
