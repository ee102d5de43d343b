package trace

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// dualStackRecorded is the Input and observation of the real kube-proxy
// v1.37.2 programming a RequireDualStack Service in mode (iptables or
// nftables) on a dual-stack node (collectors/testdata/PROVENANCE.md).
func dualStackRecorded(t *testing.T, mode string) (*input.Input, *collectorapi.Observation) {
	t.Helper()
	dir := "../collectors/testdata/observations"
	var api struct {
		Nodes          []corev1.Node               `json:"nodes"`
		Services       []corev1.Service            `json:"services"`
		EndpointSlices []discoveryv1.EndpointSlice `json:"endpointSlices"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "dualstack", "api.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &api); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(dir, "real-kube-proxy-"+mode+"-dualstack-netns.json"))
	if err != nil {
		t.Fatal(err)
	}
	var obs collectorapi.Observation
	if err := json.Unmarshal(b, &obs); err != nil {
		t.Fatal(err)
	}
	in := nodeInput()
	in.Service = &api.Services[0]
	in.Slices = api.EndpointSlices
	in.Pods = nil
	in.Nodes = map[string]*corev1.Node{}
	for i := range api.Nodes {
		in.Nodes[api.Nodes[i].Name] = &api.Nodes[i]
	}
	return in, &obs
}

// TestJudgeRealDualStack: a healthy dual-stack Service as the real
// kube-proxy programmed it passes in both families, in iptables mode (whose
// IPv4 rules live in iptables and IPv6 rules in ip6tables, each with its
// own canary: neither is a leftover of the other) and in nftables mode.
func TestJudgeRealDualStack(t *testing.T) {
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) {
			in, obs := dualStackRecorded(t, mode)
			tr := judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: obs})
			dp := tr.Layer(report.LayerDatapath)
			matched := map[string]bool{}
			families := map[string]bool{}
			for _, c := range dp.Checks {
				switch c.Code {
				case report.CodeDPRulesMatch:
					matched[c.Message] = true
					families[c.Family] = true
					// The structured family agrees with the message, which
					// names the family of a port that is not the primary's.
					if c.Family == "" || (c.Family == "IPv6") != strings.Contains(c.Message, "IPv6)") {
						t.Errorf("%s with family %q: %s", c.Code, c.Family, c.Message)
					}
				case report.CodeDPLeftovers, report.CodeDPNoRules, report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints:
					t.Errorf("%s: %s", c.Code, c.Message)
				}
				if c.Status == report.StatusFail {
					t.Errorf("FAIL %s: %s", c.Code, c.Message)
				}
			}
			if !families["IPv4"] || !families["IPv6"] {
				t.Errorf("rules matched in families %v, want IPv4 and IPv6", slices.Sorted(maps.Keys(families)))
			}
			if len(matched) != 2 {
				t.Errorf("rules matched for %d ports, want one per family: %v", len(matched), keysOf(nodeCodes(tr, report.LayerDatapath, obs.NodeName)))
			}
		})
	}
}
