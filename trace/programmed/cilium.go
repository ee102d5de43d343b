package programmed

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/expect"
)

// Cilium's service flags (pkg/loadbalancer ServiceFlags, the u16 whose low
// byte is lb{4,6}_service.flags and high byte .flags2).
const (
	ciliumFlagExtLocalScope   = 1 << 2
	ciliumFlagSessionAffinity = 1 << 4
	ciliumFlagIntLocalScope   = 1 << 12
	ciliumFlagTwoScopes       = 1 << 13
)

// Cilium's LB algorithms as slot 0 keeps them (loadbalancer.SVCLoadBalancingAlgorithm).
const (
	ciliumAlgDefault = 0
	ciliumAlgMaglev  = 2
)

func ciliumFlags(fe *collectorapi.CiliumFrontend) uint16 {
	return uint16(fe.Flags) | uint16(fe.Flags2)<<8
}

// FromCilium is one Service port as Cilium's agent programmed it, read from
// its services, backends and Maglev maps: the ClusterIP frontend as the
// shared Port and the NodePort, externalIP and load-balancer frontends as
// its Frontends. A ClusterIP frontend has the external scope only (its
// backends are this node's own under internalTrafficPolicy Local). nil
// when the collector did not read the ClusterIP frontend (its map could
// not be opened or decoded): no verdict on it.
func FromCilium(c *collectorapi.CiliumObservation, pe expect.PortExpectation) *Port {
	fe := findCiliumFrontend(c.Frontends, "clusterIP", pe.Family, pe.Protocol, uint16(pe.Port))
	if fe == nil {
		return nil
	}
	pp := &Port{Datapath: "cilium", PortName: pe.PortName, Protocol: pe.Protocol, Port: pe.Port, Family: pe.Family,
		EBPF: &EBPFDetail{Agent: "Cilium", Map: "services map", ClusterIP: Frontend{Kind: "clusterIP", Address: fe.Address, Port: int32(fe.Port),
			Name: ciliumFrontendName(fe), Found: fe.Found}}}
	if fe.Found {
		pp.Captured = true
		pp.Datapath = "cilium (" + ciliumLBAlgorithm(ciliumAlgorithm(fe)) + ")"
		pp.InternalLocal = ciliumFlags(fe)&ciliumFlagIntLocalScope != 0
		sel := ciliumSelection(fe)
		pp.Endpoints, pp.Unmatched, pp.Evidence = sel.endpoints, sel.unmatched, sel.evidence
		pp.EBPF.ClusterIP.Broken, pp.EBPF.ClusterIP.Evidence = sel.broken, sel.slots
		pp.EBPF.Inactive, pp.EBPF.MaglevProblem = sel.inactive, sel.maglevProblem
		if ciliumFlags(fe)&ciliumFlagSessionAffinity != 0 {
			if fe.AffinityTimeoutSecs == 0 {
				pp.AffinitySeconds = -1
			}
			pp.AddAffinityTimeout(int(fe.AffinityTimeoutSecs))
		}
		pp.EBPF.Quarantined, pp.EBPF.Maintenance = ciliumWithheld(c, fe, pe.Protocol)
	}
	if mg := fe.Maglev; mg != nil {
		pp.EBPF.MaglevTableSize, pp.EBPF.MaglevEntries = mg.TableSize, ciliumMaglevEntries(fe)
	}
	if pe.NodePort != 0 {
		// Not read (nil) is not missing.
		np := findCiliumFrontend(c.Frontends, FrontendNodePort, pe.Family, pe.Protocol, uint16(pe.NodePort))
		pp.NodePortFound = np == nil || np.Found
	}
	pp.Frontends = ciliumExternal(c, pe)
	return pp
}

