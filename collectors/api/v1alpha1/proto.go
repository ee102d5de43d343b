package v1alpha1

import (
	"strconv"
	"strings"
)

// IPProtoNumber is the IP protocol number of a Service port protocol (TCP,
// UDP, SCTP), 0 when unknown: the key conntrack and the eBPF maps use.
func IPProtoNumber(p string) uint8 {
	switch strings.ToUpper(p) {
	case "TCP":
		return 6
	case "UDP":
		return 17
	case "SCTP":
		return 132
	}
	return 0
}

// IPProtoName names an IP protocol number the way Services do; 0 is ANY
// (Cilium's wildcard-protocol frontends).
func IPProtoName(n uint8) string {
	switch n {
	case 6:
		return "TCP"
	case 17:
		return "UDP"
	case 132:
		return "SCTP"
	case 0:
		return "ANY"
	}
	return strconv.Itoa(int(n))
}
