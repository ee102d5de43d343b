// Package input is what the Kubernetes API says about one Service: the
// reads a trace makes (Fetch and the reads that depend on the options: the
// client's namespace policies, the cluster DNS Pods, the policy kinds beyond
// NetworkPolicy, namespace labels, the nodes, the EndpointSlice watch while
// the nodes are read) and Input, the one value they fill. The judges in
// trace read Input and nothing else from the API, and the node plan is
// computed from it, so a saved Input can be judged again without a cluster.
//
// Its files follow the reads: input.go holds Input, Fetch and the node
// reads; policies.go the NetworkPolicy, namespace-label and DNS-Pod reads;
// policykinds.go the admin tiers and the policy kinds svctrace counts but
// does not evaluate (PolicyReader); slicewatch.go the EndpointSlice watch;
// closest.go the nearest names shown when a Service, namespace or selector
// matches nothing.
//
// Compatibility: Input is a bundle's input.json (package bundle), and a
// bundle of svctrace.dev/v1alpha1 must decode the same in every later
// svctrace. Its fields are only ever added, never renamed, retyped or
// removed, and a JSON field name never changes; a new field's zero value
// must mean what an old bundle, which lacks it, meant. Gap keeps its own
// JSON form (the error as its message). The scenario goldens under
// trace/testdata/scenarios are recorded bundles that hold this to account.
// Anything else needs a new bundle version.
package input
