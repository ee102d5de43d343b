// Package ipvs reads one Service's IPVS state: the virtual server for each
// ClusterIP, externalIP, LB IP and NodePort (on every node IP), with its
// scheduler, flags and persistence timeout, the real servers behind it with
// weight (0 = kube-proxy is draining it) and connection counts, and the
// addresses bound on kube-ipvs0.
//
// The kernel svctrace is developed on has no IPVS (CONFIG_IP_VS unset), so the
// moby/ipvs calls sit behind the narrow Handle interface and the reader is
// tested with recorded data through it; on such a kernel the section reports
// "ipvs not available in this kernel" as a status, not as a failure.
package ipvs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unsafe"

	"github.com/moby/ipvs"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// Handle is the part of *ipvs.Handle the reader uses (per-service lookups, so
// the cost follows this Service, not the node's thousands of virtual servers).
type Handle interface {
	GetService(*ipvs.Service) (*ipvs.Service, error)
	GetDestinations(*ipvs.Service) ([]*ipvs.Destination, error)
}

// Reader reads IPVS through Handle. NodeIPs are the addresses NodePort
// virtual servers listen on; KubeIPVS0 says which of the Service's addresses
// are on kube-ipvs0.
type Reader struct {
	Handle    Handle
	NodeIPs   []netip.Addr
	KubeIPVS0 *collectorapi.LinkAddresses
	// IPSets, when set, looks up the Service's ipset entries.
	IPSets IPSetTester
	// Sysctls and KernelRelease are copied into the observation.
	Sysctls       map[string]string
	KernelRelease string
}

// IPVS service flags (include/uapi/linux/ip_vs.h).
const (
	FlagPersistent = 0x0001
	FlagHashed     = 0x0002
	FlagOnePacket  = 0x0004
	FlagSched1     = 0x0008
	FlagSched2     = 0x0010
	FlagSched3     = 0x0020
)

// FlagNames names the set service flags.
func FlagNames(f uint32) []string {
	var out []string
	for _, n := range []struct {
		bit  uint32
		name string
	}{{FlagPersistent, "persistent"}, {FlagHashed, "hashed"}, {FlagOnePacket, "one-packet"},
		{FlagSched1, "sched-flag-1"}, {FlagSched2, "sched-flag-2"}, {FlagSched3, "sched-flag-3"}} {
		if f&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// Available says whether this network namespace has IPVS: /proc/net/ip_vs
// exists once the ip_vs module is loaded. The reader never loads it.
func Available(proc string) bool {
	_, err := os.Stat(filepath.Join(proc, "net", "ip_vs"))
	return err == nil
}

// Read opens IPVS in the current network namespace and reads the Service.
func Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.IPVSObservation, error) {
	obs := &collectorapi.IPVSObservation{}
	// One handle, one socket per netlink family, for every route and ipset
	// request of the read: the package-level netlink functions open, bind
	// and close a socket per call, and system calls are what the read costs
	// (a dozen of them saved per Service, more with NodePorts).
	nlh, err := netlink.NewHandle(unix.NETLINK_ROUTE, unix.NETLINK_NETFILTER)
	if err != nil {
		return obs, fmt.Errorf("netlink: %w", err)
	}
	defer nlh.Close()
	kubeIPVS0, nodeIPs := linkAddresses(nlh, &req.Service)
	obs.KubeIPVS0 = kubeIPVS0
	if !Available("/proc/thread-self") {
		obs.Status = "ipvs not available in this kernel (no /proc/net/ip_vs: ip_vs not built or not loaded)"
		return obs, collectors.Unavailable("%s", obs.Status)
	}
	// Only now: ipvs.New runs "modprobe ip_vs" once, a no-op when it is loaded.
	h, err := ipvs.New("")
	if err != nil {
		return obs, fmt.Errorf("ipvs netlink: %w", err)
	}
	defer h.Close()
	return (&Reader{Handle: h, NodeIPs: nodeIPs, KubeIPVS0: kubeIPVS0, IPSets: netlinkIPSet{nlh},
		Sysctls: readSysctls("/proc/sys"), KernelRelease: kernelRelease()}).Read(ctx, req)
}

// Read looks up every expected frontend of the Service.
func (r *Reader) Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.IPVSObservation, error) {
	obs := &collectorapi.IPVSObservation{Available: true, KubeIPVS0: r.KubeIPVS0, Sysctls: r.Sysctls, KernelRelease: r.KernelRelease}
	type frontend struct {
		kind, portName, protocol string
		addr                     netip.AddrPort
	}
	var fes []frontend
	for _, fe := range req.Service.Frontends() {
		fes = append(fes, frontend{fe.Kind, fe.PortName, fe.Protocol, fe.Addr})
	}
	for _, p := range req.Service.Ports {
		if p.NodePort == 0 {
			continue
		}
		for _, ip := range r.NodeIPs {
			fes = append(fes, frontend{"nodePort", p.Name, p.Protocol, netip.AddrPortFrom(ip, uint16(p.NodePort))})
		}
	}
	for _, fe := range fes {
		if err := ctx.Err(); err != nil {
			return obs, err
		}
		vs := collectorapi.IPVSVirtualServer{Frontend: fe.kind, PortName: fe.portName, Address: fe.addr.Addr().String(),
			Port: fe.addr.Port(), Protocol: fe.protocol}
		family := uint16(syscall.AF_INET)
		if fe.addr.Addr().Is6() {
			family = syscall.AF_INET6
		}
		svc, err := r.Handle.GetService(&ipvs.Service{Address: net.IP(fe.addr.Addr().AsSlice()), Port: fe.addr.Port(),
			Protocol: protoNumber(fe.protocol), AddressFamily: family})
		if err != nil || svc == nil {
			if err != nil && !isNotFound(err) {
				vs.Error = err.Error()
			}
			obs.VirtualServers = append(obs.VirtualServers, vs)
			continue
		}
		vs.Found = true
		vs.Scheduler, vs.Flags, vs.FlagNames = svc.SchedName, svc.Flags, FlagNames(svc.Flags)
		vs.TimeoutSeconds, vs.Netmask = svc.Timeout, svc.Netmask
		dests, err := r.Handle.GetDestinations(svc)
		if err != nil {
			vs.Error = "destinations: " + err.Error()
		}
		for _, d := range dests {
			vs.RealServers = append(vs.RealServers, collectorapi.IPVSRealServer{
				Address: d.Address.String(), Port: d.Port, Weight: d.Weight,
				ActiveConns: d.ActiveConnections, InactiveConns: d.InactiveConnections,
				Forwarding: forwarding(d.ConnectionFlags),
			})
		}
		obs.VirtualServers = append(obs.VirtualServers, vs)
	}
	if r.IPSets != nil {
		obs.IPSets = testIPSets(r.IPSets, ipsetProbes(req, r.NodeIPs))
	}
	return obs, nil
}

