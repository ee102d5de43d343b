package trace

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestAssembleFromSavedInputAndObservations re-judges a trace from what a
// live trace would save: the API input and the node report, both written
// to JSON and read back, with no cluster and no inspector. The result must
// equal the one assembled from the objects in memory.
func TestAssembleFromSavedInputAndObservations(t *testing.T) {
	in, obs := realKubeProxyInput(t, "nftables")
	nr := &plan.NodeReport{
		Collector: &report.CollectorRun{Image: "svctrace.local/collector:dev", Namespace: "svctrace-system", Profile: "netadmin"},
		Nodes:     []plan.NodeView{{Node: obs.NodeName, Roles: []string{plan.RoleEndpoints}, Observation: &obs}},
	}
	opts := Options{Now: fixedNow, Version: "test"}
	live := Assemble(in, nr, opts)

	var savedIn input.Input
	var savedReport plan.NodeReport
	roundTrip(t, in, &savedIn)
	roundTrip(t, nr, &savedReport)
	offline := Assemble(&savedIn, &savedReport, opts)

	if !reflect.DeepEqual(jsonOf(t, live), jsonOf(t, offline)) {
		t.Fatalf("offline result differs from the live one:\nlive:    %s\noffline: %s", jsonOf(t, live), jsonOf(t, offline))
	}
	if s := offline.Layer(report.LayerDatapath).Status; s != report.StatusPass {
		t.Fatalf("datapath %s, want pass: the recorded nftables rules match the slice", s)
	}
	requireNodeCheck(t, offline, report.LayerDatapath, report.CodeDPRulesMatch, obs.NodeName)
	// Assembling twice from the same report leaves it unchanged (no writes
	// into the judge's input from the judge).
	before := jsonOf(t, savedReport)
	Assemble(&savedIn, &savedReport, opts)
	if after := jsonOf(t, savedReport); after != before {
		t.Fatal("Assemble changed the report it was given")
	}
}

func roundTrip(t *testing.T, v, into any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCollectedInputSurvivesJSON: what Collect reads, failed reads included
// (a forbidden list is a Gap holding an error value), written to JSON and
// read back, assembles to the same result as the live Run.
func TestCollectedInputSurvivesJSON(t *testing.T) {
	tests := []struct {
		name     string
		objs     []runtime.Object
		reactors []reactor
	}{
		{name: "healthy", objs: healthy()},
		{name: "endpointslices forbidden", objs: healthy(), reactors: []reactor{forbidden("list", "endpointslices")}},
		{name: "pods list fails", objs: healthy(), reactors: []reactor{{"list", "pods", errors.New("etcdserver: request timed out")}}},
		{name: "not found", objs: without(healthy(), "Service", "web")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.objs...)
			for _, r := range tt.reactors {
				client.PrependReactor(r.verb, r.resource, func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, r.err })
			}
			opts := Options{Now: fixedNow, NoNode: true, Version: "test"}
			in, nr, err := Collect(context.Background(), client, "default", "web", opts)
			if err != nil {
				t.Fatal(err)
			}
			if nr != nil {
				t.Fatalf("nr %+v with --no-node", nr)
			}
			live := jsonOf(t, Assemble(in, nil, opts))
			var saved input.Input
			roundTrip(t, in, &saved)
			if len(in.Gaps) != len(saved.Gaps) {
				t.Fatalf("%d gaps read back, want %d", len(saved.Gaps), len(in.Gaps))
			}
			for i := range in.Gaps {
				if in.Gaps[i].Err.Error() != saved.Gaps[i].Err.Error() || in.Gaps[i].Forbidden != saved.Gaps[i].Forbidden {
					t.Errorf("gap %d read back as %+v, want %+v", i, saved.Gaps[i], in.Gaps[i])
				}
			}
			if offline := jsonOf(t, Assemble(&saved, nil, opts)); offline != live {
				t.Fatalf("offline result differs:\nlive:    %s\noffline: %s", live, offline)
			}
		})
	}
}
