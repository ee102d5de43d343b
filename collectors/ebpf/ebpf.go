// Package ebpf reads eBPF Service datapaths from their pinned maps: it
// detects Cilium (cilium_lb4_*/cilium_lb6_* under <bpffs>/tc/globals) and
// Calico eBPF (cali_v4_nat_fe*/cali_v6_nat_fe*), and reads this Service's
// frontends and backends from Cilium's load-balancer maps and Calico's NAT
// maps.
//
// The Cilium map layout is version-dependent. The layout is recognised from
// the pinned maps themselves (names, key and value sizes): this reader
// decodes cilium_lb{4,6}_services_v2 with cilium_lb{4,6}_backends_v3, the
// layout of Cilium v1.15 (pkg/maps/lbmap) through v1.20
// (pkg/loadbalancer/maps), and says which layout it found otherwise rather
// than decoding garbage. The agent's version is not in bpffs.
package ebpf

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// LayoutNote names the layout this reader decodes.
const LayoutNote = "Cilium lb{4,6}_services_v2 key {addr, dport be16, backend_slot u16, proto u8, scope u8, pad[2]} -> " +
	"{backend_id | affinity_timeout:24+lb_alg:8 u32, count u16, rev_nat_index be16, flags u8, flags2 u8, qcount u16}; " +
	"lb{4,6}_backends_v3 key backend_id u32 -> {addr, port be16, proto u8, flags(state) u8, cluster_id u16, zone u8, pad u8}; " +
	"lb{4,6}_maglev rev_nat be16 -> inner array of backend IDs. " +
	"v1.15 keys carry protocol 0, its qcount, lb_alg and zone are padding (zero). Other names or sizes are reported, not decoded."

// LayoutServicesV2BackendsV3 is the layout this reader decodes.
const LayoutServicesV2BackendsV3 = "services_v2+backends_v3"

// Map names.
const (
	CiliumServices4 = "cilium_lb4_services_v2"
	CiliumBackends4 = "cilium_lb4_backends_v3"
	CiliumServices6 = "cilium_lb6_services_v2"
	CiliumBackends6 = "cilium_lb6_backends_v3"
	CiliumMaglev4   = "cilium_lb4_maglev"
	CiliumMaglev6   = "cilium_lb6_maglev"
	// CiliumAffinityMatch holds the backends of ClientIP-affinity Services.
	CiliumAffinityMatch = "cilium_lb_affinity_match"
)

// Read inspects the bpffs mounted at root (empty: /sys/fs/bpf).
func Read(ctx context.Context, req *collectorapi.Request, root string) (*collectorapi.EBPFObservation, error) {
	if root == "" {
		root = "/sys/fs/bpf"
	}
	obs := &collectorapi.EBPFObservation{BPFFSRoot: root}
	dir := filepath.Join(root, "tc", "globals")
	if _, err := os.Stat(dir); err != nil {
		if os.IsNotExist(err) {
			obs.Cilium = &collectorapi.CiliumObservation{LayoutNote: LayoutNote}
			obs.Calico = &collectorapi.CalicoObservation{}
			return obs, nil // no pinned datapath maps: nothing detected, not an error
		}
		return obs, fmt.Errorf("bpffs: %w", err)
	}
	obs.Cilium = readCilium(req, dir)
	obs.Calico = readCalico(req, dir)
	return obs, ctx.Err()
}

func glob(dir, pattern string) []collectorapi.PinnedMap {
	matches, _ := filepath.Glob(filepath.Join(dir, pattern))
	sort.Strings(matches)
	var out []collectorapi.PinnedMap
	for _, path := range matches {
		out = append(out, describeMap(path))
	}
	return out
}

func describeMap(path string) collectorapi.PinnedMap {
	pm := collectorapi.PinnedMap{Name: filepath.Base(path), Path: path}
	m, err := ebpf.LoadPinnedMap(path, &ebpf.LoadPinOptions{ReadOnly: true})
	if err != nil {
		pm.Error = err.Error()
		return pm
	}
	defer m.Close()
	pm.Type, pm.KeySize, pm.ValueSize, pm.MaxEntries = m.Type().String(), m.KeySize(), m.ValueSize(), m.MaxEntries()
	return pm
}

// family is the per-IP-family geometry of Cilium's LB maps.
type family struct {
	services, backends, maglev string
	addrLen                    int
}

