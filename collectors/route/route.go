// Package route observes how the node routes to Pod IPs: the kernel's route
// lookup for each address (as "ip route get" does), the link it leaves on, and
// the sysctls that decide forwarding (ip_forward, rp_filter,
// bridge-nf-call-iptables). It reports; the judge decides.
package route

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// Reader reads routes through Handle (nil: the current network namespace),
// sysctls under ProcRoot (empty: /proc) and loaded modules under SysRoot
// (empty: /sys).
type Reader struct {
	Handle   *netlink.Handle
	ProcRoot string
	SysRoot  string
	// EncapTimeout bounds the encapsulation probes of each VXLAN device
	// (0: DefaultEncapTimeout; negative: no probes).
	EncapTimeout time.Duration
}

// Read looks up every Pod IP of the request.
func Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.RouteObservation, error) {
	return (&Reader{}).Read(ctx, req)
}

// Read looks up every Pod IP of the request.
func (r *Reader) Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.RouteObservation, error) {
	h := r.Handle
	if h == nil {
		var err error
		h, err = netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return nil, fmt.Errorf("netlink: %w", err)
		}
		defer h.Close()
	}
	obs := &collectorapi.RouteObservation{
		IPv4Forward:           r.sysctl("net/ipv4/ip_forward"),
		IPv6Forward:           r.sysctl("net/ipv6/conf/all/forwarding"),
		RPFilterAll:           r.sysctl("net/ipv4/conf/all/rp_filter"),
		RPFilterDefault:       r.sysctl("net/ipv4/conf/default/rp_filter"),
		BridgeNFCallIPTables:  r.sysctl("net/bridge/bridge-nf-call-iptables"),
		BridgeNFCallIP6Tables: r.sysctl("net/bridge/bridge-nf-call-ip6tables"),
		Routes:                []collectorapi.RouteLookup{},
	}
	if lf, err := ReadLinks(h, r.ProcRoot, r.SysRoot); lf != nil {
		obs.BrNetfilterLoaded, obs.Bridges, obs.Overlays, obs.Neighbours = lf.BrNetfilterLoaded, lf.Bridges, lf.Overlays, lf.Neighbours
		if err != nil {
			obs.LinksError = err.Error()
		}
	} else if err != nil {
		obs.LinksError = err.Error()
	}
	seen := map[string]bool{}
	links := map[int]*linkFacts{}
	for _, ip := range RouteTargets(req) {
		if seen[ip] || ctx.Err() != nil {
			continue
		}
		seen[ip] = true
		obs.Routes = append(obs.Routes, r.lookup(h, ip, links))
	}
	if r.EncapTimeout >= 0 && ctx.Err() == nil {
		timeout := r.EncapTimeout
		if timeout == 0 {
			timeout = DefaultEncapTimeout
		}
		gateways := map[string]bool{}
		for _, rt := range obs.Routes {
			if rt.Gateway != "" {
				gateways[rt.Gateway] = true
			}
		}
		for i := range obs.Overlays {
			probeEncap(&obs.Overlays[i], gateways, timeout)
		}
	}
	return obs, ctx.Err()
}

// RouteTargets are the request's Pod IPs or, when it names none, its endpoint IPs.
func RouteTargets(req *collectorapi.Request) []string {
	if len(req.PodIPs) > 0 {
		return req.PodIPs
	}
	var out []string
	for _, ep := range req.Endpoints {
		out = append(out, ep.IP)
	}
	return out
}

// linkFacts is what one lookup learns about the route's device. Thousands
// of Pod IPs go out through a handful of devices: each is read once.
type linkFacts struct {
	name      string
	info      *collectorapi.LinkInfo
	rpFilter  string
	rpFetched bool
	err       error
}

func (r *Reader) lookup(h *netlink.Handle, ip string, links map[int]*linkFacts) collectorapi.RouteLookup {
	out := collectorapi.RouteLookup{Destination: ip}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	routes, err := h.RouteGet(net.IP(addr.Unmap().AsSlice()))
	if err != nil {
		// ENETUNREACH here is the kernel's answer "no route", evidence rather than a failure.
		out.Error = err.Error()
		out.Type = "unreachable"
		return out
	}
	if len(routes) == 0 {
		out.Error = "no route returned"
		return out
	}
	rt := routes[0]
	out.Type = RouteTypeName(rt.Type)
	out.Table = rt.Table
	out.Scope = rt.Scope.String()
	out.Protocol = rt.Protocol.String()
	if rt.Gw != nil {
		out.Gateway = rt.Gw.String()
	}
	if rt.Src != nil {
		out.Source = rt.Src.String()
	}
	if rt.LinkIndex > 0 {
		lf := links[rt.LinkIndex]
		if lf == nil {
			lf = &linkFacts{}
			if link, err := h.LinkByIndex(rt.LinkIndex); err != nil {
				lf.err = err
			} else {
				lf.name, lf.info = link.Attrs().Name, LinkInfoOf(h, link)
			}
			links[rt.LinkIndex] = lf
		}
		if lf.err != nil {
			out.Error = fmt.Sprintf("link %d: %v", rt.LinkIndex, lf.err)
			return out
		}
		out.Device = lf.name
		info := *lf.info
		out.Link = &info
		if addr.Unmap().Is4() {
			if !lf.rpFetched {
				lf.rpFilter, lf.rpFetched = r.sysctl("net/ipv4/conf/"+lf.name+"/rp_filter"), true
			}
			out.RPFilterDevice = lf.rpFilter
		}
	}
	return out
}

// LinkInfoOf describes a link: kind (veth, bridge, vxlan, ipip, wireguard, …),
// admin and operational state, MTU and master.
func LinkInfoOf(h *netlink.Handle, link netlink.Link) *collectorapi.LinkInfo {
	a := link.Attrs()
	li := &collectorapi.LinkInfo{
		Name:      a.Name,
		Index:     a.Index,
		Kind:      link.Type(),
		AdminUp:   a.Flags&net.FlagUp != 0,
		OperState: a.OperState.String(),
		MTU:       a.MTU,
	}
	if a.MasterIndex > 0 {
		if m, err := h.LinkByIndex(a.MasterIndex); err == nil {
			li.Master = m.Attrs().Name
		} else {
			li.Master = fmt.Sprintf("index %d", a.MasterIndex)
		}
	}
	return li
}

// sysctl reads one value under <proc>/sys; "absent" when the file does not
// exist (e.g. bridge-nf-call-iptables without br_netfilter).
func (r *Reader) sysctl(path string) string {
	root := r.ProcRoot
	if root == "" {
		root = "/proc"
	}
	b, err := os.ReadFile(filepath.Join(root, "sys", path))
	if os.IsNotExist(err) {
		return "absent"
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(string(b))
}

// RouteTypeName names an RTN_* route type as ip-route does.
func RouteTypeName(t int) string {
	switch t {
	case unix.RTN_UNICAST:
		return "unicast"
	case unix.RTN_LOCAL:
		return "local"
	case unix.RTN_BROADCAST:
		return "broadcast"
	case unix.RTN_ANYCAST:
		return "anycast"
	case unix.RTN_MULTICAST:
		return "multicast"
	case unix.RTN_BLACKHOLE:
		return "blackhole"
	case unix.RTN_UNREACHABLE:
		return "unreachable"
	case unix.RTN_PROHIBIT:
		return "prohibit"
	case unix.RTN_THROW:
		return "throw"
	case unix.RTN_NAT:
		return "nat"
	}
	return fmt.Sprintf("type-%d", t)
}
