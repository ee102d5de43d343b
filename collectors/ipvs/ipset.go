package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// IPSetTester is the one ipset call the reader makes: a membership test,
// which costs the same whatever the set's size.
type IPSetTester interface {
	IpsetTest(setName string, entry *netlink.IPSetEntry) (bool, error)
}

// netlinkIPSet tests through the kernel's ipset netlink interface, on the
// reader's netfilter socket.
type netlinkIPSet struct{ h *netlink.Handle }

func (s netlinkIPSet) IpsetTest(set string, e *netlink.IPSetEntry) (bool, error) {
	if e.IP == nil && e.Port != nil {
		return testPortEntry(set, *e.Port)
	}
	return s.h.IpsetTest(set, e)
}

// testPortEntry tests a bitmap:port entry. netlink.IpsetTest always sends a
// protocol with a port, which the kernel's bitmap:port refuses ("invalid
// protocol", seen on 6.1 with the sets kube-proxy creates); `ipset test
// KUBE-NODE-PORT-TCP 30080` sends the port alone, and so does this.
func testPortEntry(set string, port uint16) (bool, error) {
	req := nl.NewNetlinkRequest(nl.IPSET_CMD_TEST|(unix.NFNL_SUBSYS_IPSET<<8), nl.GetIpsetFlags(nl.IPSET_CMD_TEST)|unix.NLM_F_EXCL)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: uint8(unix.AF_INET), Version: nl.NFNETLINK_V0})
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_PROTOCOL, nl.Uint8Attr(nl.IPSET_PROTOCOL)))
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_SETNAME, nl.ZeroTerminated(set)))
	data := nl.NewRtAttr(nl.IPSET_ATTR_DATA|int(nl.NLA_F_NESTED), nil)
	buf := make([]byte, 2)
	binary.BigEndian.PutUint16(buf, port)
	data.AddChild(nl.NewRtAttr(int(nl.IPSET_ATTR_PORT|nl.NLA_F_NET_BYTEORDER), buf))
	req.AddData(data)
	_, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	if err == nil {
		return true, nil
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && int(errno) >= nl.IPSET_ERR_PRIVATE {
		if int(errno) == nl.IPSET_ERR_EXIST {
			return false, nil
		}
		return false, nl.IPSetError(uintptr(errno))
	}
	return false, err
}

// ipsetProbe is one entry of the Service to look up.
type ipsetProbe struct {
	collectorapi.IPSetMembership
	entry *netlink.IPSetEntry
}

// ipsetName is kube-proxy's set name for the family: IPv6 sets are
// "KUBE-6-…", cut to ipset's 31 characters (pkg/proxy/ipvs/ipset.go).
func ipsetName(name string, ipv6 bool) string {
	if !ipv6 {
		return name
	}
	name = "KUBE-6-" + strings.TrimPrefix(name, "KUBE-")
	if len(name) > 31 {
		name = name[:31]
	}
	return name
}