// isNotFound: IPVS answers a lookup of a missing service with ESRCH, and
// moby/ipvs turns an empty answer into "Expected only one service obtained=0".
func isNotFound(err error) bool {
	s := err.Error()
	return strings.Contains(s, "no such process") || strings.Contains(s, "obtained=0")
}

func forwarding(flags uint32) string {
	switch flags & ipvs.ConnFwdMask {
	case ipvs.ConnFwdMasq:
		return "masq"
	case ipvs.ConnFwdLocalNode:
		return "local"
	case ipvs.ConnFwdTunnel:
		return "tunnel"
	case ipvs.ConnFwdDirectRoute:
		return "route"
	case ipvs.ConnFwdBypass:
		return "bypass"
	}
	return fmt.Sprintf("0x%x", flags)
}

func protoNumber(p string) uint16 {
	switch strings.ToUpper(p) {
	case "TCP":
		return syscall.IPPROTO_TCP
	case "UDP":
		return syscall.IPPROTO_UDP
	case "SCTP":
		return 132
	}
	return 0
}

// linkAddresses reads whether kube-ipvs0 holds the Service's addresses and,
// when the Service has a NodePort, the node IPs NodePorts listen on in IPVS
// mode. Both reads are per Service, not per node: a node with thousands of
// Services has thousands of addresses on kube-ipvs0, so neither dumps them.
//   - An address is on kube-ipvs0 when the kernel's FIB entry for it (the
//     "local" route the kernel adds for every bound address, found with
//     RTM_F_FIB_MATCH, as `ip route get fibmatch`) points at kube-ipvs0.
//   - Node IPs are kube-proxy's (GetAllLocalAddressesExcept): every address
//     not on kube-ipvs0, loopback and IPv6 link-local excluded; read per link
//     with the kernel filtering the dump by interface (strict checking).
func linkAddresses(nlh *netlink.Handle, svc *collectorapi.ServiceSpec) (*collectorapi.LinkAddresses, []netip.Addr) {
	la := &collectorapi.LinkAddresses{Name: "kube-ipvs0"}
	ipvsIndex := -1
	link, err := nlh.LinkByName("kube-ipvs0")
	switch {
	case err == nil:
		la.Present = true
		ipvsIndex = link.Attrs().Index
	case !errors.As(err, new(netlink.LinkNotFoundError)):
		la.Error = err.Error()
	}
	seen := map[netip.Addr]bool{}
	for _, fe := range svc.Frontends() {
		a := fe.Addr.Addr()
		if seen[a] {
			continue
		}
		seen[a] = true
		la.Checked = append(la.Checked, a.String())
		routes, err := nlh.RouteGetWithOptions(net.IP(a.AsSlice()), &netlink.RouteGetOptions{FIBMatch: true})
		if errors.Is(err, unix.ENETUNREACH) || errors.Is(err, unix.EHOSTUNREACH) {
			continue // no route at all (no default route): not local either
		}
		if err != nil {
			if la.Error == "" {
				la.Error = fmt.Sprintf("route get fibmatch %s: %v", a, err)
			}
			continue
		}
		for _, r := range routes {
			if r.Type != unix.RTN_LOCAL {
				continue
			}
			if la.Present && r.LinkIndex == ipvsIndex {
				la.Addresses = append(la.Addresses, a.String())
			} else {
				la.LocalElsewhere = append(la.LocalElsewhere, a.String())
			}
			break
		}
	}
	hasNodePort := false
	for _, p := range svc.Ports {
		hasNodePort = hasNodePort || p.NodePort != 0
	}
	if !hasNodePort {
		return la, nil
	}
	links, err := nlh.LinkList()
	if err != nil {
		la.Error = "links: " + err.Error()
		return la, nil
	}
	var nodeIPs []netip.Addr
	for _, l := range links {
		if l.Attrs().Index == ipvsIndex {
			continue
		}
		addrs, err := addrsOfLink(l.Attrs().Index)
		if err != nil {
			la.Error = fmt.Sprintf("addresses of %s: %v", l.Attrs().Name, err)
			continue
		}
		for _, ip := range addrs {
			if ip.IsLoopback() || (ip.Is6() && ip.IsLinkLocalUnicast()) {
				continue
			}
			nodeIPs = append(nodeIPs, ip)
		}
	}
	return la, nodeIPs
}