var (
	v4 = family{CiliumServices4, CiliumBackends4, CiliumMaglev4, 4}
	v6 = family{CiliumServices6, CiliumBackends6, CiliumMaglev6, 16}
)

func (f family) keySize() uint32     { return uint32(f.addrLen + 8) }
func (f family) backendSize() uint32 { return uint32(f.addrLen + 8) }

const serviceValueSize = 12

func readCilium(req *collectorapi.Request, dir string) *collectorapi.CiliumObservation {
	c := &collectorapi.CiliumObservation{LayoutNote: LayoutNote}
	c.Maps = append(glob(dir, "cilium_lb4_*"), glob(dir, "cilium_lb6_*")...)
	// Session affinity's per-family-less map: {backend_id u32, rev_nat_id be16, pad} -> u8.
	c.Maps = append(c.Maps, glob(dir, CiliumAffinityMatch)...)
	for _, m := range c.Maps {
		if m.Name == CiliumServices4 || m.Name == CiliumServices6 || strings.HasPrefix(m.Name, "cilium_lb4_services") || strings.HasPrefix(m.Name, "cilium_lb6_services") {
			c.Detected = true
		}
	}
	if !c.Detected {
		return c
	}
	if c.Layout, c.Error = ciliumLayout(c.Maps); c.Layout == "" {
		return c
	}
	var errs []string
	open := map[string]*ebpf.Map{}
	defer func() {
		for _, m := range open {
			m.Close()
		}
	}()
	get := func(name string) (*ebpf.Map, error) {
		if m, ok := open[name]; ok {
			return m, nil
		}
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, name), &ebpf.LoadPinOptions{ReadOnly: true})
		if err != nil {
			return nil, err
		}
		open[name] = m
		return m, nil
	}
	for _, fe := range ciliumFrontends(req) {
		fam := v4
		if fe.Addr.Addr().Is6() {
			fam = v6
		}
		svcMap, err := get(fam.services)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", fam.services, err))
			continue
		}
		if svcMap.KeySize() != fam.keySize() || svcMap.ValueSize() != serviceValueSize {
			errs = append(errs, fmt.Sprintf("%s has key %d/value %d bytes, this reader knows %d/%d: layout not decoded",
				fam.services, svcMap.KeySize(), svcMap.ValueSize(), fam.keySize(), serviceValueSize))
			continue
		}
		beMap, err := get(fam.backends)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", fam.backends, err))
		} else if beMap.KeySize() != 4 || beMap.ValueSize() != fam.backendSize() {
			errs = append(errs, fmt.Sprintf("%s has key %d/value %d bytes, this reader knows 4/%d: backends not decoded",
				fam.backends, beMap.KeySize(), beMap.ValueSize(), fam.backendSize()))
			beMap = nil
		}
		mgMap, _ := get(fam.maglev) // absent unless the agent runs Maglev
		for _, scope := range []uint8{0, 1} {
			f, err := lookupFrontend(svcMap, beMap, mgMap, fe, scope)
			if err != nil {
				errs = append(errs, err.Error())
			}
			if scope == 0 || f.Found {
				c.Frontends = append(c.Frontends, f)
			}
		}
	}
	if m, err := ciliumMaintenance(req, get); err != "" {
		errs = append(errs, err)
	} else {
		c.Maintenance = m
	}
	c.Error = strings.Join(errs, "; ")
	return c
}

// maxBackendWalk bounds the walk of one backends map.
const maxBackendWalk = 1 << 20

// ciliumMaintenance walks the backends maps for the request's endpoint IPs
// in maintenance state (set through the agent's service API; such backends
// are in no frontend's slots).
func ciliumMaintenance(req *collectorapi.Request, get func(string) (*ebpf.Map, error)) ([]collectorapi.CiliumBackend, string) {
	ips := map[netip.Addr]bool{}
	for _, ep := range req.Endpoints {
		if a, err := netip.ParseAddr(ep.IP); err == nil {
			ips[a.Unmap()] = true
		}
	}
	if len(ips) == 0 {
		return nil, ""
	}
	var out []collectorapi.CiliumBackend
	for _, f := range []family{v4, v6} {
		m, err := get(f.backends)
		if err != nil || m.KeySize() != 4 || m.ValueSize() != f.backendSize() {
			continue // said already where it matters, or not pinned (family disabled)
		}
		var k, v []byte
		it := m.Iterate()
		for n := 0; n < maxBackendWalk && it.Next(&k, &v); n++ {
			be := DecodeBackend(v, f.addrLen)
			if be.State != 3 || !ips[be.Addr.Unmap()] {
				continue
			}
			out = append(out, collectorapi.CiliumBackend{BackendID: binary.NativeEndian.Uint32(k), Found: true, Address: be.Addr.String(),
				Port: be.Port, Protocol: collectorapi.IPProtoName(be.Proto), State: BackendStateName(be.State), ClusterID: be.ClusterID, Zone: be.Zone})
		}
		if err := it.Err(); err != nil {
			return nil, fmt.Sprintf("%s: %v", f.backends, err)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BackendID < out[j].BackendID })
	return out, ""
}

