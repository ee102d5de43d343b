// Package schema embeds the JSON Schemas of svctrace's documents, so the
// binary can hand them out (the MCP tool's output schema) exactly as the
// repository documents them.
package schema

import _ "embed"

// ServiceTraceV1alpha1 is servicetrace.v1alpha1.json, the schema of a
// ServiceTrace document (-o json).
//
//go:embed servicetrace.v1alpha1.json
var ServiceTraceV1alpha1 []byte