// addrsOfLink dumps one interface's addresses. With NETLINK_GET_STRICT_CHK
// the kernel (4.20+) dumps only that interface; older kernels dump every
// address and the index check below keeps the answer right.
func addrsOfLink(index int) ([]netip.Addr, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_GET_STRICT_CHK, 1)
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfAddrmsg)
	hdr := (*unix.NlMsghdr)(unsafe.Pointer(&req[0]))
	*hdr = unix.NlMsghdr{Len: uint32(len(req)), Type: unix.RTM_GETADDR, Flags: unix.NLM_F_REQUEST | unix.NLM_F_DUMP, Seq: 1}
	msg := (*unix.IfAddrmsg)(unsafe.Pointer(&req[unix.SizeofNlMsghdr]))
	*msg = unix.IfAddrmsg{Family: unix.AF_UNSPEC, Index: uint32(index)}
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, err
	}
	var out []netip.Addr
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return out, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return out, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				return out, nil
			case unix.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if errno := -int32(binary.NativeEndian.Uint32(m.Data[:4])); errno != 0 {
						return out, syscall.Errno(errno)
					}
				}
				return out, nil
			case unix.RTM_NEWADDR:
			default:
				continue
			}
			if len(m.Data) < unix.SizeofIfAddrmsg {
				continue
			}
			ifa := (*unix.IfAddrmsg)(unsafe.Pointer(&m.Data[0]))
			if int(ifa.Index) != index {
				continue
			}
			attrs, err := syscall.ParseNetlinkRouteAttr(&m)
			if err != nil {
				continue
			}
			var addr, local []byte
			for _, a := range attrs {
				switch a.Attr.Type {
				case unix.IFA_ADDRESS:
					addr = a.Value
				case unix.IFA_LOCAL:
					local = a.Value
				}
			}
			if local != nil { // IPv4 point-to-point: IFA_LOCAL is ours, IFA_ADDRESS the peer
				addr = local
			}
			if ip, ok := netip.AddrFromSlice(addr); ok {
				out = append(out, ip.Unmap())
			}
		}
	}
}
