package cli

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/yaml"

	"github.com/svctrace/kubectl-svctrace/bundle"
	"github.com/svctrace/kubectl-svctrace/render"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

var analyzeLong = `Judge a trace saved with --save again, with this build's checks, without a cluster.

DIR is a directory written by kubectl svctrace SERVICE --save DIR. It holds what the API
returned, every node's raw observations and the result printed then; analyze feeds the first
two to the same judgement a live trace goes through, with the options and the clock of the
original trace, and prints the result in the same formats. A newer svctrace can so re-read an
old incident with the checks it has since gained. When this build judges differently than the
one that took the trace, analyze says so on stderr.

analyze reads nothing from a cluster. It accepts kubectl's connection flags and ignores them,
so a wrapper can pass the same flags to every kubectl svctrace command.

Exit codes are those of a trace:
  0  no layer failed and every layer asked for was judged
  1  DIR could not be read (not a saved trace, or from a newer format)
  2  usage error
  3  at least one layer failed
  4  no layer failed, but at least one could not be judged`

var analyzeExample = `  # Judge a saved trace again with this build's checks
  kubectl svctrace analyze ./web-incident

  # The same, as JSON for a bot
  kubectl svctrace analyze ./web-incident -o json`

// AnalyzeOptions is what analyze needs.
type AnalyzeOptions struct {
	Dir    string
	Output string
	Color  string
	// Version is this build's version, written into the result.
	Version string

	text render.TextOptions
	deps deps
	genericiooptions.IOStreams
}

// AddFlags registers analyze's output flags, named as the trace's.
func (o *AnalyzeOptions) AddFlags(flags *pflag.FlagSet) {
	addOutputFlags(flags, &o.Output, &o.Color, render.Formats)
}

func addOutputFlags(flags *pflag.FlagSet, output, color *string, formats []string) {
	flags.StringVarP(output, "output", "o", *output, "output format: "+strings.Join(formats, ", ")+" (default: human-readable text)")
	flags.StringVar(color, "color", *color, "color the text output: auto, always or never (auto: only on a terminal, when NO_COLOR is empty and TERM is not dumb)")
}

// diffFormats are the -o values of diff: a comparison has no wide view
// and no picture.
var diffFormats = []string{render.FormatJSON, render.FormatYAML}

func decideOutput(output, color string, formats []string, d deps, streams genericiooptions.IOStreams) (render.TextOptions, error) {
	if output != render.FormatText && !slices.Contains(formats, output) {
		return render.TextOptions{}, usageErrorf("invalid --output %q: must be one of %s", output, strings.Join(formats, ", "))
	}
	text, err := render.DecideTextOptions(color, d.isTTY(streams.Out), d.getenv)
	if err != nil {
		return text, &UsageError{Err: err}
	}
	return text, nil
}

// Complete takes DIR and decides the text options.
func (o *AnalyzeOptions) Complete(args []string) error {
	if len(args) != 1 {
		return usageErrorf("analyze takes one DIR, got %d arguments", len(args))
	}
	o.Dir = args[0]
	text, err := decideOutput(o.Output, o.Color, render.Formats, o.deps, o.IOStreams)
	o.text = text
	return err
}

// Validate checks DIR is a saved trace before anything is printed.
func (o *AnalyzeOptions) Validate() error {
	if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
		return usageErrorf("%s is not a directory written by --save", o.Dir)
	}
	return nil
}

// Run judges the bundle and prints the result.
func (o *AnalyzeOptions) Run() error {
	b, err := bundle.Read(o.Dir)
	if err != nil {
		return err
	}
	t := b.Analyze(o.Version)
	if err := render.Print(o.Out, t, o.Output, o.text); err != nil {
		return err
	}
	if saved := b.Result; saved != nil && (saved.Verdict.Status != t.Verdict.Status || saved.Verdict.Code != t.Verdict.Code) {
		fmt.Fprintf(o.ErrOut, "note: svctrace %s judged this trace %s %s when it was taken; this build (%s) judges it %s %s\n",
			orNone(b.Manifest.SvctraceVersion), saved.Verdict.Status, saved.Verdict.Code, o.Version, t.Verdict.Status, t.Verdict.Code)
	}
	return verdictError(t)
}