// ciliumLayout recognises the layout of Cilium's pinned LB maps from their
// names and sizes; it returns "" and the reason when it is not one this
// reader decodes.
func ciliumLayout(pinned []collectorapi.PinnedMap) (string, string) {
	byName := map[string]collectorapi.PinnedMap{}
	for _, m := range pinned {
		byName[m.Name] = m
	}
	var why, opened []string
	known := false
	for _, f := range []family{v4, v6} {
		svc, ok := byName[f.services]
		if !ok {
			continue
		}
		if svc.Error != "" {
			opened = append(opened, fmt.Sprintf("%s: %s", f.services, svc.Error))
			continue
		}
		if svc.KeySize != f.keySize() || svc.ValueSize != serviceValueSize {
			why = append(why, fmt.Sprintf("%s has key %d/value %d bytes, this reader knows %d/%d",
				f.services, svc.KeySize, svc.ValueSize, f.keySize(), serviceValueSize))
			continue
		}
		be, ok := byName[f.backends]
		if !ok {
			older := ""
			for _, n := range []string{strings.TrimSuffix(f.backends, "_v3") + "_v2", strings.TrimSuffix(f.backends, "_v3")} {
				if _, ok := byName[n]; ok {
					older = n
					break
				}
			}
			if older != "" {
				why = append(why, fmt.Sprintf("backends are in %s, the layout of agents older than v1.13, not %s", older, f.backends))
			} else {
				why = append(why, f.backends+" is not pinned")
			}
			continue
		}
		if be.Error == "" && (be.KeySize != 4 || be.ValueSize != f.backendSize()) {
			why = append(why, fmt.Sprintf("%s has key %d/value %d bytes, this reader knows 4/%d",
				f.backends, be.KeySize, be.ValueSize, f.backendSize()))
			continue
		}
		known = true
	}
	if known {
		return LayoutServicesV2BackendsV3, ""
	}
	if len(opened) > 0 {
		return "", "could not open Cilium's maps: " + strings.Join(opened, "; ")
	}
	if len(why) == 0 {
		var names []string
		for _, m := range pinned {
			if strings.Contains(m.Name, "services") {
				names = append(names, m.Name)
			}
		}
		why = append(why, fmt.Sprintf("no %s or %s, only %s: a layout this reader does not decode",
			CiliumServices4, CiliumServices6, strings.Join(names, ", ")))
	}
	return "", "could not read this Cilium version's maps: " + strings.Join(why, "; ")
}

// ciliumFrontends are the Service's frontends plus, for each NodePort, the
// "surrogate" frontend Cilium programs on the zero address (0.0.0.0:nodePort,
// and [::]:nodePort for IPv6 Services), which stands for every node address,
// and the frontends the agent (v1.20 measured) also writes at each of this
// node's own addresses (10.77.0.11:30080 beside 0.0.0.0:30080).
func ciliumFrontends(req *collectorapi.Request) []collectorapi.Frontend {
	fes := req.Service.Frontends()
	addrs := []netip.Addr{netip.IPv4Unspecified()}
	has6 := false
	for _, ip := range req.Service.ClusterIPAddrs() {
		if ip.Is6() {
			addrs, has6 = append(addrs, netip.IPv6Unspecified()), true
			break
		}
	}
	for _, na := range req.NodeAddresses {
		if na.Node != req.NodeName {
			continue
		}
		// Only the families the Service has: the other family's maps may
		// not be pinned at all.
		if a, err := netip.ParseAddr(na.IP); err == nil && !a.IsUnspecified() && (a.Unmap().Is4() || has6) {
			addrs = append(addrs, a.Unmap())
		}
	}
	for _, p := range req.Service.Ports {
		if p.NodePort == 0 {
			continue
		}
		for _, a := range addrs {
			fes = append(fes, collectorapi.Frontend{Kind: "nodePort", PortName: p.Name, Addr: netip.AddrPortFrom(a, uint16(p.NodePort)), Protocol: p.Protocol, Port: p})
		}
	}
	return fes
}

