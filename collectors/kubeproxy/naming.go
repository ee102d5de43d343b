// Package kubeproxy holds kube-proxy's own naming rules (v1.37): the
// ServicePortName and endpoint strings, the iptables chain-name hashes and the
// nftables chain names. The node readers use them to address one Service's
// chains directly instead of reading a whole ruleset. Every recipe here is
// checked against the test vectors of docs/datapath.md §1.2 and §2.2.
package kubeproxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// ServicePortName is kube-proxy's ServicePortName.String(): "ns/name:port",
// or "ns/name" (no colon) for an unnamed port.
func ServicePortName(namespace, name, portName string) string {
	if portName == "" {
		return namespace + "/" + name
	}
	return namespace + "/" + name + ":" + portName
}

// EndpointString is net.JoinHostPort(ip, port) after kube-proxy's sloppy
// re-parse of the IP, so "10.180.00.001" becomes "10.180.0.1".
func EndpointString(ip string, port int32) string {
	return net.JoinHostPort(NormalizeIP(ip), strconv.Itoa(int(port)))
}

// NormalizeIP re-parses an IP the way kube-proxy does (leading zeros in IPv4
// octets are dropped). Strings that are not IPs are returned unchanged.
func NormalizeIP(ip string) string {
	if a, err := netip.ParseAddr(ip); err == nil {
		return a.Unmap().String()
	}
	parts := strings.Split(ip, ".")
	if len(parts) == 4 {
		out := make([]string, 4)
		for i, p := range parts {
			n, err := strconv.Atoi(p)
			if err != nil || n < 0 || n > 255 {
				return ip
			}
			out[i] = strconv.Itoa(n)
		}
		return strings.Join(out, ".")
	}
	return ip
}

// hash16 is the first 16 characters of base32(sha256(s)).
func hash16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return base32.StdEncoding.EncodeToString(sum[:])[:16]
}

// PortProtoHash is kube-proxy's portProtoHash: h16(spn + lowercase(proto)).
func PortProtoHash(spn, protocol string) string {
	return hash16(spn + strings.ToLower(protocol))
}

// IPTablesChains are the per-Service-port chain names of iptables mode.
type IPTablesChains struct {
	Service  string `json:"service"`  // KUBE-SVC-…
	Local    string `json:"local"`    // KUBE-SVL-…
	External string `json:"external"` // KUBE-EXT-…
	Firewall string `json:"firewall"` // KUBE-FW-…
}

// IPTablesServiceChains names the SVC/SVL/EXT/FW chains of one Service port.
func IPTablesServiceChains(spn, protocol string) IPTablesChains {
	h := PortProtoHash(spn, protocol)
	return IPTablesChains{
		Service:  "KUBE-SVC-" + h,
		Local:    "KUBE-SVL-" + h,
		External: "KUBE-EXT-" + h,
		Firewall: "KUBE-FW-" + h,
	}
}

// IPTablesEndpointChain names the KUBE-SEP chain of one endpoint of a Service
// port; endpoint is the EndpointString.
func IPTablesEndpointChain(spn, protocol, endpoint string) string {
	return "KUBE-SEP-" + hash16(spn+strings.ToLower(protocol)+endpoint)
}

// nftNameLimit is kube-proxy's chainNameLengthLimit for nftables names.
const nftNameLimit = 240

// nftHashAndTruncate is kube-proxy's hashAndTruncate: an 8-character hash,
// a dash and the name, cut to 237 characters plus "..." when longer than 240.
func nftHashAndTruncate(name string) string {
	sum := sha256.Sum256([]byte(name))
	s := base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + name
	if len(s) > nftNameLimit {
		s = s[:nftNameLimit-3] + "..."
	}
	return s
}

// NFTServicePortKey is the string nftables mode hashes for a Service port:
// "ns/name/proto/portName" (protocol before the port name; an unnamed port
// leaves a trailing slash).
func NFTServicePortKey(namespace, name, protocol, portName string) string {
	return namespace + "/" + name + "/" + strings.ToLower(protocol) + "/" + portName
}

// NFTServiceChains names the service/local/external/firewall chains of one
// Service port in the kube-proxy nftables table, in the shape the nftables
// section reports them.
func NFTServiceChains(namespace, name, protocol, portName string) collectorapi.NFTablesChainNames {
	base := nftHashAndTruncate(NFTServicePortKey(namespace, name, protocol, portName))
	return collectorapi.NFTablesChainNames{
		Base:     base,
		Service:  "service-" + base,
		Local:    "local-" + base,
		External: "external-" + base,
		Firewall: "firewall-" + base,
	}
}

// NFTEndpointBase is servicePortEndpointChainNameBase: the hashed name of one
// endpoint of a Service port ("<svcKey>__<ip with ':'→'.'>/<port>"). The
// endpoint chain is "endpoint-"+base and the affinity set "affinity-"+base.
// ip is used as given: pass NormalizeIP(ip) for an address taken from an
// EndpointSlice, as kube-proxy re-parses those before hashing.
func NFTEndpointBase(namespace, name, protocol, portName, ip string, port int32) string {
	ip = strings.ReplaceAll(ip, ":", ".")
	key := NFTServicePortKey(namespace, name, protocol, portName) + "__" + ip + "/" + strconv.Itoa(int(port))
	return nftHashAndTruncate(key)
}

// ComputeProbability is kube-proxy's computeProbability: 1/n with 10 decimals.
func ComputeProbability(n int) string {
	return fmt.Sprintf("%0.10f", 1.0/float64(n))
}

// EffectiveShares turns the sequential "statistic random" probabilities of an
// endpoint-selection chain into the share of new connections each rule gets:
// rule i catches p_i of what the rules before it let through. A nil entry is
// a rule without a statistic match (probability 1, normally the last one).
func EffectiveShares(probabilities []*float64) []float64 {
	shares := make([]float64, len(probabilities))
	remaining := 1.0
	for i, p := range probabilities {
		prob := 1.0
		if p != nil {
			prob = *p
		}
		if prob < 0 {
			prob = 0
		}
		if prob > 1 {
			prob = 1
		}
		shares[i] = remaining * prob
		remaining -= shares[i]
	}
	return shares
}
