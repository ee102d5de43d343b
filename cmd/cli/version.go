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

func newCmdVersion(streams genericiooptions.IOStreams, info BuildInfo) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the svctrace version, commit, build date and collector image",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b := info.orDefaults()
			fmt.Fprintf(streams.Out, "version:         %s\ncommit:          %s\ndate:            %s\ncollector image: %s\n",
				b.Version, b.Commit, b.Date, DefaultCollectorImage(info.Version))
			return nil
		},
	}
}
