package route

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// maxPortNames bounds the port names listed per bridge.
const maxPortNames = 8

// LinkFacts is what the node's links say about the CNI's plumbing: bridges
// and their ports (br_netfilter matters only there), overlay devices with
// their FDB and neighbour entries, and the neighbour table's fill level.
type LinkFacts struct {
	BrNetfilterLoaded *bool
	Bridges           []collectorapi.Bridge
	Overlays          []collectorapi.OverlayDevice
	Neighbours        []collectorapi.NeighbourTable
}

// ReadLinks lists the links of h's namespace once and describes them.
// sysRoot is where sysfs is (empty: /sys), procRoot where procfs is.
func ReadLinks(h *netlink.Handle, procRoot, sysRoot string) (*LinkFacts, error) {
	links, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	if sysRoot == "" {
		sysRoot = "/sys"
	}
	out := &LinkFacts{}
	// A built-in br_netfilter has no /sys/module entry (it has no
	// parameters); its sysctls exist either way.
	r := &Reader{ProcRoot: procRoot}
	_, modErr := os.Stat(filepath.Join(sysRoot, "module", "br_netfilter"))
	switch nf := r.sysctl("net/bridge/bridge-nf-call-iptables"); {
	case modErr == nil || (nf != "absent" && !strings.HasPrefix(nf, "error")):
		out.BrNetfilterLoaded = ptr(true)
	case errors.Is(modErr, os.ErrNotExist) && nf == "absent":
		out.BrNetfilterLoaded = ptr(false)
	}
	byIndex := map[int]netlink.Link{}
	for _, l := range links {
		byIndex[l.Attrs().Index] = l
	}
	out.Bridges = bridges(links)
	var errs []error
	for _, l := range links {
		o, err := overlay(h, l, byIndex)
		if err != nil {
			errs = append(errs, err)
		}
		if o != nil {
			out.Overlays = append(out.Overlays, *o)
		}
	}
	for _, fam := range []struct {
		name, dir string
		af        int
	}{{"IPv4", "ipv4", unix.AF_INET}, {"IPv6", "ipv6", unix.AF_INET6}} {
		nt := collectorapi.NeighbourTable{Family: fam.name}
		neighs, err := h.NeighList(0, fam.af)
		if err != nil {
			nt.Error = err.Error()
		}
		nt.Entries = GCEntries(neighs)
		var bad []string
		for i, dst := range []*int{&nt.GCThresh1, &nt.GCThresh2, &nt.GCThresh3} {
			v := r.sysctl(fmt.Sprintf("net/%s/neigh/default/gc_thresh%d", fam.dir, i+1))
			n, err := strconv.Atoi(v)
			if err != nil {
				bad = append(bad, fmt.Sprintf("gc_thresh%d: %s", i+1, v))
				continue
			}
			*dst = n
		}
		if len(bad) > 0 {
			nt.Error = strings.TrimPrefix(nt.Error+"; "+strings.Join(bad, ", "), "; ")
		}
		out.Neighbours = append(out.Neighbours, nt)
	}
	return out, errors.Join(errs...)
}

// GCEntries counts the entries the kernel's neighbour garbage collector
// counts against gc_thresh2/3 (tbl->gc_entries): every entry except
// permanent and externally learnt ones (net/core/neighbour.c, neigh_alloc).
// The kernel's count spans every network namespace (one table per family)
// and the thresholds exist in the initial namespace only; this is the
// node namespace's share, a lower bound.
func GCEntries(neighs []netlink.Neigh) int {
	n := 0
	for _, ne := range neighs {
		if ne.State&netlink.NUD_PERMANENT != 0 || ne.Flags&netlink.NTF_EXT_LEARNED != 0 {
			continue
		}
		n++
	}
	return n
}

