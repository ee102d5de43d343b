package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/cliexample"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakegateway"
	"github.com/svctrace/kubectl-svctrace/trace/frontdoor"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

const holmesToolsetPath = "../../integrations/holmesgpt/svctrace.yaml"

// holmesToolsets is the part of a HolmesGPT toolset file this test reads.
type holmesToolsets struct {
	Toolsets map[string]struct {
		Description     string   `json:"description"`
		Tags            []string `json:"tags"`
		LLMInstructions string   `json:"llm_instructions"`
		Prerequisites   []struct {
			Command string `json:"command"`
		} `json:"prerequisites"`
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			Command     string `json:"command"`
		} `json:"tools"`
	} `json:"toolsets"`
}

// holmesSamples fill the tools' {{ parameters }}, naming objects of objects().
var holmesSamples = map[string]string{"service": "web", "namespace": "default", "port": "http", "client_pod": "web-1",
	"front_door": "httproute/store"}

// exitAsResult is what every tool appends: svctrace's exit 3 (a layer
// failed) and 4 (could not judge) come with a printed result, which Holmes
// must read instead of reporting a failed command.
const exitAsResult = "rc=$?; if [ $rc -eq 3 ] || [ $rc -eq 4 ]; then exit 0; fi; exit $rc"

var placeholder = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)

// reportingInspector stands in for the collectors: every node fails.
type reportingInspector struct{}

func (reportingInspector) Inspect(context.Context, plan.NodePlan) (*plan.NodeReport, error) {
	return &plan.NodeReport{Failure: "no collectors in unit tests"}, nil
}

// TestHolmesGPTToolset parses the shipped toolset and checks each command
// line against the real CLI: the prerequisite runs, every tool's svctrace
// invocation parses with the trace's own flags, asks for -o json and
// --color never, runs against a fake cluster to a JSON result, and its
// shell wrapper turns exit 3 and 4 into success and keeps other codes.
func TestHolmesGPTToolset(t *testing.T) {
	data, err := os.ReadFile(holmesToolsetPath)
	if err != nil {
		t.Fatal(err)
	}
	var file holmesToolsets
	if err := yaml.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	ts, ok := file.Toolsets["svctrace"]
	if !ok || ts.Description == "" || ts.LLMInstructions == "" || len(ts.Tools) == 0 {
		t.Fatalf("no svctrace toolset with a description, instructions and tools: %+v", file)
	}
	if len(ts.Prerequisites) != 1 || ts.Prerequisites[0].Command != "kubectl svctrace version" {
		t.Errorf("prerequisites %+v, want kubectl svctrace version", ts.Prerequisites)
	}
	words, _ := cliexample.Split(ts.Prerequisites[0].Command)
	root, out, _ := exampleRoot()
	root.SetArgs(words[2:])
	if err := root.Execute(); err != nil || !strings.Contains(out.String(), "version:") {
		t.Errorf("prerequisite: %v\n%s", err, out)
	}

	seen := map[string]bool{}
	for _, tool := range ts.Tools {
		t.Run(tool.Name, func(t *testing.T) {
			if seen[tool.Name] || tool.Description == "" {
				t.Fatalf("duplicate or undescribed tool %q", tool.Name)
			}
			seen[tool.Name] = true
			var missing []string
			line := placeholder.ReplaceAllStringFunc(tool.Command, func(m string) string {
				name := placeholder.FindStringSubmatch(m)[1]
				v, ok := holmesSamples[name]
				if !ok {
					missing = append(missing, name)
				}
				return v
			})
			if len(missing) > 0 {
				t.Fatalf("parameters %q have no sample value", missing)
			}
			invocation, wrapper, ok := strings.Cut(line, "; ")
			if !ok || wrapper != exitAsResult {
				t.Fatalf("command %q does not end with %q", tool.Command, exitAsResult)
			}
			words, err := cliexample.Split(invocation)
			if err != nil || len(words) < 3 || words[0] != "kubectl" || words[1] != "svctrace" {
				t.Fatalf("%q is not a kubectl svctrace command line (%v)", invocation, err)
			}
			args := words[2:]
			if !strings.Contains(invocation, " -o json") || !strings.Contains(invocation, " --color never") {
				t.Errorf("%q: want -o json --color never", invocation)
			}
			fresh, _, _ := exampleRoot()
			c, positional, err := cliexample.Resolve(fresh, args)
			if err != nil {
				t.Fatalf("%q does not parse: %v", invocation, err)
			}
			if c != fresh || len(positional) != 1 {
				t.Fatalf("%q runs %q with %q, want the trace of one Service", invocation, c.CommandPath(), positional)
			}

			// Run it: a Service with no ready endpoint exits 3 with its JSON.
			streams, _, stdout, stderr := genericiooptions.NewTestIOStreams()
			f := NewTraceFlags()
			f.deps.getter = testGetter()
			client := fake.NewClientset(objects(false)...)
			f.deps.client = func(genericclioptions.RESTClientGetter) (kubernetes.Interface, error) { return client, nil }
			f.deps.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
			f.deps.getenv = func(string) string { return "" }
			f.deps.inspector = reportingInspector{}
			f.deps.frontdoor = func(genericclioptions.RESTClientGetter, kubernetes.Interface) (*frontdoor.Reader, error) {
				return fakegateway.Reader(client, fakegateway.ServedV1, nil, gatewayObjects("web")...), nil
			}
			cmd := newCmdSvctrace(streams, BuildInfo{Version: "v1.2.3"}, f)
			cmd.SetArgs(args)
			err = cmd.ExecuteContext(context.Background())
			if code := ExitCode(err); code != ExitLayerFailed {
				t.Fatalf("exit %d (%v), want 3\nstderr: %s", code, err, stderr)
			}
			var tr report.ServiceTrace
			if err := json.Unmarshal(stdout.Bytes(), &tr); err != nil || tr.Verdict.Status != report.StatusFail {
				t.Fatalf("stdout is not a failing ServiceTrace (%v):\n%s", err, stdout)
			}
			if strings.Contains(stdout.String(), "\x1b[") {
				t.Error("ANSI escapes in the JSON")
			}

			bash, err := exec.LookPath("bash")
			if err != nil {
				return
			}
			for rc, want := range map[int]int{0: 0, 1: 1, 2: 2, 3: 0, 4: 0} {
				script := "kubectl() { echo '{}'; return " + string(rune('0'+rc)) + "; }; " + line
				err := exec.Command(bash, "-c", script).Run()
				got := 0
				if ee, ok := err.(*exec.ExitError); ok {
					got = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("svctrace exit %d: the tool exits %d, want %d", rc, got, want)
				}
			}
		})
	}
}
