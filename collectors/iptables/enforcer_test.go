package iptables

import (
	"slices"
	"strings"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// The filter tables were saved from the testbed's nodes with kube-router
// v2.1.0's firewall running and one NetworkPolicy selecting a web Pod: on the
// iptables node next to kube-proxy's chains, on the nftables node (kube-proxy
// in nft) alone in iptables-nft's tables.
func TestPolicyEnforcerChainsRecorded(t *testing.T) {
	web := scenarioQueries()["web"]
	for _, tc := range []struct {
		fixture string
		legacy  bool
	}{
		{"kube-router-v2.1.0-iptables-node.filter.save", false},
		{"kube-router-v2.1.0-nftables-node.filter.save", false},
		// The same rules as iptables-legacy would hold them.
		{"kube-router-v2.1.0-iptables-node.filter.save", true},
	} {
		d := parseDump(t, readFixture(t, tc.fixture))
		r := &fakeRunner{nft: d}
		name := collectorapi.IPTablesBackendNFTables
		if tc.legacy {
			r = &fakeRunner{legacy: d}
			name = collectorapi.IPTablesBackendLegacy
		}
		b := backend(t, readWith(t, web, r), name)
		want := []string{"KUBE-ROUTER-FORWARD", "KUBE-ROUTER-INPUT", "KUBE-ROUTER-OUTPUT"}
		if !slices.Equal(b.PolicyEnforcerChains, want) || b.PolicyEnforcer != collectorapi.PolicyEnforcerKubeRouter {
			t.Errorf("%s (legacy %v): enforcer %q chains %v, want kube-router %v", tc.fixture, tc.legacy, b.PolicyEnforcer, b.PolicyEnforcerChains, want)
		}
		if !b.FilterJumpsRead || !slices.Contains(b.FilterJumps, "KUBE-ROUTER-FORWARD") || !slices.Contains(b.FilterJumps, "KUBE-ROUTER-INPUT") {
			t.Errorf("%s (legacy %v): filter jumps %v (read %v), want kube-router's hooks among them", tc.fixture, tc.legacy, b.FilterJumps, b.FilterJumpsRead)
		}
	}
}

// kube-proxy's own filter chains are no policy enforcer.
func TestPolicyEnforcerAbsentWithKubeProxyOnly(t *testing.T) {
	d := parseDump(t, readFixture(t, "scenarios.save"))
	b := backend(t, readWith(t, scenarioQueries()["web"], &fakeRunner{nft: d}), collectorapi.IPTablesBackendNFTables)
	if b.PolicyEnforcer != "" || len(b.PolicyEnforcerChains) != 0 {
		t.Errorf("enforcer %q chains %v on kube-proxy's rules alone", b.PolicyEnforcer, b.PolicyEnforcerChains)
	}
	for _, j := range b.FilterJumps {
		if !strings.HasPrefix(j, "KUBE-") {
			t.Errorf("filter jump %s on kube-proxy's rules alone: %v", j, b.FilterJumps)
		}
	}
	if !b.FilterJumpsRead || !slices.Contains(b.FilterJumps, "KUBE-FORWARD") {
		t.Errorf("filter jumps %v (read %v), want kube-proxy's KUBE-FORWARD among them", b.FilterJumps, b.FilterJumpsRead)
	}
}