// ciliumExternal are the frontends external traffic enters by: NodePort on
// the zero address (Cilium's surrogate for every node address), each
// externalIP and each load-balancer IP of the port's family and protocol.
// Their external scope holds the backends external traffic uses (this
// node's own under externalTrafficPolicy Local); when the two policies
// differ the agent adds an internal scope, for traffic from the node
// itself, holding internalTrafficPolicy's backends (pkg/loadbalancer's
// two-scope services).
func ciliumExternal(c *collectorapi.CiliumObservation, pe expect.PortExpectation) []Frontend {
	type key struct {
		kind, addr string
		port       uint16
	}
	scopes := map[key][2]*collectorapi.CiliumFrontend{}
	var order []key
	for i := range c.Frontends {
		fe := &c.Frontends[i]
		if fe.Frontend == "clusterIP" || AddressFamily(fe.Address) != pe.Family || !strings.EqualFold(fe.Protocol, pe.Protocol) || fe.Scope > 1 {
			continue
		}
		want := uint16(pe.Port)
		if fe.Frontend == FrontendNodePort {
			want = uint16(pe.NodePort)
		}
		if fe.Port != want {
			continue
		}
		k := key{fe.Frontend, fe.Address, fe.Port}
		s, seen := scopes[k]
		if !seen {
			order = append(order, k)
		}
		s[fe.Scope] = fe
		scopes[k] = s
	}
	var out []Frontend
	for _, k := range order {
		s := scopes[k]
		ext := s[0]
		f := Frontend{Kind: k.kind, Address: k.addr, Port: int32(k.port)}
		if ext == nil || !ext.Found {
			f.Name = fmt.Sprintf("%s %s", k.kind, net.JoinHostPort(k.addr, strconv.Itoa(int(k.port))))
			out = append(out, f)
			continue
		}
		local := ciliumFlags(ext)&ciliumFlagExtLocalScope != 0
		f.Found, f.PolicyLocal = true, &local
		f.TwoScopes = ciliumFlags(ext)&ciliumFlagTwoScopes != 0
		ciliumScope(&f, ext)
		if in := s[1]; in != nil && in.Found {
			f.Internal = &Frontend{Kind: k.kind, Address: k.addr, Port: int32(k.port), Found: true}
			ciliumScope(f.Internal, in)
		}
		out = append(out, f)
	}
	return out
}

// ciliumScope fills f with what one scope of a frontend selects: its
// slots' backends, the slots that lead nowhere, and the slots as evidence.
func ciliumScope(f *Frontend, fe *collectorapi.CiliumFrontend) {
	sel := ciliumSelection(fe)
	f.Name = ciliumFrontendName(fe)
	f.Endpoints, f.Broken, f.Evidence = sel.endpoints, sel.broken, sel.slots
}

// ciliumSlots splits a frontend's backend slots the way the datapath uses
// them: it picks among slots 1..count only (the active backends, or the
// terminating ones when none is active, kube-proxy's terminating fallback);
// the slots after count hold backends kept for restore (terminating while
// others are active, quarantined by the health checker); maintenance
// backends get no slot at all.
func ciliumSlots(fe *collectorapi.CiliumFrontend) (selected, inactive []collectorapi.CiliumBackend) {
	for _, b := range fe.Backends {
		if int(b.Slot) <= int(fe.BackendCount) {
			selected = append(selected, b)
		} else {
			inactive = append(inactive, b)
		}
	}
	return selected, inactive
}

// CiliumEndpoint is the "ip:port" a Cilium backend slot points at.
func CiliumEndpoint(b collectorapi.CiliumBackend) string {
	return net.JoinHostPort(b.Address, strconv.Itoa(int(b.Port)))
}

func ciliumFrontendName(fe *collectorapi.CiliumFrontend) string {
	scope := "external"
	if fe.Scope == 1 {
		scope = "internal"
	}
	return fmt.Sprintf("%s %s/%s %s scope", fe.Frontend, net.JoinHostPort(fe.Address, strconv.Itoa(int(fe.Port))), fe.Protocol, scope)
}