// ServiceKey encodes a Cilium LB service key.
func ServiceKey(addr netip.Addr, port uint16, slot uint16, proto, scope uint8) []byte {
	a := addr.AsSlice()
	k := make([]byte, len(a)+8)
	copy(k, a)
	binary.BigEndian.PutUint16(k[len(a):], port)
	binary.NativeEndian.PutUint16(k[len(a)+2:], slot)
	k[len(a)+4] = proto
	k[len(a)+5] = scope
	return k
}

// ServiceValue is a decoded services_v2 value.
type ServiceValue struct {
	BackendID   uint32 // slot > 0; for slot 0 the affinity timeout and LB algorithm
	Count       uint16
	RevNATIndex uint16
	Flags       uint8
	Flags2      uint8
	QCount      uint16
}

// DecodeServiceValue decodes 12 bytes of a services_v2 value.
func DecodeServiceValue(b []byte) ServiceValue {
	return ServiceValue{
		BackendID:   binary.NativeEndian.Uint32(b[0:4]),
		Count:       binary.NativeEndian.Uint16(b[4:6]),
		RevNATIndex: binary.BigEndian.Uint16(b[6:8]),
		Flags:       b[8],
		Flags2:      b[9],
		QCount:      binary.NativeEndian.Uint16(b[10:12]),
	}
}

// EncodeServiceValue is DecodeServiceValue's inverse (tests build maps with it).
func EncodeServiceValue(v ServiceValue) []byte {
	b := make([]byte, serviceValueSize)
	binary.NativeEndian.PutUint32(b[0:4], v.BackendID)
	binary.NativeEndian.PutUint16(b[4:6], v.Count)
	binary.BigEndian.PutUint16(b[6:8], v.RevNATIndex)
	b[8], b[9] = v.Flags, v.Flags2
	binary.NativeEndian.PutUint16(b[10:12], v.QCount)
	return b
}

// Backend is a decoded backends_v3 value.
type Backend struct {
	Addr      netip.Addr
	Port      uint16
	Proto     uint8
	State     uint8
	ClusterID uint16
	Zone      uint8
}

// EncodeBackend encodes a backends_v3 value.
func EncodeBackend(b Backend) []byte {
	a := b.Addr.AsSlice()
	out := make([]byte, len(a)+8)
	copy(out, a)
	binary.BigEndian.PutUint16(out[len(a):], b.Port)
	out[len(a)+2] = b.Proto
	out[len(a)+3] = b.State
	binary.NativeEndian.PutUint16(out[len(a)+4:], b.ClusterID)
	out[len(a)+6] = b.Zone
	return out
}

// DecodeBackend decodes a backends_v3 value of an addrLen-byte family.
func DecodeBackend(b []byte, addrLen int) Backend {
	addr, _ := netip.AddrFromSlice(b[:addrLen])
	return Backend{
		Addr:      addr,
		Port:      binary.BigEndian.Uint16(b[addrLen:]),
		Proto:     b[addrLen+2],
		State:     b[addrLen+3],
		ClusterID: binary.NativeEndian.Uint16(b[addrLen+4:]),
		Zone:      b[addrLen+6],
	}
}

// BackendStateName names Cilium's backend states (loadbalancer.BackendState).
func BackendStateName(s uint8) string {
	switch s {
	case 0:
		return "active"
	case 1:
		return "terminating"
	case 2:
		return "quarantined"
	case 3:
		return "maintenance"
	}
	return fmt.Sprintf("state-%d", s)
}

// maxTrailingSlots bounds the search for slots past count+qcount: v1.15
// keeps its non-active backends there without counting them.
const maxTrailingSlots = 1024

