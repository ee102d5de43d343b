package iptables

import (
	"context"

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
	keys := policyEnforcerKeys()
	st.ensure(ctx, keys...)
	var seen []string
	for _, k := range keys {
		if l := st.get(k); l.exists && l.err == nil {
			seen = append(seen, k.chain)
		}
	}
	if len(seen) > 0 {
		bo.PolicyEnforcer, bo.PolicyEnforcerChains = collectorapi.PolicyEnforcerKubeRouter, seen
	}
}

// policyEnforcerKeys are the chains readPolicyEnforcer looks at; callers
// probing other chains first list them in the same round.
func policyEnforcerKeys() []chainKey {
	keys := make([]chainKey, len(kubeRouterChains))
	for i, c := range kubeRouterChains {
		keys[i] = chainKey{"filter", c}
	}
	return keys
}
