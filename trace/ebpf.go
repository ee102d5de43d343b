package trace

import (
	"cmp"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"

	"github.com/svctrace/kubectl-svctrace/trace/report"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
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

// ciliumReadable reports what kept the collector from reading Cilium's maps
// and whether anything was read at all. An unknown layout is Cilium's, not
// kube-proxy's, and leaves the node's ports unjudged (unknown), never failed.
func (nj *nodeJudge) ciliumReadable(node string, c *collectorapi.CiliumObservation) bool {
	if c.Layout == "" && c.Error != "" && len(c.Frontends) == 0 && anyMapError(c.Maps) {
		ck := nj.EmitNode(report.CodeDPEBPFUnreadable, node, report.Args{"datapath": "Cilium", "error": c.Error}, nil, fieldItems("pinnedMaps", pinnedMapSizes(c.Maps)))
		ck.Status = report.StatusUnknown
		return false
	}
	if c.Layout == "" && c.Error != "" && len(c.Frontends) == 0 {
		ck := nj.EmitNode(report.CodeDPEBPFLayoutUnknown, node, report.Args{"datapath": "Cilium", "detail": c.Error}, nil,
			fieldValue("layoutRead", c.LayoutNote), fieldItems("pinnedMaps", pinnedMapSizes(c.Maps)))
		ck.Status = report.StatusUnknown
		return false
	}
	if c.Error != "" {
		ck := nj.EmitNode(report.CodeDPEBPFUnreadable, node, report.Args{"datapath": "Cilium", "error": c.Error}, nil,
			fieldValue("layout", c.LayoutNote))
		ck.Status = report.StatusUnknown
	}
	return true
}

// anyMapError: some pinned map could not be opened (no permission, say),
// which is not a layout the collector does not know.
func anyMapError(maps []collectorapi.PinnedMap) bool {
	for _, m := range maps {
		if m.Error != "" {
			return true
		}
	}
	return false
}

func pinnedMapSizes(maps []collectorapi.PinnedMap) []string {
	var out []string
	for _, m := range maps {
		s := fmt.Sprintf("%s %s key %d value %d max %d", m.Name, m.Type, m.KeySize, m.ValueSize, m.MaxEntries)
		if m.Error != "" {
			s = m.Name + ": " + m.Error
		}
		out = append(out, s)
	}
	return out
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

func ciliumEndpoint(b collectorapi.CiliumBackend) string {
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

// ciliumSelection is what a frontend's selectable slots send new
// connections to, with the shares the algorithm gives each, the share that
// goes nowhere (slots without a backend, table entries of backends not in
// the slots), and the evidence. Random selection gives every slot 1/count;
// Maglev gives each backend its entries in the lookup table over the table
// size, which Maglev keeps within one entry of the fair share.
func (nj *nodeJudge) ciliumSelection(node, port string, fe *collectorapi.CiliumFrontend) (eps []programmed.Endpoint, unmatched float64, evidence []string) {
	selected, inactive := ciliumSlots(fe)
	name := ciliumFrontendName(fe)
	for _, b := range fe.Backends {
		evidence = append(evidence, fmt.Sprintf("%s slot %d -> backend %d %s %s", name, b.Slot, b.BackendID, ciliumEndpoint(b), orNone(b.State)))
	}
	var broken []string
	var found []collectorapi.CiliumBackend
	for _, b := range selected {
		switch {
		case b.BackendID == 0:
			broken = append(broken, fmt.Sprintf("slot %d is missing", b.Slot))
		case !b.Found:
			broken = append(broken, fmt.Sprintf("slot %d points at backend %d, which the backends map does not hold", b.Slot, b.BackendID))
		default:
			found = append(found, b)
		}
	}
	if len(broken) > 0 {
		nj.EmitNode(report.CodeDPEBPFBrokenSlot, node, report.Args{"datapath": "Cilium", "frontend": name, "port": port, "detail": strings.Join(broken, "; ")}, evidence)
	}
	if len(inactive) > 0 {
		var states []string
		for _, b := range inactive {
			st := b.State
			if st == "active" || st == "" {
				st = "quarantined" // active in the backends map, out of this frontend's count: the health checker's verdict
			}
			states = append(states, ciliumEndpoint(b)+" "+st)
		}
		nj.EmitNode(report.CodeDPEBPFInactiveBackends, node, report.Args{"datapath": "Cilium", "frontend": name, "port": port,
			"count": strconv.Itoa(len(inactive)), "backends": listNames(states)}, nil, fieldItems("inactive", states))
	}

	if ciliumAlgorithm(fe) == ciliumAlgMaglev {
		mg := fe.Maglev
		detail := ""
		switch {
		case mg == nil:
			detail = fmt.Sprintf("no lookup table is pinned for its rev-NAT index %d", fe.RevNATIndex)
		case mg.Error != "":
			detail = "its lookup table could not be read (" + mg.Error + ")"
		case mg.TableSize == 0:
			detail = "its lookup table is empty"
		}
		if detail != "" {
			nj.EmitNode(report.CodeDPEBPFMaglevTable, node, report.Args{"datapath": "Cilium", "frontend": name, "port": port, "detail": detail}, nil)
		} else {
			return maglevShares(mg, selected, found, len(selected)), maglevUnmatched(mg, found), append(evidence,
				fmt.Sprintf("%s maglev table of %d entries over %d backend(s)", name, mg.TableSize, len(mg.Backends)))
		}
	}
	for _, b := range found {
		eps = append(eps, programmed.Endpoint{Endpoint: ciliumEndpoint(b), Share: 1 / float64(len(selected))})
	}
	if len(selected) > 0 {
		unmatched = float64(len(selected)-len(found)) / float64(len(selected))
	}
	return eps, unmatched, evidence
}

// maglevShares gives each selectable backend its table share; a share
// within one table entry of the fair one is the fair share, since Maglev
// cannot split a table of M entries among n backends finer than that.
func maglevShares(mg *collectorapi.CiliumMaglev, selected, found []collectorapi.CiliumBackend, n int) []programmed.Endpoint {
	entries := map[uint32]int{}
	for _, s := range mg.Backends {
		entries[s.BackendID] = s.Entries
	}
	var eps []programmed.Endpoint
	fair := float64(mg.TableSize) / float64(n)
	for _, b := range found {
		e := float64(entries[b.BackendID])
		share := e / float64(mg.TableSize)
		if math.Abs(e-fair) <= 1 {
			share = 1 / float64(n)
		}
		eps = append(eps, programmed.Endpoint{Endpoint: ciliumEndpoint(b), Share: share})
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

// ciliumPort is the ClusterIP frontend of one Service port as Cilium
// programmed it, in the shape every datapath is compared in.
func (nj *nodeJudge) ciliumPort(node string, pe expect.PortExpectation, fe *collectorapi.CiliumFrontend) *programmed.Port {
	pp := &programmed.Port{Datapath: "cilium", PortName: pe.PortName, Protocol: pe.Protocol, Port: pe.Port, Family: pe.Family}
	if !fe.Found {
		return pp
	}
	pp.Captured = true
	pp.Datapath = "cilium (" + ciliumLBAlgorithm(ciliumAlgorithm(fe)) + ")"
	pp.InternalLocal = ciliumFlags(fe)&ciliumFlagIntLocalScope != 0
	pp.Endpoints, pp.Unmatched, pp.Evidence = nj.ciliumSelection(node, servicePortLabel(nj.in.Namespace, nj.in.Name, pe), fe)
	if ciliumFlags(fe)&ciliumFlagSessionAffinity != 0 {
		if fe.AffinityTimeoutSecs == 0 {
			pp.AffinitySeconds = -1
		}
		pp.AddAffinityTimeout(int(fe.AffinityTimeoutSecs))
	}
	return pp
}

// withoutInactive drops from want the endpoints Cilium deliberately keeps
// out of selection, reported on their own so they are not also reported
// missing: those its health checker quarantined on this frontend (slots
// past count, or state quarantined) and those put in maintenance through
// its service API (no slot at all, found in the backends map).
func (nj *nodeJudge) withoutInactive(node string, pe expect.PortExpectation, fe *collectorapi.CiliumFrontend, c *collectorapi.CiliumObservation) expect.PortExpectation {
	if fe == nil || !fe.Found {
		return pe
	}
	_, inactive := ciliumSlots(fe)
	quarantined, maintenance := map[string]bool{}, map[string]bool{}
	for _, b := range inactive {
		if b.State == "active" || b.State == "quarantined" {
			quarantined[ciliumEndpoint(b)] = true
		}
	}
	for _, b := range c.Maintenance {
		if strings.EqualFold(b.Protocol, pe.Protocol) || b.Protocol == "ANY" {
			maintenance[ciliumEndpoint(b)] = true
		}
	}
	var keep []expect.ExpectedEndpoint
	var q, m []string
	for _, e := range pe.Internal {
		switch {
		case quarantined[e.String()]:
			q = append(q, e.String())
		case maintenance[e.String()]:
			m = append(m, e.String())
		default:
			keep = append(keep, e)
		}
	}
	port := servicePortLabel(nj.in.Namespace, nj.in.Name, pe)
	if len(q) > 0 {
		sort.Strings(q)
		nj.EmitNode(report.CodeDPEBPFQuarantined, node, report.Args{"datapath": "Cilium", "port": port, "endpoints": listNames(q)}, nil, fieldItems("quarantined", q))
	}
	if len(m) > 0 {
		sort.Strings(m)
		nj.EmitNode(report.CodeDPEBPFMaintenance, node, report.Args{"datapath": "Cilium", "port": port, "endpoints": listNames(m)}, nil, fieldItems("maintenance", m))
	}
	if len(q)+len(m) > 0 {
		pe.Internal = keep
		var ext []expect.ExpectedEndpoint
		for _, e := range pe.External {
			if !quarantined[e.String()] && !maintenance[e.String()] {
				ext = append(ext, e)
			}
		}
		pe.External = ext
	}
	return pe
}

// compareCiliumExternal checks the frontends external traffic enters by:
// NodePort on the zero address (Cilium's surrogate for every node
// address), each externalIP and each load-balancer IP of the port's family
// and protocol. Their external scope holds the backends external traffic
// uses (this node's own under externalTrafficPolicy Local); when the two
// policies differ the agent adds an internal scope, for traffic from the
// node itself, holding internalTrafficPolicy's backends.
func (nj *nodeJudge) compareCiliumExternal(node string, pe expect.PortExpectation, c *collectorapi.CiliumObservation) {
	if !pe.ExternallyAccessible || !pe.HasAnyEndpoints {
		return
	}
	port := servicePortLabel(nj.in.Namespace, nj.in.Name, pe)
	type key struct {
		kind, addr string
		port       uint16
	}
	scopes := map[key][2]*collectorapi.CiliumFrontend{}
	var order []key
	for i := range c.Frontends {
		fe := &c.Frontends[i]
		if fe.Frontend == "clusterIP" || programmed.AddressFamily(fe.Address) != pe.Family || !strings.EqualFold(fe.Protocol, pe.Protocol) || fe.Scope > 1 {
			continue
		}
		want := uint16(pe.Port)
		if fe.Frontend == "nodePort" {
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
	for _, k := range order {
		s := scopes[k]
		ext := s[0]
		if ext == nil || !ext.Found {
			if k.kind == "nodePort" {
				continue // DP020 says it
			}
			nj.EmitNode(report.CodeDPEBPFExternal, node, report.Args{"datapath": "Cilium", "frontend": fmt.Sprintf("%s %s", k.kind, net.JoinHostPort(k.addr, strconv.Itoa(int(k.port)))),
				"port": port, "detail": "is not in the services map: traffic to it reaches no backend"}, nil)
			continue
		}
		extLocal := ciliumFlags(ext)&ciliumFlagExtLocalScope != 0
		if extLocal != pe.ExternalPolicyLocal {
			got, want := "Cluster", "Cluster"
			if extLocal {
				got = "Local"
			}
			if pe.ExternalPolicyLocal {
				want = "Local"
			}
			nj.EmitNode(report.CodeDPEBPFExternal, node, report.Args{"datapath": "Cilium", "frontend": ciliumFrontendName(ext), "port": port,
				"detail": fmt.Sprintf("carries externalTrafficPolicy %s, the Service says %s", got, want)}, nil)
		}
		nj.compareCiliumScope(node, port, pe.Family, ext, pe.External, "externalTrafficPolicy")
		if in := s[1]; in != nil && in.Found {
			nj.compareCiliumScope(node, port, pe.Family, in, pe.Internal, "internalTrafficPolicy")
		} else if ciliumFlags(ext)&ciliumFlagTwoScopes != 0 {
			nj.EmitNode(report.CodeDPEBPFExternal, node, report.Args{"datapath": "Cilium", "frontend": ciliumFrontendName(ext), "port": port,
				"detail": "is flagged as having two scopes, but its internal scope is not in the services map"}, nil)
		}
	}
}

// compareCiliumScope compares one frontend scope's selectable backends
// with the endpoints its traffic policy should leave.
func (nj *nodeJudge) compareCiliumScope(node, port string, family corev1.IPFamily, fe *collectorapi.CiliumFrontend, want []expect.ExpectedEndpoint, policy string) {
	selected, _ := ciliumSlots(fe)
	got := map[string]bool{}
	for _, b := range selected {
		if b.Found {
			got[ciliumEndpoint(b)] = true
		}
	}
	nj.compareEndpointSets(node, port, nj.modes[node], family, ciliumFrontendName(fe), got, want, policy, nil)
}

// ciliumNodePort finds the NodePort surrogate frontend of a port: the
// external scope, or nil when the collector did not read it.
func ciliumNodePort(c *collectorapi.CiliumObservation, pe expect.PortExpectation) *collectorapi.CiliumFrontend {
	if pe.NodePort == 0 {
		return nil
	}
	return ciliumFrontend(c.Frontends, "nodePort", pe.Family, pe.Protocol, uint16(pe.NodePort))
}

// Calico's NAT frontend flags (felix/bpf/nat NATFlgExternalLocal, NATFlgInternalLocal).
const (
	calicoFlagExternalLocal = 0x1
	calicoFlagInternalLocal = 0x2
)

// judgeCalico compares Calico eBPF's NAT maps with the expectation, as
// kube-proxy's rules are compared. Felix keeps one backend list per
// Service port ({id, ordinal}); a frontend flagged Local uses its first
// LocalCount ordinals (the node's own backends, which Felix writes first),
// otherwise all Count. That reading of Felix's layout is from Calico's
// source, not checked against a running Felix.
func (nj *nodeJudge) judgeCalico(node string, obs *collectorapi.Observation, expect []expect.PortExpectation, choices *expect.Choices) {
	e := obs.Sections.EBPF
	if e == nil || e.Data == nil || e.Data.Calico == nil || !e.Data.Calico.Detected {
		return
	}
	c := e.Data.Calico
	if c.Layout == "" && c.Error != "" && len(c.Frontends) == 0 && anyMapError(c.Maps) {
		ck := nj.EmitNode(report.CodeDPEBPFUnreadable, node, report.Args{"datapath": "Calico", "error": c.Error}, nil, fieldItems("pinnedMaps", pinnedMapSizes(c.Maps)))
		ck.Status = report.StatusUnknown
		return
	}
	if c.Layout == "" && c.Error != "" && len(c.Frontends) == 0 {
		ck := nj.EmitNode(report.CodeDPEBPFLayoutUnknown, node, report.Args{"datapath": "Calico", "detail": c.Error}, nil,
			fieldItems("pinnedMaps", pinnedMapSizes(c.Maps)))
		ck.Status = report.StatusUnknown
		return
	}
	if c.Error != "" {
		ck := nj.EmitNode(report.CodeDPEBPFUnreadable, node, report.Args{"datapath": "Calico", "error": c.Error}, nil)
		ck.Status = report.StatusUnknown
	}
	for i, pe := range expect {
		if !nj.portSelected(pe.PortName, pe.Port) || !pe.HasAnyEndpoints {
			continue
		}
		fes := calicoFrontends(c.Frontends, "clusterIP", pe.Family, pe.Protocol, uint16(pe.Port))
		if len(fes) == 0 {
			continue // not read: no verdict
		}
		fe := fes[0]
		port := servicePortLabel(nj.in.Namespace, nj.in.Name, pe)
		pp := &programmed.Port{Datapath: "calico", PortName: pe.PortName, Protocol: pe.Protocol, Port: pe.Port, Family: pe.Family}
		if fe.Found {
			pp.Evidence = calicoEvidence(fe)
			if fe.Blackhole {
				pp.Rejected = true
			} else {
				pp.Captured = true
				pp.InternalLocal = fe.Flags&calicoFlagInternalLocal != 0
				pp.Endpoints, pp.Unmatched = nj.calicoSelection(node, port, fe, pp.InternalLocal)
				pp.AddAffinityTimeout(int(fe.AffinityTimeoutSecs))
			}
		}
		if pe.NodePort != 0 {
			nps := calicoFrontends(c.Frontends, "nodePort", pe.Family, pe.Protocol, uint16(pe.NodePort))
			pp.NodePortFound = false
			for _, np := range nps {
				if np.Found {
					pp.NodePortFound = true
				}
			}
		}
		if choices != nil {
			pe = fit(choices, i, pp)
		}
		nj.comparePort(node, obs, nj.modes[node], pe, pp)
		nj.compareCalicoExternal(node, port, pe, c)
	}
}

// calicoFrontends are the entries of one kind, family, protocol and port,
// the all-sources entry first.
func calicoFrontends(fes []collectorapi.CalicoFrontend, kind string, fam corev1.IPFamily, proto string, port uint16) []*collectorapi.CalicoFrontend {
	var out []*collectorapi.CalicoFrontend
	for i := range fes {
		fe := &fes[i]
		if fe.Frontend == kind && fe.Port == port && programmed.AddressFamily(fe.Address) == fam && strings.EqualFold(fe.Protocol, proto) {
			out = append(out, fe)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return calicoAllSources(out[i]) && !calicoAllSources(out[j]) })
	return out
}

func calicoAllSources(fe *collectorapi.CalicoFrontend) bool {
	return fe.SourceCIDR == "" || strings.HasSuffix(fe.SourceCIDR, "/0")
}

func calicoEvidence(fe *collectorapi.CalicoFrontend) []string {
	out := []string{fmt.Sprintf("%s %s/%s from %s -> id %d count %d local %d affinity %ds flags %#x",
		fe.Frontend, net.JoinHostPort(fe.Address, strconv.Itoa(int(fe.Port))), fe.Protocol, orNone(fe.SourceCIDR),
		fe.ID, fe.Count, fe.LocalCount, fe.AffinityTimeoutSecs, fe.Flags)}
	for _, b := range fe.Backends {
		out = append(out, fmt.Sprintf("  {%d, %d} -> %s", fe.ID, b.Ordinal, net.JoinHostPort(b.Address, strconv.Itoa(int(b.Port)))))
	}
	return out
}

// calicoSelection is what the frontend's ordinals send new connections to:
// the first LocalCount ordinals under a Local policy, all Count otherwise,
// each with an equal share; ordinals without a backend entry go nowhere.
func (nj *nodeJudge) calicoSelection(node, port string, fe *collectorapi.CalicoFrontend, local bool) ([]programmed.Endpoint, float64) {
	n := int(fe.Count)
	if local {
		n = int(fe.LocalCount)
	}
	if n > len(fe.Backends) {
		n = len(fe.Backends)
	}
	var eps []programmed.Endpoint
	var broken []string
	for _, b := range fe.Backends[:n] {
		if !b.Found {
			broken = append(broken, fmt.Sprintf("ordinal %d of id %d has no backend entry", b.Ordinal, fe.ID))
			continue
		}
		eps = append(eps, programmed.Endpoint{Endpoint: net.JoinHostPort(b.Address, strconv.Itoa(int(b.Port))), Share: 1 / float64(n)})
	}
	if len(broken) > 0 {
		nj.EmitNode(report.CodeDPEBPFBrokenSlot, node, report.Args{"datapath": "Calico", "frontend": calicoFrontendName(fe), "port": port,
			"detail": strings.Join(broken, "; ")}, calicoEvidence(fe))
	}
	if n == 0 {
		return eps, 0
	}
	return eps, float64(len(broken)) / float64(n)
}

func calicoFrontendName(fe *collectorapi.CalicoFrontend) string {
	s := fmt.Sprintf("%s %s/%s", fe.Frontend, net.JoinHostPort(fe.Address, strconv.Itoa(int(fe.Port))), fe.Protocol)
	if !calicoAllSources(fe) {
		s += " from " + fe.SourceCIDR
	}
	return s
}

// compareCalicoExternal checks the NodePort entries (one per node address
// and Felix's 255.255.255.255 wildcard), externalIPs and load-balancer IPs.
func (nj *nodeJudge) compareCalicoExternal(node, port string, pe expect.PortExpectation, c *collectorapi.CalicoObservation) {
	if !pe.ExternallyAccessible || !pe.HasAnyEndpoints {
		return
	}
	var fes []*collectorapi.CalicoFrontend
	if pe.NodePort != 0 {
		fes = append(fes, calicoFrontends(c.Frontends, "nodePort", pe.Family, pe.Protocol, uint16(pe.NodePort))...)
	}
	fes = append(fes, calicoFrontends(c.Frontends, "externalIP", pe.Family, pe.Protocol, uint16(pe.Port))...)
	fes = append(fes, calicoFrontends(c.Frontends, "loadBalancerIP", pe.Family, pe.Protocol, uint16(pe.Port))...)
	for _, fe := range fes {
		name := calicoFrontendName(fe)
		if !fe.Found {
			nj.EmitNode(report.CodeDPEBPFExternal, node, report.Args{"datapath": "Calico", "frontend": name, "port": port,
				"detail": "is not in the NAT frontend map: traffic to it reaches no backend"}, nil)
			continue
		}
		local := fe.Flags&calicoFlagExternalLocal != 0
		if local != pe.ExternalPolicyLocal {
			got, want := "Cluster", "Cluster"
			if local {
				got = "Local"
			}
			if pe.ExternalPolicyLocal {
				want = "Local"
			}
			nj.EmitNode(report.CodeDPEBPFExternal, node, report.Args{"datapath": "Calico", "frontend": name, "port": port,
				"detail": fmt.Sprintf("carries externalTrafficPolicy %s, the Service says %s", got, want)}, calicoEvidence(fe))
			continue
		}
		if fe.Blackhole {
			continue // no endpoints: comparePort judged the ClusterIP's verdict
		}
		eps, _ := nj.calicoSelection(node, port, fe, local)
		got := map[string]bool{}
		for _, e := range eps {
			got[e.Endpoint] = true
		}
		nj.compareEndpointSets(node, port, nj.modes[node], pe.Family, name, got, pe.External, "externalTrafficPolicy", calicoEvidence(fe))
	}
}

// compareEndpointSets reports the difference between the endpoints an
// external frontend of mode's datapath selects and those its traffic
// policy should leave. Endpoints whose listing changed while the node was
// read are only a warning: the maps may be newer than the API read.
func (nj *nodeJudge) compareEndpointSets(node, port string, mode collectorapi.DatapathMode, family corev1.IPFamily, frontend string, got map[string]bool, want []expect.ExpectedEndpoint, policy string, evidence []string) {
	wantSet := map[string]bool{}
	for _, e := range want {
		wantSet[e.String()] = true
	}
	missing, stale := setDiff(wantSet, got)
	datapath := programmed.EBPFName(mode)
	rc := nj.readChanges(mode, family)
	changedMissing, missing, why := rc.split(missing, "")
	changedStale, stale, whyStale := rc.split(stale, "")
	if len(changedMissing) > 0 || len(changedStale) > 0 {
		nj.EmitNode(report.CodeDPSyncPending, node, report.Args{"port": port, "datapath": datapath + " " + frontend, "programmer": programmed.ProgrammerOf(mode),
			"what": fmt.Sprintf("it selects backends that differ from what the EndpointSlices and %s leave (missing: %s; stale: %s)",
				policy, listOrNone(changedMissing), listOrNone(changedStale)),
			"why": cmp.Or(why, whyStale)}, evidence,
			fieldItems("missing", changedMissing), fieldItems("stale", changedStale), fieldItems("expected", expect.EndpointStrings(want)))
	}
	if len(missing) == 0 && len(stale) == 0 {
		return
	}
	nj.EmitNode(report.CodeDPEBPFExternal, node, report.Args{"datapath": datapath, "frontend": frontend, "port": port,
		"detail": fmt.Sprintf("selects backends that differ from what the EndpointSlices and %s leave (missing: %s; stale: %s)",
			policy, listOrNone(missing), listOrNone(stale))}, evidence,
		fieldItems("missing", missing), fieldItems("stale", stale), fieldItems("expected", expect.EndpointStrings(want)))
}

// judgeCilium compares Cilium's backends for each ClusterIP frontend with the
// expected endpoints, as kube-proxy's are compared. A frontend is one
// (address family, protocol, port) key: kube-dns's 53/UDP and 53/TCP, or a
// dual-stack Service's IPv4 and IPv6 ClusterIPs, are separate frontends with
// separate backends. ClusterIP frontends have the external scope only (its
// backends are this node's own under internalTrafficPolicy Local); the
// NodePort, externalIP and load-balancer frontends are compared on their
// own (compareCiliumExternal). Maps the collector could not decode (another
// Cilium version's layout, no permission) leave the port unknown, not
// failed: kube-proxy's reasons do not apply here.
func (nj *nodeJudge) judgeCilium(node string, obs *collectorapi.Observation, expect []expect.PortExpectation, choices *expect.Choices) {
	e := obs.Sections.EBPF
	if e == nil || e.Data == nil {
		return
	}
	c := e.Data.Cilium
	if c == nil || !c.Detected {
		nj.judgeCalico(node, obs, expect, choices)
		return
	}
	if !nj.ciliumReadable(node, c) {
		return
	}
	for i, pe := range expect {
		if !nj.portSelected(pe.PortName, pe.Port) || !pe.HasAnyEndpoints {
			continue
		}
		fe := ciliumFrontend(c.Frontends, "clusterIP", pe.Family, pe.Protocol, uint16(pe.Port))
		if fe == nil {
			// The frontend was not read (its map could not be opened or
			// decoded): already said, and no verdict on it.
			continue
		}
		pp := nj.ciliumPort(node, pe, fe)
		if pe.NodePort != 0 {
			// Not read (nil) is not missing.
			np := ciliumNodePort(c, pe)
			pp.NodePortFound = np == nil || np.Found
		}
		if choices != nil {
			pe = fit(choices, i, pp)
		}
		pe = nj.withoutInactive(node, pe, fe, c)
		nj.comparePort(node, obs, nj.modes[node], pe, pp)
		nj.compareCiliumExternal(node, pe, c)
	}
}

// ciliumFrontend finds the frontend of one kind, family, protocol and port,
// the external scope first; nil when the collector did not read it.
// Protocol-less keys (older Cilium, protocol ANY) match any protocol.
func ciliumFrontend(fes []collectorapi.CiliumFrontend, kind string, fam corev1.IPFamily, proto string, port uint16) *collectorapi.CiliumFrontend {
	var best *collectorapi.CiliumFrontend
	for i := range fes {
		fe := &fes[i]
		if fe.Frontend != kind || fe.Port != port || programmed.AddressFamily(fe.Address) != fam {
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
