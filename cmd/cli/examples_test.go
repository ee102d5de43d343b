package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/cliexample"
)

// exampleRoot is a fresh root command whose cluster client always fails:
// an example that needs a cluster is only parsed here (test/e2e runs those).
func exampleRoot() (*cobra.Command, *bytes.Buffer, *bytes.Buffer) {
	streams, _, out, errOut := genericiooptions.NewTestIOStreams()
	f := NewTraceFlags()
	f.deps.getter = testGetter()
	f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) {
		return nil, errors.New("no cluster in unit tests")
	}
	return newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3", Commit: "abc", Date: "2026-01-01"}, f), out, errOut
}

// offlineExamples are the commands whose examples need no cluster, so the
// test runs them: the command's Name, and what its output must hold.
var offlineExamples = map[string][]string{
	"version": {"version:         v1.2.3", "commit:          abc", "collector image: ghcr.io/svctrace/svctrace-collector:v1.2.3"},
}

// TestExamples checks every example of every command the way a user copies
// it: each block opens with a # comment, each line starts with
// "kubectl svctrace", names a command within the one whose help shows it,
// and parses with that command's real flags and Args (an unknown flag, a
// flag without its value or a wrong number of arguments fails). Examples
// that need no cluster are run.
func TestExamples(t *testing.T) {
	root, _, _ := exampleRoot()
	for _, c := range cliexample.Commands(root) {
		path := c.CommandPath()
		lines, err := cliexample.Parse(c.Example)
		if err != nil {
			t.Errorf("%s: Example: %v", path, err)
			continue
		}
		if len(lines) == 0 {
			t.Errorf("%s has no example: give it one, preceded by a # comment line", path)
		}
		for _, l := range lines {
			t.Run(path+"/"+l.Text, func(t *testing.T) {
				fresh, _, _ := exampleRoot()
				got, _, err := cliexample.Resolve(fresh, l.Args)
				if err != nil {
					t.Fatalf("example %q (# %s) does not parse: %v", l.Text, l.Comment, err)
				}
				if !cliexample.IsWithin(got, path) {
					t.Fatalf("example %q in the help of %q runs %q", l.Text, path, got.CommandPath())
				}
				want, offline := offlineExamples[got.Name()]
				if !offline {
					return
				}
				run, out, errOut := exampleRoot()
				run.SetArgs(l.Args)
				err = run.ExecuteContext(context.Background())
				if code := ExitCode(err); code != ExitOK {
					t.Fatalf("%q: exit %d (%v)\nstderr: %s", l.Text, code, err, errOut)
				}
				for _, w := range want {
					if !strings.Contains(out.String(), w) {
						t.Errorf("%q: output lacks %q:\n%s", l.Text, w, out)
					}
				}
			})
		}
	}
}
