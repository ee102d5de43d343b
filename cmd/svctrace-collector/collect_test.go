package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/probe"
)

// TestSectionsCoverEveryName keeps the collector's table in step with the
// contract: one reader per section name, in the order of AllSections.
func TestSectionsCoverEveryName(t *testing.T) {
	var names []string
	for _, s := range sections(&collectorapi.Request{}, Options{}, &collectorapi.Sections{}, nil) {
		names = append(names, s.name)
	}
	if !slices.Equal(names, collectorapi.AllSections) {
		t.Errorf("sections %v, want %v", names, collectorapi.AllSections)
	}
}

// A frontend probe failed, but the collector's time is up: the second,
// rule-by-rule read cannot run, and the first read (entry rules proved by
// reference counts) stays, with the reason, rather than being replaced by a
// read cut short that holds no rules.
func TestRereadKeepsTheFirstReadWhenTimeIsUp(t *testing.T) {
	first := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{{
		Backend: "nf_tables", Family: "IPv4", KubeProxyChains: true,
		EntryProof: collectorapi.IPTablesEntryProofReferences,
		Ports:      []collectorapi.IPTablesPortObservation{{}},
	}}}
	obs := &collectorapi.Observation{}
	obs.Sections.IPTables = &collectorapi.Section[collectorapi.IPTablesObservation]{Status: collectorapi.StatusOK, Data: first}
	obs.Sections.Probe = &collectorapi.Section[collectorapi.ProbeObservation]{Status: collectorapi.StatusOK, Data: &collectorapi.ProbeObservation{
		Probes: []collectorapi.Probe{{Target: "clusterIP", Address: "10.96.0.20:80", Protocol: "TCP", Outcome: probe.OutcomeFailed}}}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rereadIPTablesEntries(ctx, &collectorapi.Request{}, Options{}, obs)
	got := obs.Sections.IPTables.Data
	if got != first || len(got.Backends[0].Ports) != 1 || !got.Backends[0].KubeProxyChains {
		t.Fatalf("the first read was replaced: %+v", got)
	}
	if !strings.Contains(got.Backends[0].EntryRereadError, "clusterIP 10.96.0.20:80") {
		t.Errorf("EntryRereadError %q does not say which probe failed", got.Backends[0].EntryRereadError)
	}
}

func TestIncompleteRead(t *testing.T) {
	first := &collectorapi.IPTablesObservation{Backends: make([]collectorapi.IPTablesBackendObservation, 2)}
	ok := &collectorapi.Section[collectorapi.IPTablesObservation]{Data: &collectorapi.IPTablesObservation{Backends: make([]collectorapi.IPTablesBackendObservation, 2)}}
	if why := incompleteRead(ok, first); why != "" {
		t.Errorf("a complete read judged incomplete: %s", why)
	}
	for name, s := range map[string]*collectorapi.Section[collectorapi.IPTablesObservation]{
		"no data":        {Error: "boom"},
		"section error":  {Error: "context deadline exceeded", Data: ok.Data},
		"fewer backends": {Data: &collectorapi.IPTablesObservation{Backends: make([]collectorapi.IPTablesBackendObservation, 1)}},
		"backend error": {Data: &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{
			{}, {Backend: "nf_tables", Family: "IPv4", Error: "iptables-nft -t filter -S KUBE-ROUTER-FORWARD: context deadline exceeded"}}}},
	} {
		if incompleteRead(s, first) == "" {
			t.Errorf("%s: judged complete", name)
		}
	}
}
