package nftables

import (
	"strconv"
	"strings"
)

// elemKey is a key of kube-proxy's maps: "addr . proto . port"
// (service-ips, no-endpoint-services, firewall-ips), "proto . port"
// (service-nodeports, no-endpoint-nodeports), or "addr" (cluster-ips).
type elemKey struct {
	IP    string
	Proto string
	Port  int32
}

func (k elemKey) String() string {
	var parts []string
	if k.IP != "" {
		parts = append(parts, k.IP)
	}
	if k.Proto != "" {
		parts = append(parts, k.Proto, strconv.Itoa(int(k.Port)))
	}
	return strings.Join(parts, " . ")
}

func netipJoin(ip string, port uint16) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + strconv.Itoa(int(port))
	}
	return ip + ":" + strconv.Itoa(int(port))
}
