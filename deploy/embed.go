// Package deploy embeds the manifests the binary applies itself, so
// `kubectl svctrace agent install` installs exactly what the repository ships.
package deploy

import _ "embed"

// Agent is agent.yaml: the node agent's DaemonSet.
//
//go:embed agent.yaml
var Agent []byte
