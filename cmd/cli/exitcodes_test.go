package cli

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// forbid makes the fake API server refuse one verb on one resource, the way
// a Role without that rule does.
func forbid(verb, resource string) func(*fake.Clientset) {
	return func(c *fake.Clientset) {
		c.PrependReactor(verb, resource, func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: resource}, "", errors.New(verb+" denied"))
		})
	}
}

// TestExitCodeFollowsVerdict: 0 only when every layer asked for was judged
// and none failed; an unknown layer exits 4 unless another layer failed (3
// wins); layers skipped by --no-node never count. The result is printed in
// every case.
func TestExitCodeFollowsVerdict(t *testing.T) {
	tests := []struct {
		name    string
		ready   bool
		react   func(*fake.Clientset)
		want    int
		verdict report.Status
		unknown report.LayerName
	}{
		{name: "healthy, node layers skipped", ready: true, want: ExitOK, verdict: report.StatusPass},
		{name: "no ready endpoint", ready: false, want: ExitLayerFailed, verdict: report.StatusFail},
		{name: "endpointslices forbidden", ready: true, react: forbid("list", "endpointslices"),
			want: ExitNotJudged, verdict: report.StatusUnknown, unknown: report.LayerEndpoints},
		{name: "policies forbidden", ready: true, react: forbid("list", "networkpolicies"),
			want: ExitNotJudged, verdict: report.StatusUnknown, unknown: report.LayerPolicy},
		{name: "policies forbidden and no ready endpoint", ready: false, react: forbid("list", "networkpolicies"),
			want: ExitLayerFailed, verdict: report.StatusFail, unknown: report.LayerPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, run := testCmdWith(objects(tt.ready), tt.react)
			err := run("web", "--no-node", "-o", "json")
			if code := ExitCode(err); code != tt.want {
				t.Fatalf("exit %d (%v), want %d\n%s", code, err, tt.want, out)
			}
			if err != nil && !Silent(err) {
				t.Errorf("exit %d printed an extra error line: %v", tt.want, err)
			}
			var tr report.ServiceTrace
			if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
				t.Fatalf("no result printed: %v\n%s", err, out)
			}
			if tr.Verdict.Status != tt.verdict {
				t.Errorf("verdict %s, want %s: %s", tr.Verdict.Status, tt.verdict, tr.Verdict.Summary)
			}
			if got := VerdictExitCode(&tr); got != tt.want {
				t.Errorf("VerdictExitCode of the printed result is %d, the command exited %d", got, tt.want)
			}
			if tt.unknown != "" {
				if s := tr.Layer(tt.unknown).Status; s != report.StatusUnknown {
					t.Errorf("layer %s is %s, want unknown", tt.unknown, s)
				}
			}
			for _, name := range report.NodeLayers {
				if s := tr.Layer(name).Status; s != report.StatusSkipped {
					t.Errorf("layer %s is %s, want skipped (--no-node)", name, s)
				}
			}
			var nj *NotJudgedError
			if errors.As(err, &nj) && !strings.Contains(err.Error(), string(tt.unknown)) {
				t.Errorf("error %q does not name the %s layer", err, tt.unknown)
			}
		})
	}
}

func TestHelpDocumentsExitCodeFour(t *testing.T) {
	out, _, run := testCmd(objects(true))
	if err := run("--help"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "  4  no layer failed, but at least one could not be judged") {
		t.Fatalf("--help lacks exit code 4:\n%s", out)
	}
}
