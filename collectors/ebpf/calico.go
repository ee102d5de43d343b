package ebpf

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cilium/ebpf"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// Calico's NAT maps as Felix pins them (felix/bpf/nat/maps.go, maps6.go;
// C side felix/bpf-gpl/nat_types.h), read from Calico's source and not
// checked against a running Felix:
//
//	cali_v4_nat_fe<N>  LPM trie  key {prefixlen u32 LE, addr [4] NBO, port u16 LE, proto u8, saddr [4], pad u8} (16 B)
//	                             value {id, count, local, affinity_timeo, flags} u32 LE each (20 B)
//	cali_v4_nat_be     hash      key {id, ordinal} u32 LE (8 B) -> {addr [4] NBO, port u16 LE, pad [2]} (8 B)
//
// and the IPv6 pair with 16-byte addresses (key 40 B, backend value 20 B).
// The prefix length counts the address, port and protocol (56 bits for
// IPv4, 152 for IPv6) plus the source CIDR's prefix. <N> is Felix's map
// version (3 since the LPM trie).
const (
	calicoFrontend4     = "cali_v4_nat_fe"
	calicoFrontend6     = "cali_v6_nat_fe"
	calicoBackend4      = "cali_v4_nat_be"
	calicoBackend6      = "cali_v6_nat_be"
	calicoBlackHole     = 0xffffffff
	calicoFrontendValue = 20
)

// LayoutCalicoNAT is the Calico layout this reader decodes.
const LayoutCalicoNAT = "nat_fe(lpm 16/20, v6 40/20)+nat_be(8/8, v6 8/20)"

// calicoFamily is the per-family geometry of Calico's NAT maps.
type calicoFamily struct {
	frontend, backend string
	addrLen           int
	// zeroPrefixLen is sizeof(addr)+sizeof(port)+sizeof(proto) in bits.
	zeroPrefixLen uint32
}

var (
	calico4 = calicoFamily{calicoFrontend4, calicoBackend4, 4, 56}
	calico6 = calicoFamily{calicoFrontend6, calicoBackend6, 16, 152}
)

func (f calicoFamily) keySize() uint32          { return uint32(4 + f.addrLen + 2 + 1 + f.addrLen + 1) }
func (f calicoFamily) backendValueSize() uint32 { return uint32(f.addrLen + 4) }

// CalicoFrontendKey encodes a frontend key for a source CIDR.
func CalicoFrontendKey(addr netip.Addr, port uint16, proto uint8, src netip.Prefix) []byte {
	f := calico4
	if addr.Is6() {
		f = calico6
	}
	k := make([]byte, f.keySize())
	binary.LittleEndian.PutUint32(k[0:], f.zeroPrefixLen+uint32(src.Bits()))
	copy(k[4:], addr.AsSlice())
	o := 4 + f.addrLen
	binary.LittleEndian.PutUint16(k[o:], port)
	k[o+2] = proto
	copy(k[o+3:], src.Addr().AsSlice())
	return k
}

// CalicoFrontendValue encodes a frontend value.
func CalicoFrontendValue(id, count, local, affinity, flags uint32) []byte {
	v := make([]byte, calicoFrontendValue)
	for i, x := range []uint32{id, count, local, affinity, flags} {
		binary.LittleEndian.PutUint32(v[4*i:], x)
	}
	return v
}

// CalicoBackendKey encodes a backend key.
func CalicoBackendKey(id, ordinal uint32) []byte {
	k := make([]byte, 8)
	binary.LittleEndian.PutUint32(k, id)
	binary.LittleEndian.PutUint32(k[4:], ordinal)
	return k
}

// CalicoBackendValue encodes a backend value.
func CalicoBackendValue(addr netip.Addr, port uint16) []byte {
	a := addr.AsSlice()
	v := make([]byte, len(a)+4)
	copy(v, a)
	binary.LittleEndian.PutUint16(v[len(a):], port)
	return v
}

