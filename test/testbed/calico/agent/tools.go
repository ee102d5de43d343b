//go:build tools

// Package agent only pins the Calico commands so `go mod tidy` keeps their
// dependencies; test/testbed/calico/build.sh builds them with `go build`.
package agent

import (
	_ "github.com/projectcalico/calico/cni-plugin/cmd/calico"
	_ "github.com/projectcalico/calico/node/cmd/calico-node"
)
