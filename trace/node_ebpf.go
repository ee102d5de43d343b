package trace

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// judgeCilium compares Cilium's backends for each ClusterIP frontend with the
// expected endpoints, as kube-proxy's are compared. A frontend is one
// (address family, protocol, port) key: kube-dns's 53/UDP and 53/TCP, or a
// dual-stack Service's IPv4 and IPv6 ClusterIPs, are separate frontends with
// separate backends. Of the two lookup scopes Cilium keeps for Services with
// a Local traffic policy, the ClusterIP path uses the external one (scope
// 0) unless only the internal one exists. Maps the collector could not
// decode (another Cilium version's layout, no permission) leave the port
// unknown, not failed: kube-proxy's reasons do not apply here.
func (nj *nodeJudge) judgeCilium(node string, obs *collectorapi.Observation, expect []PortExpectation, choices *expectationChoices) {
	e := obs.Sections.EBPF
	if e == nil || e.Data == nil || e.Data.Cilium == nil {
		return
	}
	c := e.Data.Cilium
	if c.Error != "" {
		ck := nj.EmitNode(report.CodeDPEBPFUnreadable, node, report.Args{"datapath": "Cilium", "error": c.Error}, nil,
			fieldValue("layout", c.LayoutNote))
		ck.Status = report.StatusUnknown
	}
	for i, pe := range expect {
		if !nj.portSelected(pe.PortName, pe.Port) || !pe.HasAnyEndpoints || len(pe.Internal) == 0 {
			continue
		}
		fe := ciliumFrontend(c.Frontends, "clusterIP", pe.Family, pe.Protocol, uint16(pe.Port))
		if fe == nil {
			// The frontend was not read (its map could not be opened or
			// decoded): already said, and no verdict on it.
			continue
		}
		pp := &programmedPort{Datapath: "cilium", PortName: pe.PortName, Protocol: pe.Protocol, Port: pe.Port, Family: pe.Family}
		if fe.Found {
			pp.Captured = true
			pp.addAffinityTimeout(int(fe.AffinityTimeoutSecs))
			pp.Datapath = "cilium (" + ciliumLBAlgorithm(fe.LBAlgorithm) + ")"
			var active []collectorapi.CiliumBackend
			for _, b := range fe.Backends {
				pp.Evidence = append(pp.Evidence, fmt.Sprintf("%s:%d/%s scope %d slot %d -> backend %d %s:%d %s", fe.Address, fe.Port, fe.Protocol, fe.Scope, b.Slot, b.BackendID, b.Address, b.Port, b.State))
				if b.Found && (b.State == "" || b.State == "active") {
					active = append(active, b)
				}
			}
			for _, b := range active {
				pp.Endpoints = append(pp.Endpoints, programmedEndpoint{Endpoint: net.JoinHostPort(b.Address, strconv.Itoa(int(b.Port))), Share: 1 / float64(len(active))})
			}
		}
		if pe.NodePort != 0 {
			if np := ciliumFrontend(c.Frontends, "nodePort", pe.Family, pe.Protocol, uint16(pe.NodePort)); np != nil && np.Found {
				pp.NodePortFound = true
			} else if np == nil {
				// Not read: do not claim it is missing.
				pp.NodePortFound = true
			}
		}
		if choices != nil {
			pe = choices.fit(i, pp)
		}
		nj.comparePort(node, obs, collectorapi.ModeCilium, pe, pp)
	}
}

// ciliumFrontend finds the frontend of one kind, family, protocol and port,
// the external scope first; nil when the collector did not read it.
// Protocol-less keys (older Cilium, protocol ANY) match any protocol.
func ciliumFrontend(fes []collectorapi.CiliumFrontend, kind string, fam corev1.IPFamily, proto string, port uint16) *collectorapi.CiliumFrontend {
	var best *collectorapi.CiliumFrontend
	for i := range fes {
		fe := &fes[i]
		if fe.Frontend != kind || fe.Port != port || ipFamily(fe.Address) != fam {
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
