package trace

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

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

// judgeCalico compares Calico eBPF's NAT maps with the expectation, as
// kube-proxy's rules are compared: programmed.FromCalico reads them into the
// shared Port and its Frontends.
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
		pp := programmed.FromCalico(c, pe)
		if pp == nil {
			continue // not read: no verdict
		}
		nj.judgeEBPFEntry(node, pe, pp)
		if choices != nil {
			pe = fit(choices, i, pp)
		}
		nj.comparePort(node, obs, nj.modes[node], pe, pp)
	}
}

// judgeCilium compares Cilium's backends for each ClusterIP frontend with the
// expected endpoints, as kube-proxy's are compared. A frontend is one
// (address family, protocol, port) key: kube-dns's 53/UDP and 53/TCP, or a
// dual-stack Service's IPv4 and IPv6 ClusterIPs, are separate frontends with
// separate backends. programmed.FromCilium reads the ClusterIP frontend into
// the shared Port and the NodePort, externalIP and load-balancer frontends
// into its Frontends, which comparePort compares like IPVS's virtual
// servers. Maps the collector could not decode (another Cilium version's
// layout, no permission) leave the port unknown, not failed: kube-proxy's
// reasons do not apply here.
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
		pp := programmed.FromCilium(c, pe)
		if pp == nil {
			// The frontend was not read (its map could not be opened or
			// decoded): already said, and no verdict on it.
			continue
		}
		nj.judgeEBPFEntry(node, pe, pp)
		if choices != nil {
			pe = fit(choices, i, pp)
		}
		pe = nj.withoutInactive(node, pe, pp)
		nj.comparePort(node, obs, nj.modes[node], pe, pp)
	}
}

// judgeEBPFEntry reports what the ClusterIP entry's own slots say, before
// its endpoints are compared: slots that lead nowhere (their share shows up
// as unmatched), backends kept but not selected, and a Maglev table the
// shares cannot be read from.
func (nj *nodeJudge) judgeEBPFEntry(node string, pe expect.PortExpectation, pp *programmed.Port) {
	d := pp.EBPF
	port := servicePortLabel(nj.in.Namespace, nj.in.Name, pe)
	if len(d.ClusterIP.Broken) > 0 {
		nj.EmitNode(report.CodeDPEBPFBrokenSlot, node, report.Args{"datapath": d.Agent, report.ArgFamily: string(pe.Family), "frontend": d.ClusterIP.Name, "port": port,
			"detail": strings.Join(d.ClusterIP.Broken, "; ")}, d.ClusterIP.Evidence)
	}
	if len(d.Inactive) > 0 {
		nj.EmitNode(report.CodeDPEBPFInactiveBackends, node, report.Args{"datapath": d.Agent, report.ArgFamily: string(pe.Family), "frontend": d.ClusterIP.Name, "port": port,
			"count": strconv.Itoa(len(d.Inactive)), "backends": listNames(d.Inactive)}, nil, fieldItems("inactive", d.Inactive))
	}
	if d.MaglevProblem != "" {
		nj.EmitNode(report.CodeDPEBPFMaglevTable, node, report.Args{"datapath": d.Agent, report.ArgFamily: string(pe.Family), "frontend": d.ClusterIP.Name, "port": port, "detail": d.MaglevProblem}, nil)
	}
}

// withoutInactive drops from want the endpoints the agent deliberately
// keeps out of selection, reported on their own so they are not also
// reported missing: those its health checker quarantined and those put in
// maintenance through its service API.
func (nj *nodeJudge) withoutInactive(node string, pe expect.PortExpectation, pp *programmed.Port) expect.PortExpectation {
	d := pp.EBPF
	var keep []expect.ExpectedEndpoint
	var q, m []string
	for _, e := range pe.Internal {
		switch {
		case d.Quarantined[e.String()]:
			q = append(q, e.String())
		case d.Maintenance[e.String()]:
			m = append(m, e.String())
		default:
			keep = append(keep, e)
		}
	}
	port := servicePortLabel(nj.in.Namespace, nj.in.Name, pe)
	if len(q) > 0 {
		sort.Strings(q)
		nj.EmitNode(report.CodeDPEBPFQuarantined, node, report.Args{"datapath": d.Agent, report.ArgFamily: string(pe.Family), "port": port, "endpoints": listNames(q)}, nil, fieldItems("quarantined", q))
	}
	if len(m) > 0 {
		sort.Strings(m)
		nj.EmitNode(report.CodeDPEBPFMaintenance, node, report.Args{"datapath": d.Agent, report.ArgFamily: string(pe.Family), "port": port, "endpoints": listNames(m)}, nil, fieldItems("maintenance", m))
	}
	if len(q)+len(m) > 0 {
		pe.Internal = keep
		var ext []expect.ExpectedEndpoint
		for _, e := range pe.External {
			if !d.Quarantined[e.String()] && !d.Maintenance[e.String()] {
				ext = append(ext, e)
			}
		}
		pe.External = ext
	}
	return pe
}