// calicoPinned finds the pinned frontend map of a family: the highest
// version Felix left (it pins each layout version under its own name).
func calicoPinned(maps []collectorapi.PinnedMap, base string) (collectorapi.PinnedMap, bool) {
	var best collectorapi.PinnedMap
	found := false
	for _, m := range maps {
		if strings.HasPrefix(m.Name, base) && (!found || m.Name > best.Name) {
			best, found = m, true
		}
	}
	return best, found
}

func calicoLayout(maps []collectorapi.PinnedMap) (string, string) {
	byName := map[string]collectorapi.PinnedMap{}
	for _, m := range maps {
		byName[m.Name] = m
	}
	var why, opened []string
	known := false
	for _, f := range []calicoFamily{calico4, calico6} {
		fe, ok := calicoPinned(maps, f.frontend)
		if !ok {
			continue
		}
		be, ok := byName[f.backend]
		switch {
		case fe.Error != "":
			opened = append(opened, fe.Name+": "+fe.Error)
		case fe.KeySize != f.keySize() || fe.ValueSize != calicoFrontendValue:
			why = append(why, fmt.Sprintf("%s has key %d/value %d bytes, this reader knows %d/%d", fe.Name, fe.KeySize, fe.ValueSize, f.keySize(), calicoFrontendValue))
		case !ok:
			why = append(why, f.backend+" is not pinned")
		case be.Error == "" && (be.KeySize != 8 || be.ValueSize != f.backendValueSize()):
			why = append(why, fmt.Sprintf("%s has key %d/value %d bytes, this reader knows 8/%d", be.Name, be.KeySize, be.ValueSize, f.backendValueSize()))
		default:
			known = true
		}
	}
	if known {
		return LayoutCalicoNAT, ""
	}
	if len(opened) > 0 {
		return "", "could not open Calico's maps: " + strings.Join(opened, "; ")
	}
	return "", "could not read this Calico version's maps: " + strings.Join(why, "; ")
}

// readCalico reads the Service's frontends from Calico's NAT maps. The
// frontend map is walked whole: it holds every source-range variant of a
// frontend and the NodePort entries of every node address (and of
// 255.255.255.255, Felix's wildcard for Pods reaching a NodePort by a node
// IP), none of which a single lookup finds.
func readCalico(req *collectorapi.Request, dir string) *collectorapi.CalicoObservation {
	c := &collectorapi.CalicoObservation{}
	c.Maps = append(glob(dir, "cali_v4_nat_*"), glob(dir, "cali_v6_nat_*")...)
	for _, m := range c.Maps {
		if strings.HasPrefix(m.Name, calicoFrontend4) || strings.HasPrefix(m.Name, calicoFrontend6) {
			c.Detected = true
		}
	}
	if !c.Detected {
		return c
	}
	if c.Layout, c.Error = calicoLayout(c.Maps); c.Layout == "" {
		return c
	}
	// ClusterIP, externalIP and LB frontends by address:port/proto; NodePorts by port/proto.
	byAddr := map[string]collectorapi.Frontend{}
	nodePorts := map[string]collectorapi.ServicePort{}
	var order []collectorapi.Frontend
	for _, fe := range req.Service.Frontends() {
		byAddr[fe.String()] = fe
		order = append(order, fe)
	}
	for _, p := range req.Service.Ports {
		if p.NodePort != 0 {
			nodePorts[fmt.Sprintf("%d/%s", p.NodePort, strings.ToUpper(p.Protocol))] = p
		}
	}
	var errs []string
	found := map[string]bool{}
	for _, f := range []calicoFamily{calico4, calico6} {
		fm, ok := calicoPinned(c.Maps, f.frontend)
		if !ok || fm.KeySize != f.keySize() {
			continue
		}
		feMap, err := ebpf.LoadPinnedMap(filepath.Join(dir, fm.Name), &ebpf.LoadPinOptions{ReadOnly: true})
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", fm.Name, err))
			continue
		}
		beMap, err := ebpf.LoadPinnedMap(filepath.Join(dir, f.backend), &ebpf.LoadPinOptions{ReadOnly: true})
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", f.backend, err))
			beMap = nil
		}
		var k, v []byte
		it := feMap.Iterate()
		for it.Next(&k, &v) {
			cf := decodeCalicoKey(k, f)
			isAddr := false
			if fe, ok := byAddr[netip.AddrPortFrom(netip.MustParseAddr(cf.Address), cf.Port).String()+"/"+cf.Protocol]; ok {
				cf.Frontend, isAddr = fe.Kind, true
			}
			if !isAddr {
				if _, ok := nodePorts[fmt.Sprintf("%d/%s", cf.Port, cf.Protocol)]; !ok {
					continue
				}
				cf.Frontend = "nodePort"
			}
			decodeCalicoValue(&cf, v)
			if beMap != nil && !cf.Blackhole {
				if err := readCalicoBackends(beMap, &cf, f); err != nil {
					errs = append(errs, err.Error())
				}
			}
			found[netip.AddrPortFrom(netip.MustParseAddr(cf.Address), cf.Port).String()+"/"+cf.Protocol] = true
			c.Frontends = append(c.Frontends, cf)
		}
		if err := it.Err(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", fm.Name, err))
		}
		feMap.Close()
		if beMap != nil {
			beMap.Close()
		}
	}
	// Frontends the Service should have and the map lacks are listed as not found.
	for _, fe := range order {
		if !found[fe.String()] {
			c.Frontends = append(c.Frontends, collectorapi.CalicoFrontend{Frontend: fe.Kind, Address: fe.Addr.Addr().String(), Port: fe.Addr.Port(), Protocol: fe.Protocol})
		}
	}
	sort.SliceStable(c.Frontends, func(i, j int) bool {
		a, b := c.Frontends[i], c.Frontends[j]
		if a.Frontend != b.Frontend {
			return a.Frontend < b.Frontend
		}
		if a.Address != b.Address {
			return a.Address < b.Address
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		if a.Protocol != b.Protocol {
			return a.Protocol < b.Protocol
		}
		return a.SourceCIDR < b.SourceCIDR
	})
	c.Error = strings.Join(errs, "; ")
	return c
}