// ciliumAlgorithm is the algorithm the datapath applies: the one slot 0
// names, or, for the agent's default, Maglev when the agent keeps a table
// for the frontend.
func ciliumAlgorithm(fe *collectorapi.CiliumFrontend) uint8 {
	if fe.LBAlgorithm == ciliumAlgDefault && fe.Maglev != nil {
		return ciliumAlgMaglev
	}
	return fe.LBAlgorithm
}

// ciliumSelected is what one frontend's slots send new connections to.
type ciliumSelected struct {
	endpoints []Endpoint
	// unmatched is the share that goes nowhere.
	unmatched float64
	// slots is one line per slot; evidence adds the Maglev table's.
	slots, evidence []string
	// broken are the selectable slots without a backend.
	broken []string
	// inactive are the backends past count, "ip:port state".
	inactive []string
	// maglevProblem says why the Maglev table cannot be used.
	maglevProblem string
}

// ciliumSelection is what a frontend's selectable slots send new
// connections to, with the shares the algorithm gives each, the share that
// goes nowhere (slots without a backend, table entries of backends not in
// the slots), and the evidence. Random selection gives every slot 1/count;
// Maglev gives each backend its entries in the lookup table over the table
// size, which Maglev keeps within one entry of the fair share.
func ciliumSelection(fe *collectorapi.CiliumFrontend) ciliumSelected {
	var s ciliumSelected
	selected, inactive := ciliumSlots(fe)
	name := ciliumFrontendName(fe)
	for _, b := range fe.Backends {
		s.slots = append(s.slots, fmt.Sprintf("%s slot %d -> backend %d %s %s", name, b.Slot, b.BackendID, CiliumEndpoint(b), orNone(b.State)))
	}
	s.evidence = s.slots
	var found []collectorapi.CiliumBackend
	for _, b := range selected {
		switch {
		case b.BackendID == 0:
			s.broken = append(s.broken, fmt.Sprintf("slot %d is missing", b.Slot))
		case !b.Found:
			s.broken = append(s.broken, fmt.Sprintf("slot %d points at backend %d, which the backends map does not hold", b.Slot, b.BackendID))
		default:
			found = append(found, b)
		}
	}
	for _, b := range inactive {
		st := b.State
		if st == "active" || st == "" {
			st = "quarantined" // active in the backends map, out of this frontend's count: the health checker's verdict
		}
		s.inactive = append(s.inactive, CiliumEndpoint(b)+" "+st)
	}

	if ciliumAlgorithm(fe) == ciliumAlgMaglev {
		mg := fe.Maglev
		switch {
		case mg == nil:
			s.maglevProblem = fmt.Sprintf("no lookup table is pinned for its rev-NAT index %d", fe.RevNATIndex)
		case mg.Error != "":
			s.maglevProblem = "its lookup table could not be read (" + mg.Error + ")"
		case mg.TableSize == 0:
			s.maglevProblem = "its lookup table is empty"
		default:
			s.endpoints, s.unmatched = maglevShares(mg, found, len(selected)), maglevUnmatched(mg, found)
			s.evidence = append(s.slots[:len(s.slots):len(s.slots)],
				fmt.Sprintf("%s maglev table of %d entries over %d backend(s)", name, mg.TableSize, len(mg.Backends)))
			return s
		}
	}
	for _, b := range found {
		s.endpoints = append(s.endpoints, Endpoint{Endpoint: CiliumEndpoint(b), Share: 1 / float64(len(selected))})
	}
	if len(selected) > 0 {
		s.unmatched = float64(len(selected)-len(found)) / float64(len(selected))
	}
	return s
}

