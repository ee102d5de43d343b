//go:build tools

// Package tools pins flanneld so that `go mod tidy` keeps its dependencies.
package tools

import _ "github.com/flannel-io/flannel"
