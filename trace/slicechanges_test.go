package trace

import (
	"context"
	"reflect"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// inspectFunc is a NodeInspector from a function.
type inspectFunc func(ctx context.Context, np plan.NodePlan) (*plan.NodeReport, error)

func (f inspectFunc) Inspect(ctx context.Context, np plan.NodePlan) (*plan.NodeReport, error) {
	return f(ctx, np)
}

// traceWithChange traces healthy() (endpoints 10.244.1.5 and 10.244.2.5)
// on nodes whose kube-proxy programmed only programmed; change, when set,
// edits the slice after the API read, while the nodes are read.
func traceWithChange(t *testing.T, programmed string, change func(*discoveryv1.EndpointSlice)) (*input.Input, *report.ServiceTrace) {
	t.Helper()
	client := fake.NewClientset(healthy()...)
	rules := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{
		iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", programmed, 1))}}
	inspector := inspectFunc(func(ctx context.Context, np plan.NodePlan) (*plan.NodeReport, error) {
		if change != nil {
			s, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "web-abc", metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			change(s)
			if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
				return nil, err
			}
		}
		r := &plan.NodeReport{}
		for _, n := range np.Nodes {
			// No kube-proxy metrics: nothing says a sync is pending.
			r.Nodes = append(r.Nodes, plan.NodeView{Node: n.Name, Roles: n.Roles, Observation: observation(t, collectorapi.ModeIPTables, rules, nil)})
		}
		return r, nil
	})
	opts := Options{Inspector: inspector, Now: fixedNow}
	in, nodes, err := Collect(context.Background(), client, "default", "web", opts)
	if err != nil {
		t.Fatal(err)
	}
	tr := Assemble(in, nodes, opts)
	assertCatalogued(t, tr)
	return in, tr
}

func dropSecond(s *discoveryv1.EndpointSlice) { s.Endpoints = s.Endpoints[:1] }

// TestSliceChangedDuringRead: an endpoint leaves the EndpointSlice after the
// API read and kube-proxy has already dropped it when the node is read: the
// rules lack an endpoint the API read lists, a warning that says the slice
// changed during the read, not a datapath fault. The same rules with no
// change during the read fail, and so does an endpoint missing from the
// rules that the change did not touch.
func TestSliceChangedDuringRead(t *testing.T) {
	in, tr := traceWithChange(t, "10.244.1.5:8080", dropSecond)
	want := []input.SliceChange{{Slice: "web-abc", Type: "MODIFIED", Family: "IPv4", Addresses: []string{"10.244.2.5"}}}
	if !reflect.DeepEqual(in.SlicesChangedDuringRead, want) {
		t.Fatalf("SlicesChangedDuringRead = %+v, want %+v", in.SlicesChangedDuringRead, want)
	}
	dp := nodeCodes(tr, report.LayerDatapath, "")
	if _, ok := dp[report.CodeDPMissingEndpoints]; ok {
		t.Errorf("%s for an endpoint removed while the nodes were read", report.CodeDPMissingEndpoints)
	}
	c, ok := dp[report.CodeDPSyncPending]
	if !ok || !strings.Contains(c.Message, "EndpointSlice web-abc modified while the nodes were read") || !strings.Contains(c.Message, "10.244.2.5:8080") {
		t.Errorf("%s = %q (present %v), want the slice change and the endpoint named", report.CodeDPSyncPending, c.Message, ok)
	}
	if s := tr.Layer(report.LayerDatapath).Status; s != report.StatusWarn {
		t.Errorf("datapath layer %s, want warn", s)
	}
	for _, p := range tr.Matrix.Ports {
		for _, row := range p.Nodes {
			if row.Status != report.StatusWarn || !strings.Contains(row.Reason, "while the nodes were read") {
				t.Errorf("matrix row %s: %s (%s), want warn with the change", row.Node, row.Status, row.Reason)
			}
		}
	}

	in, tr = traceWithChange(t, "10.244.1.5:8080", nil)
	if len(in.SlicesChangedDuringRead) != 0 {
		t.Errorf("changes seen with none made: %+v", in.SlicesChangedDuringRead)
	}
	if _, ok := nodeCodes(tr, report.LayerDatapath, "")[report.CodeDPMissingEndpoints]; !ok {
		t.Errorf("rules lacking an endpoint, no change during the read: checks %v, want %s", keysOf(nodeCodes(tr, report.LayerDatapath, "")), report.CodeDPMissingEndpoints)
	}

	// The change removed 10.244.2.5; the rules lack 10.244.1.5, which it
	// did not touch.
	_, tr = traceWithChange(t, "10.244.2.5:8080", dropSecond)
	dp = nodeCodes(tr, report.LayerDatapath, "")
	if c, ok := dp[report.CodeDPMissingEndpoints]; !ok || !strings.Contains(c.Message, "10.244.1.5:8080") {
		t.Errorf("endpoint the change did not touch missing: %s = %q (present %v), checks %v", report.CodeDPMissingEndpoints, c.Message, ok, keysOf(dp))
	}
	if c, ok := dp[report.CodeDPSyncPending]; ok {
		t.Errorf("%s excuses an endpoint the change did not touch: %s", report.CodeDPSyncPending, c.Message)
	}
	if s := tr.Layer(report.LayerDatapath).Status; s != report.StatusFail {
		t.Errorf("datapath layer %s, want fail", s)
	}
}

// TestReadChangesFamilies: a change counts for its own family's rules, on
// the datapaths programmed from the EndpointSlices.
func TestReadChangesFamilies(t *testing.T) {
	nj := &nodeJudge{in: &input.Input{SlicesChangedDuringRead: []input.SliceChange{{Slice: "web-v6", Type: "ADDED", Family: "IPv6", Addresses: []string{"fd00::5"}}}}}
	if rc := nj.readChanges(collectorapi.ModeIPVS, "IPv4"); rc.why != "" {
		t.Errorf("IPv6 slice change explains IPv4 rules: %q", rc.why)
	}
	if rc := nj.readChanges(collectorapi.ModeIPVS, "IPv6"); !strings.Contains(rc.why, "web-v6 added") || !rc.addresses["fd00::5"] {
		t.Errorf("IPv6 change for IPv6 rules: %+v", rc)
	}
	for _, m := range []collectorapi.DatapathMode{collectorapi.ModeCilium, collectorapi.ModeCalico, collectorapi.ModeNFTables} {
		if rc := nj.readChanges(m, "IPv6"); !rc.addresses["fd00::5"] {
			t.Errorf("a change does not explain %s's datapath: %+v", m, rc)
		}
	}
	for _, m := range []collectorapi.DatapathMode{collectorapi.ModeKernelspace, ""} {
		if rc := nj.readChanges(m, "IPv6"); rc.why != "" {
			t.Errorf("a change explains the datapath of programmer %q, which svctrace cannot read: %q", m, rc.why)
		}
	}
}