func decodeCalicoKey(k []byte, f calicoFamily) collectorapi.CalicoFrontend {
	prefix := binary.LittleEndian.Uint32(k[0:])
	addr, _ := netip.AddrFromSlice(k[4 : 4+f.addrLen])
	o := 4 + f.addrLen
	src, _ := netip.AddrFromSlice(k[o+3 : o+3+f.addrLen])
	bits := int(prefix) - int(f.zeroPrefixLen)
	if bits < 0 {
		bits = 0
	}
	return collectorapi.CalicoFrontend{Address: addr.String(), Port: binary.LittleEndian.Uint16(k[o:]),
		Protocol: collectorapi.IPProtoName(k[o+2]), SourceCIDR: netip.PrefixFrom(src, bits).Masked().String()}
}

func decodeCalicoValue(cf *collectorapi.CalicoFrontend, v []byte) {
	u := func(i int) uint32 { return binary.LittleEndian.Uint32(v[4*i:]) }
	cf.Found = true
	cf.ID, cf.Count, cf.LocalCount, cf.AffinityTimeoutSecs, cf.Flags = u(0), u(1), u(2), u(3), u(4)
	if cf.Count == calicoBlackHole {
		cf.Blackhole, cf.Count = true, 0
	}
}

// maxCalicoOrdinals bounds one frontend's backend reads.
const maxCalicoOrdinals = 1 << 16

func readCalicoBackends(be *ebpf.Map, cf *collectorapi.CalicoFrontend, f calicoFamily) error {
	for o := uint32(0); o < cf.Count && o < maxCalicoOrdinals; o++ {
		v, err := be.LookupBytes(CalicoBackendKey(cf.ID, o))
		if err != nil {
			return fmt.Errorf("%s {%d, %d}: %w", f.backend, cf.ID, o, err)
		}
		b := collectorapi.CalicoBackend{Ordinal: o}
		if v != nil && len(v) >= f.addrLen+2 {
			addr, _ := netip.AddrFromSlice(v[:f.addrLen])
			b.Found, b.Address, b.Port = true, addr.String(), binary.LittleEndian.Uint16(v[f.addrLen:])
		}
		cf.Backends = append(cf.Backends, b)
	}
	return nil
}
