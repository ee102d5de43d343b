package teardown

import (
	"fmt"
	"strings"
)

// fmtSscan reads the pid from a "/proc/<pid>..." line of testbedProcesses.
func fmtSscan(line string, pid *int) (int, error) {
	return fmt.Sscan(strings.TrimPrefix(strings.SplitN(line, ":", 2)[0], "/proc/"), pid)
}