func orNone(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

func newCmdAnalyze(streams genericiooptions.IOStreams, info BuildInfo, d deps) *cobra.Command {
	o := &AnalyzeOptions{Color: render.ColorAuto, Version: info.Version, deps: d, IOStreams: streams}
	cmd := &cobra.Command{
		Use:               "analyze DIR [flags]",
		Short:             "Judge a saved trace again, offline, with this build's checks",
		Long:              analyzeLong,
		Example:           analyzeExample,
		ValidArgsFunction: dirCompletion,
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	o.AddFlags(cmd.Flags())
	addConnectionFlags(cmd, d.client)
	return cmd
}

var diffLong = `Compare two traces: the findings (warnings, failures, checks that could not be judged)
that appeared in AFTER, that are gone from it, and that changed status or message; which
layers moved; and both verdicts.

BEFORE and AFTER are each a directory written by --save, or a file holding a trace printed
with -o json or -o yaml. A saved directory is judged again with this build's checks (as
analyze does), so two bundles from different svctrace versions compare on the same checks; a
file is compared as printed. A finding is identified by its layer, its code and its node:
the same warning on another node is a new finding.

Typical pairs: before and after a rollout or a fix; the same Service traced from two nodes.

diff reads nothing from a cluster; it accepts kubectl's connection flags and ignores them.

Exit codes:
  0  the comparison was printed (whether or not the traces differ)
  1  BEFORE or AFTER could not be read
  2  usage error`

var diffExample = `  # What changed between two saved traces (before and after a rollout)
  kubectl svctrace diff ./before ./after

  # The same between two -o json results, as JSON for a bot
  kubectl svctrace diff before.json after.json -o json`

// DiffOptions is what diff needs.
type DiffOptions struct {
	Before, After string
	Output        string
	Color         string
	Version       string

	text render.TextOptions
	deps deps
	genericiooptions.IOStreams
}

// Complete takes BEFORE and AFTER and decides the text options.
func (o *DiffOptions) Complete(args []string) error {
	if len(args) != 2 {
		return usageErrorf("diff takes BEFORE and AFTER, got %d arguments", len(args))
	}
	o.Before, o.After = args[0], args[1]
	text, err := decideOutput(o.Output, o.Color, diffFormats, o.deps, o.IOStreams)
	o.text = text
	return err
}

// Validate checks both exist.
func (o *DiffOptions) Validate() error {
	for _, p := range []string{o.Before, o.After} {
		if _, err := os.Stat(p); err != nil {
			return usageErrorf("%s: no such trace file or saved-trace directory", p)
		}
	}
	return nil
}

// Run reads both traces and prints their comparison.
func (o *DiffOptions) Run() error {
	before, err := o.load(o.Before)
	if err != nil {
		return err
	}
	after, err := o.load(o.After)
	if err != nil {
		return err
	}
	d := report.Diff(before, after)
	d.Before.Source, d.After.Source = o.Before, o.After
	return render.PrintDiff(o.Out, d, o.Output, o.text)
}

// load reads one side: a bundle directory, judged again, or a printed result.
func (o *DiffOptions) load(path string) (*report.ServiceTrace, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		b, err := bundle.Read(path)
		if err != nil {
			return nil, err
		}
		return b.Analyze(o.Version), nil
	}
	return ReadResult(path)
}

// ReadResult reads a ServiceTrace printed with -o json or -o yaml.
func ReadResult(path string) (*report.ServiceTrace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t report.ServiceTrace
	if err := yaml.Unmarshal(data, &t); err != nil {
		return nil, fmt.Errorf("%s is not a trace printed with -o json or -o yaml: %w", path, err)
	}
	if t.APIVersion != report.APIVersion || t.Kind != report.Kind {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q, want %s %s", path, t.APIVersion, t.Kind, report.APIVersion, report.Kind)
	}
	return &t, nil
}

func newCmdDiff(streams genericiooptions.IOStreams, info BuildInfo, d deps) *cobra.Command {
	o := &DiffOptions{Color: render.ColorAuto, Version: info.Version, deps: d, IOStreams: streams}
	cmd := &cobra.Command{
		Use:               "diff BEFORE AFTER [flags]",
		Short:             "Compare two traces: findings added, gone and changed",
		Long:              diffLong,
		Example:           diffExample,
		ValidArgsFunction: fileCompletion,
		RunE: func(_ *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run()
		},
	}
	addOutputFlags(cmd.Flags(), &o.Output, &o.Color, diffFormats)
	addConnectionFlags(cmd, d.client)
	return cmd
}

func dirCompletion(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveFilterDirs
}

func fileCompletion(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 1 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveDefault
}