// ipsetProbes lists the Service's entries in every set kube-proxy's IPVS
// proxier could put them in (pkg/proxy/ipvs/proxier.go syncProxyRules), with
// the entry strings as `ipset list` shows them.
func ipsetProbes(req *collectorapi.Request, nodeIPs []netip.Addr) []ipsetProbe {
	var out []ipsetProbe
	add := func(set, kind string, local, ipv6 bool, text string, e *netlink.IPSetEntry) {
		out = append(out, ipsetProbe{collectorapi.IPSetMembership{Set: ipsetName(set, ipv6), Entry: text, Kind: kind, Local: local}, e})
	}
	svc := &req.Service
	ipPort := func(set, kind string, local bool, ip netip.Addr, proto string, port uint16) {
		p, pr := port, protoNumber(proto)
		prn := uint8(pr)
		add(set, kind, local, ip.Is6(), fmt.Sprintf("%s,%s:%d", ip, strings.ToLower(proto), port),
			&netlink.IPSetEntry{IP: net.IP(ip.AsSlice()), Port: &p, Protocol: &prn})
	}
	bound := map[netip.Addr]bool{}
	for _, fe := range svc.Frontends() {
		a := fe.Addr.Addr()
		switch fe.Kind {
		case "clusterIP":
			ipPort("KUBE-CLUSTER-IP", fe.Kind, false, a, fe.Protocol, fe.Addr.Port())
		case "externalIP":
			ipPort("KUBE-EXTERNAL-IP", fe.Kind, false, a, fe.Protocol, fe.Addr.Port())
			ipPort("KUBE-EXTERNAL-IP-LOCAL", fe.Kind, true, a, fe.Protocol, fe.Addr.Port())
		case "loadBalancerIP":
			ipPort("KUBE-LOAD-BALANCER", fe.Kind, false, a, fe.Protocol, fe.Addr.Port())
			ipPort("KUBE-LOAD-BALANCER-LOCAL", fe.Kind, true, a, fe.Protocol, fe.Addr.Port())
		}
		if !bound[a] {
			bound[a] = true
			add("KUBE-IPVS-IPS", "kubeIPVS0", false, a.Is6(), a.String(), &netlink.IPSetEntry{IP: net.IP(a.AsSlice())})
		}
	}
	families := map[bool]bool{}
	for _, ip := range svc.ClusterIPs {
		if a, err := netip.ParseAddr(ip); err == nil {
			families[a.Unmap().Is6()] = true
		}
	}
	for _, p := range svc.Ports {
		proto := strings.ToUpper(p.Protocol)
		if p.NodePort != 0 {
			np := uint16(p.NodePort)
			switch proto {
			case "TCP", "UDP":
				for _, ipv6 := range famList(families) {
					for _, local := range []bool{false, true} {
						set := "KUBE-NODE-PORT-" + proto
						if local {
							set = "KUBE-NODE-PORT-LOCAL-" + proto
						}
						port := np
						add(set, "nodePort", local, ipv6, strconv.Itoa(int(np)), &netlink.IPSetEntry{Port: &port})
					}
				}
			case "SCTP":
				for _, ip := range nodeIPs {
					ipPort("KUBE-NODE-PORT-SCTP-HASH", "nodePort", false, ip, proto, np)
					ipPort("KUBE-NODE-PORT-LOCAL-SCTP-HASH", "nodePort", true, ip, proto, np)
				}
			}
		}
		// Hairpin: a local endpoint connecting to its own Service.
		for _, ep := range req.Endpoints {
			port, ok := ep.Ports[p.Name]
			a, err := netip.ParseAddr(ep.IP)
			if !ok || err != nil || req.NodeName == "" || ep.NodeName != req.NodeName {
				continue
			}
			a = a.Unmap()
			pp, prn := uint16(port), uint8(protoNumber(proto))
			add("KUBE-LOOP-BACK", "loopback", false, a.Is6(), fmt.Sprintf("%s,%s:%d,%s", a, strings.ToLower(proto), port, a),
				&netlink.IPSetEntry{IP: net.IP(a.AsSlice()), Port: &pp, Protocol: &prn, IP2: net.IP(a.AsSlice())})
		}
	}
	if hc := svc.HealthCheckNodePort; hc != 0 {
		for _, ipv6 := range famList(families) {
			port := uint16(hc)
			add("KUBE-HEALTH-CHECK-NODE-PORT", "healthCheckNodePort", false, ipv6, strconv.Itoa(int(hc)), &netlink.IPSetEntry{Port: &port})
		}
	}
	return out
}

// testIPSets looks every probe up. A missing set is reported as such (the
// kernel answers ENOENT), not as an error.
func testIPSets(t IPSetTester, probes []ipsetProbe) []collectorapi.IPSetMembership {
	out := make([]collectorapi.IPSetMembership, 0, len(probes))
	for _, p := range probes {
		m := p.IPSetMembership
		found, err := t.IpsetTest(m.Set, p.entry)
		switch {
		case err == nil:
			m.Found = found
		case errors.Is(err, syscall.ENOENT):
			m.SetMissing = true
		default:
			m.Error = err.Error()
		}
		out = append(out, m)
	}
	return out
}

// ipvsSysctls are the sysctls kube-proxy's IPVS proxier sets (NewProxier).
var ipvsSysctls = []string{"conntrack", "conn_reuse_mode", "expire_nodest_conn", "expire_quiescent_template"}

// readSysctls reads them from procSys (/proc/sys) for this network namespace.
func readSysctls(procSys string) map[string]string {
	out := map[string]string{}
	for _, n := range ipvsSysctls {
		b, err := os.ReadFile(filepath.Join(procSys, "net", "ipv4", "vs", n))
		if err == nil {
			out["net.ipv4.vs."+n] = strings.TrimSpace(string(b))
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func kernelRelease() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	b := make([]byte, 0, len(u.Release))
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	return string(b)
}

// famList is the families present, IPv4 first.
func famList(f map[bool]bool) []bool {
	var out []bool
	for _, v6 := range []bool{false, true} {
		if f[v6] {
			out = append(out, v6)
		}
	}
	return out
}
