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
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/moby/ipvs"
	"github.com/vishvananda/netlink"

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
// virtual servers listen on; KubeIPVS0 are the addresses on kube-ipvs0.
type Reader struct {
	Handle    Handle
	NodeIPs   []netip.Addr
	KubeIPVS0 *collectorapi.LinkAddresses
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
	kubeIPVS0, nodeIPs := linkAddresses()
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
	return (&Reader{Handle: h, NodeIPs: nodeIPs, KubeIPVS0: kubeIPVS0}).Read(ctx, req)
}

// Read looks up every expected frontend of the Service.
func (r *Reader) Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.IPVSObservation, error) {
	obs := &collectorapi.IPVSObservation{Available: true, KubeIPVS0: r.KubeIPVS0}
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

// linkAddresses reads kube-ipvs0's addresses and the node IPs NodePorts
// listen on in IPVS mode: every address not on kube-ipvs0, loopback excluded.
func linkAddresses() (*collectorapi.LinkAddresses, []netip.Addr) {
	la := &collectorapi.LinkAddresses{Name: "kube-ipvs0"}
	addrs, err := netlink.AddrList(nil, netlink.FAMILY_ALL)
	if err != nil {
		la.Error = err.Error()
		return la, nil
	}
	ipvsIndex := -1
	if link, err := netlink.LinkByName("kube-ipvs0"); err == nil {
		la.Present = true
		ipvsIndex = link.Attrs().Index
	}
	var nodeIPs []netip.Addr
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP)
		if !ok {
			continue
		}
		ip = ip.Unmap()
		switch {
		case a.LinkIndex == ipvsIndex:
			la.Addresses = append(la.Addresses, ip.String())
		case ip.IsLoopback(), ip.IsLinkLocalUnicast():
		default:
			nodeIPs = append(nodeIPs, ip)
		}
	}
	return la, nodeIPs
}