func bridges(links []netlink.Link) []collectorapi.Bridge {
	idx := map[int]int{}
	var out []collectorapi.Bridge
	for _, l := range links {
		if l.Type() != "bridge" {
			continue
		}
		a := l.Attrs()
		idx[a.Index] = len(out)
		out = append(out, collectorapi.Bridge{Name: a.Name, MTU: a.MTU, AdminUp: a.Flags&net.FlagUp != 0})
	}
	for _, l := range links {
		i, ok := idx[l.Attrs().MasterIndex]
		if !ok || l.Attrs().MasterIndex == 0 {
			continue
		}
		b := &out[i]
		b.Ports++
		if l.Type() == "veth" {
			b.VethPorts++
		}
		if len(b.PortNames) < maxPortNames {
			b.PortNames = append(b.PortNames, l.Attrs().Name)
		}
	}
	for i := range out {
		sort.Strings(out[i].PortNames)
	}
	return out
}

// overlay describes an encapsulating link, or returns nil for any other.
func overlay(h *netlink.Handle, l netlink.Link, byIndex map[int]netlink.Link) (*collectorapi.OverlayDevice, error) {
	a := l.Attrs()
	o := &collectorapi.OverlayDevice{Name: a.Name, Kind: l.Type(), AdminUp: a.Flags&net.FlagUp != 0,
		OperState: a.OperState.String(), MTU: a.MTU, MAC: a.HardwareAddr.String()}
	var underlay int
	var local net.IP
	switch d := l.(type) {
	case *netlink.Vxlan:
		o.VNI, o.Port, underlay, local = d.VxlanId, d.Port, d.VtepDevIndex, d.SrcAddr
	case *netlink.Geneve:
		o.VNI, o.Port, underlay = int(d.ID), int(d.Dport), int(d.Link)
	case *netlink.Iptun:
		underlay, local = int(d.Link), d.Local
		o.MAC = ""
	default:
		return nil, nil
	}
	if local != nil && !local.IsUnspecified() {
		o.Local = local.String()
		if underlay == 0 {
			if rts, err := h.RouteGet(local); err == nil && len(rts) > 0 {
				underlay = rts[0].LinkIndex
			}
		}
	}
	if u, ok := byIndex[underlay]; ok && underlay != 0 {
		o.Underlay, o.UnderlayMTU = u.Attrs().Name, u.Attrs().MTU
	}
	var errs []error
	if o.Kind != "ipip" {
		fdb, err := h.NeighList(a.Index, unix.AF_BRIDGE)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s fdb: %w", a.Name, err))
		}
		for _, f := range fdb {
			e := collectorapi.FDBEntry{MAC: f.HardwareAddr.String(), State: NeighStateName(f.State)}
			if f.IP != nil {
				e.Dst = f.IP.String()
			}
			o.FDB = append(o.FDB, e)
		}
	}
	addrs, err := h.AddrList(l, unix.AF_UNSPEC)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s addresses: %w", a.Name, err))
	}
	for _, ad := range addrs {
		o.Addresses = append(o.Addresses, ad.IPNet.String())
	}
	for _, af := range []int{unix.AF_INET, unix.AF_INET6} {
		ns, err := h.NeighList(a.Index, af)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s neighbours: %w", a.Name, err))
		}
		for _, n := range ns {
			e := collectorapi.NeighbourEntry{IP: n.IP.String(), State: NeighStateName(n.State)}
			if n.HardwareAddr != nil {
				e.MAC = n.HardwareAddr.String()
			}
			o.Neighbours = append(o.Neighbours, e)
		}
	}
	return o, errors.Join(errs...)
}

// NeighStateName names a NUD_* state as ip-neighbour does.
func NeighStateName(s int) string {
	names := []struct {
		bit  int
		name string
	}{{netlink.NUD_PERMANENT, "permanent"}, {netlink.NUD_NOARP, "noarp"}, {netlink.NUD_REACHABLE, "reachable"},
		{netlink.NUD_STALE, "stale"}, {netlink.NUD_DELAY, "delay"}, {netlink.NUD_PROBE, "probe"},
		{netlink.NUD_INCOMPLETE, "incomplete"}, {netlink.NUD_FAILED, "failed"}}
	var out []string
	for _, n := range names {
		if s&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ",")
}

func ptr[T any](v T) *T { return &v }
