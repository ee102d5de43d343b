// Wrapper module that builds the pinned Cilium agent from the Go module proxy.
// Nested so the svctrace module never sees Cilium's dependency graph.
module svctrace.test/cilium-agent

go 1.26.0

require github.com/cilium/cilium v1.20.2

// Upstream's own replace (replace directives of a dependency are not inherited).
replace sigs.k8s.io/controller-tools => github.com/cilium/controller-tools v0.21.0-1

// Cilium v1.20.2 pins a gobgp pseudo-version the proxy does not serve; v4.7.0 compiles.
replace github.com/osrg/gobgp/v4 => github.com/osrg/gobgp/v4 v4.7.0

// No version of sigs.k8s.io/mcs-api/controllers is served; the agent and operator
// use one constant from it (see mcsstub/).
replace sigs.k8s.io/mcs-api/controllers => ./mcsstub
