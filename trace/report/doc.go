// Package report is svctrace's result model and its check catalog: the
// ServiceTrace document (layers, checks, evidence, verdict, endpoint matrix),
// every check code with its severity and templates, and the emitter that
// turns a code and its arguments into a Check. The judges in trace write it;
// render, bundle and the CLI read it without depending on the judges.
//
// Field names are part of the v1alpha1 contract
// (docs/schema/servicetrace.v1alpha1.json): add fields, never rename them.
// Codes are stable: never renumber or reuse one. The catalog is split by
// code prefix, one file per prefix (catalog_dp.go holds every DP code);
// catalog.go holds the spec type, the shared next steps and NewCheck.
package report