// lookupFrontend reads slot 0 of one frontend and then each backend slot.
// Newer Cilium keys carry the L4 protocol; older ones set it to 0, so both
// are tried.
func lookupFrontend(svcMap, beMap, mgMap *ebpf.Map, fe collectorapi.Frontend, scope uint8) (collectorapi.CiliumFrontend, error) {
	f := collectorapi.CiliumFrontend{Frontend: fe.Kind, Address: fe.Addr.Addr().String(), Port: fe.Addr.Port(), Protocol: fe.Protocol, Scope: scope}
	var master []byte
	var proto uint8
	for _, p := range []uint8{collectorapi.IPProtoNumber(fe.Protocol), 0} {
		v, err := svcMap.LookupBytes(ServiceKey(fe.Addr.Addr(), fe.Addr.Port(), 0, p, scope))
		if err != nil {
			return f, fmt.Errorf("lookup %s scope %d: %w", fe, scope, err)
		}
		if v != nil {
			master, proto = v, p
			break
		}
	}
	if master == nil {
		return f, nil
	}
	sv := DecodeServiceValue(master)
	f.Found, f.KeyProtocol = true, collectorapi.IPProtoName(proto)
	f.BackendCount, f.QuarantinedCount, f.RevNATIndex, f.Flags, f.Flags2 = sv.Count, sv.QCount, sv.RevNATIndex, sv.Flags, sv.Flags2
	f.AffinityTimeoutSecs, f.LBAlgorithm = sv.BackendID&0xffffff, uint8(sv.BackendID>>24)
	addrLen := len(fe.Addr.Addr().AsSlice())
	last := int(sv.Count) + int(sv.QCount)
	for slot := 1; slot <= last+maxTrailingSlots && slot <= 0xffff; slot++ {
		v, err := svcMap.LookupBytes(ServiceKey(fe.Addr.Addr(), fe.Addr.Port(), uint16(slot), proto, scope))
		if err != nil {
			return f, fmt.Errorf("lookup %s slot %d: %w", fe, slot, err)
		}
		b := collectorapi.CiliumBackend{Slot: uint16(slot)}
		if v == nil {
			if slot > last {
				break
			}
			f.Backends = append(f.Backends, b) // a hole: the slot is missing
			continue
		}
		b.BackendID = DecodeServiceValue(v).BackendID
		if beMap != nil {
			key := make([]byte, 4)
			binary.NativeEndian.PutUint32(key, b.BackendID)
			bv, err := beMap.LookupBytes(key)
			if err != nil {
				return f, fmt.Errorf("backend %d: %w", b.BackendID, err)
			}
			if bv != nil {
				be := DecodeBackend(bv, addrLen)
				b.Found = true
				b.Address, b.Port, b.Protocol = be.Addr.String(), be.Port, collectorapi.IPProtoName(be.Proto)
				b.State, b.ClusterID, b.Zone = BackendStateName(be.State), be.ClusterID, be.Zone
			}
		}
		f.Backends = append(f.Backends, b)
	}
	if mgMap != nil {
		f.Maglev = readMaglev(mgMap, sv.RevNATIndex)
	}
	return f, nil
}

// readMaglev reads the Maglev table the agent keeps for one rev-NAT index:
// the outer hash-of-maps is keyed by the index in network byte order and
// holds an inner single-entry array whose value is the table of backend IDs.
// nil when the outer map has no entry (the frontend does not use Maglev).
func readMaglev(outer *ebpf.Map, revNAT uint16) *collectorapi.CiliumMaglev {
	key := make([]byte, 2)
	binary.BigEndian.PutUint16(key, revNAT)
	v, err := outer.LookupBytes(key)
	if err != nil {
		return &collectorapi.CiliumMaglev{Error: fmt.Sprintf("%s: %v", outer, err)}
	}
	if v == nil {
		return nil
	}
	mg := &collectorapi.CiliumMaglev{}
	inner, err := ebpf.NewMapFromID(ebpf.MapID(binary.NativeEndian.Uint32(v)))
	if err != nil {
		mg.Error = fmt.Sprintf("inner map %d: %v", binary.NativeEndian.Uint32(v), err)
		return mg
	}
	defer inner.Close()
	table, err := inner.LookupBytes(make([]byte, 4))
	if err != nil || table == nil {
		mg.Error = fmt.Sprintf("inner map %d has no table: %v", binary.NativeEndian.Uint32(v), err)
		return mg
	}
	mg.TableSize = len(table) / 4
	entries := map[uint32]int{}
	for i := 0; i+4 <= len(table); i += 4 {
		entries[binary.NativeEndian.Uint32(table[i:])]++
	}
	for id, n := range entries {
		mg.Backends = append(mg.Backends, collectorapi.CiliumMaglevShare{BackendID: id, Entries: n})
	}
	sort.Slice(mg.Backends, func(i, j int) bool { return mg.Backends[i].BackendID < mg.Backends[j].BackendID })
	return mg
}
