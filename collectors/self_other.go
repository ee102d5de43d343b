//go:build !unix

package collectors

import collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"

// ReadResources is only measured where getrusage exists; the collector runs
// on Linux, but its packages build anywhere.
func ReadResources() collectorapi.Resources { return collectorapi.Resources{} }
