package collectors

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// capNames are the Linux capability bits, in bit order (capability.h).
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}

// ReadCapabilities reads the effective capability set from /proc/self/status.
func ReadCapabilities() collectorapi.Capabilities {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return collectorapi.Capabilities{Error: err.Error()}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			return ParseCapEff(strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		return collectorapi.Capabilities{Error: err.Error()}
	}
	return collectorapi.Capabilities{Error: "no CapEff line in /proc/self/status"}
}

// ParseCapEff decodes a CapEff hex mask into capability names.
func ParseCapEff(hex string) collectorapi.Capabilities {
	c := collectorapi.Capabilities{EffectiveHex: hex}
	mask, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		c.Error = fmt.Sprintf("parse CapEff %q: %v", hex, err)
		return c
	}
	for bit := 0; bit < 64; bit++ {
		if mask&(1<<bit) == 0 {
			continue
		}
		if bit < len(capNames) {
			c.Effective = append(c.Effective, capNames[bit])
		} else {
			c.Effective = append(c.Effective, fmt.Sprintf("CAP_%d", bit))
		}
	}
	return c
}
