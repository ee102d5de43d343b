// Package v1alpha1 is the contract between svctrace-collector, which runs on
// a node, and the kubectl-svctrace plugin, which judges what it saw: API
// version svctrace.dev/v1alpha1, kinds CollectRequest (Request, what the
// plugin asks for one Service) and NodeObservation (Observation, what one
// collector run saw on one node), with every section's data typed here, the
// way an API group's types.go holds its kinds.
//
// The package holds types, names (sections, datapath modes, error classes)
// and pure helpers on them; it does no I/O and imports no node reader, so
// that the plugin, which imports only this package from the collector side,
// links no netlink, nftables, eBPF, IPVS or conntrack code. Importers name
// it collectorapi.
//
// Compatibility: within v1alpha1 fields are only added, never renamed,
// retyped or removed, and a JSON field name never changes, so that a
// recorded observation (collectors/testdata/observations) decodes the same
// in every later plugin of this version. Anything else needs a new version.
package v1alpha1