// maglevShares gives each selectable backend its table share; a share
// within one table entry of the fair one is the fair share, since Maglev
// cannot split a table of M entries among n backends finer than that.
func maglevShares(mg *collectorapi.CiliumMaglev, found []collectorapi.CiliumBackend, n int) []Endpoint {
	entries := map[uint32]int{}
	for _, s := range mg.Backends {
		entries[s.BackendID] = s.Entries
	}
	var eps []Endpoint
	fair := float64(mg.TableSize) / float64(n)
	for _, b := range found {
		e := float64(entries[b.BackendID])
		share := e / float64(mg.TableSize)
		if math.Abs(e-fair) <= 1 {
			share = 1 / float64(n)
		}
		eps = append(eps, Endpoint{Endpoint: CiliumEndpoint(b), Share: share})
	}
	return eps
}

// maglevUnmatched is the table share of backend IDs no selectable slot
// holds: flows hashed there go to a backend the frontend no longer lists.
func maglevUnmatched(mg *collectorapi.CiliumMaglev, found []collectorapi.CiliumBackend) float64 {
	in := map[uint32]bool{}
	for _, b := range found {
		in[b.BackendID] = true
	}
	n := 0
	for _, s := range mg.Backends {
		if !in[s.BackendID] {
			n += s.Entries
		}
	}
	return float64(n) / float64(mg.TableSize)
}

// ciliumWithheld are the endpoints Cilium deliberately keeps out of a
// frontend's selection: those its health checker quarantined on it (slots
// past count that are active or quarantined in the backends map) and
// those put in maintenance through its service API (no slot at all, found
// in the backends map).
func ciliumWithheld(c *collectorapi.CiliumObservation, fe *collectorapi.CiliumFrontend, protocol string) (quarantined, maintenance map[string]bool) {
	_, inactive := ciliumSlots(fe)
	quarantined, maintenance = map[string]bool{}, map[string]bool{}
	for _, b := range inactive {
		if b.State == "active" || b.State == "quarantined" {
			quarantined[CiliumEndpoint(b)] = true
		}
	}
	for _, b := range c.Maintenance {
		if strings.EqualFold(b.Protocol, protocol) || b.Protocol == "ANY" {
			maintenance[CiliumEndpoint(b)] = true
		}
	}
	return quarantined, maintenance
}

// ciliumMaglevEntries are the Maglev table entries each of fe's backends
// holds, by endpoint.
func ciliumMaglevEntries(fe *collectorapi.CiliumFrontend) map[string]int {
	byID := map[uint32]string{}
	for _, b := range fe.Backends {
		byID[b.BackendID] = CiliumEndpoint(b)
	}
	out := map[string]int{}
	for _, m := range fe.Maglev.Backends {
		if ep, ok := byID[m.BackendID]; ok {
			out[ep] += m.Entries
		}
	}
	return out
}

// findCiliumFrontend finds the frontend of one kind, family, protocol and
// port, the external scope first; nil when the collector did not read it.
// Protocol-less keys (older Cilium, protocol ANY) match any protocol.
func findCiliumFrontend(fes []collectorapi.CiliumFrontend, kind string, fam corev1.IPFamily, proto string, port uint16) *collectorapi.CiliumFrontend {
	var best *collectorapi.CiliumFrontend
	for i := range fes {
		fe := &fes[i]
		if fe.Frontend != kind || fe.Port != port || AddressFamily(fe.Address) != fam {
			continue
		}
		if !strings.EqualFold(fe.Protocol, proto) && fe.Protocol != "" && !strings.EqualFold(fe.Protocol, "ANY") {
			continue
		}
		switch {
		case best == nil:
			best = fe
		case fe.Found && !best.Found:
			best = fe
		case fe.Found == best.Found && fe.Scope < best.Scope:
			best = fe
		}
	}
	return best
}

// ciliumLBAlgorithm names the value Cilium keeps in slot 0 for the
// Service's load-balancing algorithm (loadbalancer.SVCLoadBalancingAlgorithm:
// 0 undefined = the agent's default, 1 random, 2 maglev).
func ciliumLBAlgorithm(a uint8) string {
	switch a {
	case 1:
		return "random"
	case 2:
		return "maglev"
	}
	return "default algorithm"
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
