package trace

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestAssembleFromSavedInputAndObservations re-judges a trace from what a
// live trace would save: the API input and the node report, both written
// to JSON and read back, with no cluster and no inspector. The result must
// equal the one assembled from the objects in memory.
func TestAssembleFromSavedInputAndObservations(t *testing.T) {
	in, obs := realKubeProxyInput(t, "nftables")
	report := &NodeReport{
		Collector: &CollectorRun{Image: "svctrace.local/collector:dev", Namespace: "svctrace-system", Profile: "netadmin"},
		Nodes:     []NodeView{{Node: obs.NodeName, Roles: []string{RoleEndpoints}, Observation: &obs}},
	}
	opts := Options{Now: fixedNow, Version: "test"}
	live := Assemble(in, report, opts)

	var savedIn Input
	var savedReport NodeReport
	roundTrip(t, in, &savedIn)
	roundTrip(t, report, &savedReport)
	offline := Assemble(&savedIn, &savedReport, opts)

	if !reflect.DeepEqual(jsonOf(t, live), jsonOf(t, offline)) {
		t.Fatalf("offline result differs from the live one:\nlive:    %s\noffline: %s", jsonOf(t, live), jsonOf(t, offline))
	}
	if s := offline.Layer(LayerDatapath).Status; s != StatusPass {
		t.Fatalf("datapath %s, want pass: the recorded nftables rules match the slice", s)
	}
	requireNodeCheck(t, offline, LayerDatapath, CodeDPRulesMatch, obs.NodeName)
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
