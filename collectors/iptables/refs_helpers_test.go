package iptables

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// entryCounts names a port's entry rules as "kind from→target" with their
// number, from the rules read or from the reference counts: the two readers
// must agree on it.
func entryCounts(p collectorapi.IPTablesPortObservation) map[string]int {
	out := map[string]int{}
	for _, e := range p.Entry {
		out[fmt.Sprintf("%s %s→%s", e.Kind, chainServices, e.Target())]++
	}
	for _, r := range p.NodePorts {
		out[fmt.Sprintf("nodePort %s→%s", chainNodePorts, r.Target())]++
	}
	for _, e := range p.EntryReferences {
		out[fmt.Sprintf("%s %s→%s", e.Kind, e.From, e.Target)] += e.Count
	}
	return out
}

// withoutEntries is b without what only one of the two entry proofs holds:
// the entry rules (Entry, NodePorts, NodePortsTail, Other: the chains the
// text reader reached from KUBE-SERVICES by comment) and the counts. The
// entries are compared with entryCounts instead.
func withoutEntries(b collectorapi.IPTablesBackendObservation) collectorapi.IPTablesBackendObservation {
	b.EntryProof, b.EntryProofFallback, b.Generation, b.NodePortsTail = "", "", 0, nil
	ports := make([]collectorapi.IPTablesPortObservation, len(b.Ports))
	for i, p := range b.Ports {
		p.Entry, p.NodePorts, p.References, p.EntryReferences = nil, nil, nil, nil
		ports[i] = p
	}
	b.Ports = ports
	return b
}

// sameEntries reports how the entry rules of text (read rule by rule) and
// kernel (established by reference counts) differ, "" when they agree. The
// text reader must have found no chain by comment alone (Other): the
// reference counts see only the port's own chains.
func sameEntries(text, kernel collectorapi.IPTablesBackendObservation) string {
	if len(text.Ports) != len(kernel.Ports) {
		return fmt.Sprintf("%d ports, kernel %d", len(text.Ports), len(kernel.Ports))
	}
	for i := range text.Ports {
		t, k := text.Ports[i], kernel.Ports[i]
		if len(t.Other) > 0 {
			return fmt.Sprintf("%s: the text reader found chains by comment: %v", t.ServicePortName, t.Other)
		}
		a, b := entryCounts(t), entryCounts(k)
		if fmt.Sprint(sortedCounts(a)) != fmt.Sprint(sortedCounts(b)) {
			return fmt.Sprintf("%s: entries read %v, by reference %v", t.ServicePortName, sortedCounts(a), sortedCounts(b))
		}
		if len(k.NodePorts) > 0 && mustJSON(k.NodePorts) != mustJSON(t.NodePorts) {
			return fmt.Sprintf("%s: KUBE-NODEPORTS rules differ:\n%s\n%s", t.ServicePortName, mustJSON(k.NodePorts), mustJSON(t.NodePorts))
		}
	}
	return ""
}

func sortedCounts(m map[string]int) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s ×%d", k, v))
	}
	sort.Strings(out)
	return out
}

func mustJSON(v any) string {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		panic(err)
	}
	return string(b)
}

// requireReferences fails unless b's entry rules were established by
// reference counts.
func requireReferences(t *testing.T, name string, b collectorapi.IPTablesBackendObservation) {
	t.Helper()
	if b.EntryProof != collectorapi.IPTablesEntryProofReferences {
		t.Errorf("%s: entry proof %q, want references (fallback: %s)", name, b.EntryProof, b.EntryProofFallback)
	}
}
