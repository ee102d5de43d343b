package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// BuildInfo is set by main from -ldflags "-X main.version=… -X main.commit=… -X main.date=…".
type BuildInfo struct {
	Version string
	Commit  string
	Date    string
}

// DevCollectorImage is the image the local testbed builds; builds without a
// release version use it.
const DevCollectorImage = "svctrace.local/collector:dev"

// DefaultCollectorImage is the collector image matching this plugin version.
func DefaultCollectorImage(version string) string {
	if version == "" || version == "dev" {
		return DevCollectorImage
	}
	return "ghcr.io/svctrace/svctrace-collector:" + version
}

func (b BuildInfo) orDefaults() BuildInfo {
	if b.Version == "" {
		b.Version = "dev"
	}
	if b.Commit == "" {
		b.Commit = "unknown"
	}
	if b.Date == "" {
		b.Date = "unknown"
	}
	return b
}

var versionLong = `Print the svctrace version, commit, build date and the collector image this build runs.

version reads nothing from a cluster; unlike kubectl version it reports no server version.
It accepts kubectl's connection flags (--kubeconfig, --context, -n, …) and ignores them, so
a wrapper or alias can pass the same connection flags to every kubectl svctrace command.`

var versionExample = `  # Print the plugin version and the collector image it uses
  kubectl svctrace version`

// VersionOptions is what version prints.
type VersionOptions struct {
	Info BuildInfo

	genericiooptions.IOStreams
}

// Complete fills in what the build did not set (a dev build has no version).
func (o *VersionOptions) Complete() {
	o.Info = o.Info.orDefaults()
}

// Validate has nothing to check: version takes no arguments (Args rejects
// them) and reads no flag value.
func (o *VersionOptions) Validate() error { return nil }

// Run prints the build information.
func (o *VersionOptions) Run() error {
	_, err := fmt.Fprintf(o.Out, "version:         %s\ncommit:          %s\ndate:            %s\ncollector image: %s\n",
		o.Info.Version, o.Info.Commit, o.Info.Date, DefaultCollectorImage(o.Info.Version))
	return err
}

// newCmdVersion prints the build information. It registers kubectl's
// connection flags only so they are accepted (see versionLong); newClient
// serves their completions.
func newCmdVersion(streams genericiooptions.IOStreams, info BuildInfo, newClient clientFunc) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "version [flags]",
		Short:   "Print the svctrace version, commit, build date and collector image",
		Long:    versionLong,
		Example: versionExample,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("version takes no arguments, got %q", args)
			}
			return nil
		},
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(_ *cobra.Command, _ []string) error {
			o := &VersionOptions{Info: info, IOStreams: streams}
			o.Complete()
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	addConnectionFlags(cmd, newClient)
	return cmd
}
