package iptables

import (
	"context"
	"maps"
	"slices"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// kubeRouterChains are the filter chains kube-router's network-policy
// controller creates at start-up, before any policy exists
// (pkg/controllers/netpol/network_policy_controller.go, v2.1.0), so their
// presence says the enforcer runs on the node, not that it selected a Pod.
var kubeRouterChains = []string{"KUBE-ROUTER-FORWARD", "KUBE-ROUTER-INPUT", "KUBE-ROUTER-OUTPUT"}

// readPolicyEnforcer records which NetworkPolicy enforcer's chains exist in
// the backend's filter table. The three chains are tiny and read even where
// kube-proxy has no rules in this backend: kube-router uses the iptables
// front end the node defaults to whatever kube-proxy's mode.
func readPolicyEnforcer(ctx context.Context, st *store, bo *collectorapi.IPTablesBackendObservation) {
	st.ensure(ctx, policyEnforcerKeys()...)
	var seen []string
	for _, c := range kubeRouterChains {
		k := chainKey{"filter", c}
		if l := st.get(k); l.exists && l.err == nil {
			seen = append(seen, k.chain)
		}
	}
	if len(seen) > 0 {
		bo.PolicyEnforcer, bo.PolicyEnforcerChains = collectorapi.PolicyEnforcerKubeRouter, seen
	}
	targets := map[string]bool{}
	for _, k := range filterHookKeys {
		l := st.get(k)
		if l.err != nil {
			return
		}
		for t := range l.jumps {
			targets[t] = true
		}
		for _, r := range l.rules {
			for _, t := range []string{r.Jump, r.Goto} {
				if t != "" {
					targets[t] = true
				}
			}
		}
	}
	bo.FilterJumps, bo.FilterJumpsRead = slices.Sorted(maps.Keys(targets)), true
}

// filterHookKeys are the filter table's built-in chains, where enforcers
// hook their own: few rules, whoever wrote them.
var filterHookKeys = []chainKey{{"filter", "INPUT"}, {"filter", "FORWARD"}, {"filter", "OUTPUT"}}

// policyEnforcerKeys are the chains readPolicyEnforcer looks at; callers
// probing other chains first list them in the same round.
func policyEnforcerKeys() []chainKey {
	keys := make([]chainKey, len(kubeRouterChains), len(kubeRouterChains)+len(filterHookKeys))
	for i, c := range kubeRouterChains {
		keys[i] = chainKey{"filter", c}
	}
	return append(keys, filterHookKeys...)
}

func isFilterHookKey(k chainKey) bool { return k.table == "filter" && isFilterHook([]byte(k.chain)) }

func keepNone(string, []byte) bool { return false }

func isFilterHook(chain []byte) bool {
	for _, k := range filterHookKeys {
		if string(chain) == k.chain {
			return true
		}
	}
	return false
}
