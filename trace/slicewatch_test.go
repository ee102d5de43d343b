package trace

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// inspectFunc is a NodeInspector from a function.
type inspectFunc func(ctx context.Context, plan NodePlan) (*NodeReport, error)

func (f inspectFunc) Inspect(ctx context.Context, plan NodePlan) (*NodeReport, error) {
	return f(ctx, plan)
}

// TestSliceChangedDuringRead: an endpoint leaves the EndpointSlice after the
// API read and kube-proxy has already dropped it when the node is read. The
// rules then lack an endpoint the API read lists: a warning that says the
// slice changed during the read, not a datapath fault. The same rules with
// no change during the read still fail.
func TestSliceChangedDuringRead(t *testing.T) {
	for _, change := range []bool{true, false} {
		client := fake.NewClientset(healthy()...)
		// kube-proxy programmed only the endpoint left after the change,
		// and its metrics were not read (no sync evidence either way).
		rules := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{
			iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 1))}}
		inspector := inspectFunc(func(ctx context.Context, plan NodePlan) (*NodeReport, error) {
			if change {
				s, err := client.DiscoveryV1().EndpointSlices("default").Get(ctx, "web-abc", metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				s.Endpoints = s.Endpoints[:1]
				if _, err := client.DiscoveryV1().EndpointSlices("default").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
					return nil, err
				}
			}
			r := &NodeReport{}
			for _, n := range plan.Nodes {
				r.Nodes = append(r.Nodes, NodeView{Node: n.Name, Roles: n.Roles, Observation: observation(t, collectorapi.ModeIPTables, rules, nil)})
			}
			return r, nil
		})
		in, nodes, err := Collect(context.Background(), client, "default", "web", Options{Inspector: inspector, Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		tr := Assemble(in, nodes, Options{Inspector: inspector, Now: fixedNow})
		assertCatalogued(t, tr)
		dp := nodeCodes(tr, report.LayerDatapath, "")
		if !change {
			if len(in.SlicesChangedDuringRead) != 0 {
				t.Errorf("changes seen with none made: %+v", in.SlicesChangedDuringRead)
			}
			if _, ok := dp[report.CodeDPMissingEndpoints]; !ok {
				t.Errorf("rules lacking an endpoint the API lists, no change during the read: checks %v, want %s", keysOf(dp), report.CodeDPMissingEndpoints)
			}
			continue
		}
		if want := (SliceChange{Slice: "web-abc", Type: "MODIFIED", Family: "IPv4"}); len(in.SlicesChangedDuringRead) != 1 || in.SlicesChangedDuringRead[0] != want {
			t.Fatalf("SlicesChangedDuringRead = %+v, want [%+v]", in.SlicesChangedDuringRead, want)
		}
		if _, ok := dp[report.CodeDPMissingEndpoints]; ok {
			t.Errorf("%s for an endpoint removed while the nodes were read", report.CodeDPMissingEndpoints)
		}
		c, ok := dp[report.CodeDPSyncPending]
		if !ok || !strings.Contains(c.Message, "changed while the nodes were read (web-abc modified)") || !strings.Contains(c.Message, "10.244.2.5:8080") {
			t.Errorf("%s = %q (present %v), want the slice change and the endpoint named", report.CodeDPSyncPending, c.Message, ok)
		}
		if s := tr.Layer(report.LayerDatapath).Status; s != report.StatusWarn {
			t.Errorf("datapath layer %s, want warn", s)
		}
	}
}

// TestChangedDuringReadFamilies: a change counts for its own family's rules
// on kube-proxy's datapaths only.
func TestChangedDuringReadFamilies(t *testing.T) {
	v6 := []SliceChange{{Slice: "web-v6", Type: "ADDED", Family: "IPv6"}}
	if why := changedDuringRead(v6, collectorapi.ModeIPVS, "IPv4"); why != "" {
		t.Errorf("IPv6 slice change excuses IPv4 rules: %q", why)
	}
	if why := changedDuringRead(v6, collectorapi.ModeIPVS, "IPv6"); !strings.Contains(why, "web-v6 added") {
		t.Errorf("IPv6 change for IPv6 rules: %q", why)
	}
	if why := changedDuringRead(v6, collectorapi.ModeCilium, "IPv6"); why != "" {
		t.Errorf("a change excuses Cilium's maps: %q", why)
	}
}
