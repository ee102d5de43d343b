//go:build unix

package collectors

import (
	"syscall"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// ReadResources measures the process's own peak RSS and CPU, and its waited-for
// children's, with getrusage (ru_maxrss is in KiB on Linux).
func ReadResources() collectorapi.Resources {
	var self, children syscall.Rusage
	var r collectorapi.Resources
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil {
		r.PeakRSSSelfKiB = self.Maxrss
		r.UserCPUMillis = float64(self.Utime.Sec)*1000 + float64(self.Utime.Usec)/1000
		r.SystemCPUMillis = float64(self.Stime.Sec)*1000 + float64(self.Stime.Usec)/1000
	}
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children) == nil {
		r.PeakRSSChildrenKiB = children.Maxrss
	}
	return r
}
