//go:build tools

// Package agent only pins the Cilium module; the binaries are built by
// test/testbed/cilium/build.sh with `go build github.com/cilium/cilium/<cmd>`.
package agent

import _ "github.com/cilium/cilium/pkg/loadbalancer/maps"
