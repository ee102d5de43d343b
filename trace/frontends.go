package trace

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// compareFrontends compares, one by one, the entries external traffic
// enters a port by (pp.Frontends: IPVS virtual servers, Cilium's and
// Felix's map entries, kube-proxy's external chain in iptables and nftables
// modes and there each externalIP's and load-balancer IP's entry) with what
// the API says they should hold, and returns how many problems it
// reported. Every entry must exist, carry the Service's
// externalTrafficPolicy where the datapath keeps it per entry, resolve
// every slot it selects, and select the endpoints the policy leaves
// (pe.External; with no local endpoint under Local on IPVS,
// expect.IPVSRules has already put the cluster endpoints there, as
// syncEndpoint does); an internal scope, where the datapath keeps one,
// selects internalTrafficPolicy's (pe.Internal). A difference a pending
// sync or an EndpointSlice change during the read explains is DP059, not a
// fault, whatever the datapath; it is still a difference and counts, as in
// comparePort: DP015 says the rules match the API, and they do not yet.
//
// The codes follow what the record says the entries are: an eBPF agent's
// map entries (pp.EBPF) are reported as DP043/DP044, kube-proxy's external
// chain as DP028/DP029, its virtual servers as DP038/DP063/DP064, its
// iptables and nftables entries for one externalIP or load-balancer IP
// (programmed.AddressFrontends: only whether they exist; their chain's own
// entry carries the endpoints) as DP072.
func (nj *nodeJudge) compareFrontends(node string, lag syncLag, pe expect.PortExpectation, pp *programmed.Port, with func(report.Args) report.Args) int {
	if pp == nil || !pe.ExternallyAccessible {
		return 0
	}
	frontends := append(append([]programmed.Frontend(nil), pp.Frontends...), programmed.AddressFrontends(pp, pe.ExternalIPs, pe.LoadBalancerIPs)...)
	if len(frontends) == 0 {
		return 0
	}
	ebpf := pp.EBPF
	args := func(f *programmed.Frontend, extra report.Args) report.Args {
		a := report.Args{"frontend": f.Name}
		if ebpf != nil {
			a["datapath"] = ebpf.Agent
		}
		if f.Chain != "" {
			a["chain"], a["policy"] = f.Chain, policyName(pe.ExternalPolicyLocal)
		}
		for k, v := range extra {
			a[k] = v
		}
		return with(a)
	}
	problems := 0
	var npFound, npMissing []string
	var npMissingEntries []*programmed.Frontend
	for i := range frontends {
		f := &frontends[i]
		if f.Chain != "" && len(pe.External) == 0 {
			// Local policy and no local endpoint: kube-proxy ends the
			// chain without a jump to the local endpoints and drops what
			// it does not short-circuit (DP013 says so).
			continue
		}
		if !f.Found {
			if f.Kind == programmed.FrontendNodePort {
				// A NodePort missing on every address is DP020
				// (pp.NodePortFound); on some of them, below.
				npMissing = append(npMissing, f.Address)
				npMissingEntries = append(npMissingEntries, f)
				continue
			}
			nj.frontendMissing(node, lag, ebpf, f, args)
			problems++
			continue
		}
		if f.Table != "" {
			continue // its external chain's own entry carries the endpoints
		}
		if f.Kind == programmed.FrontendNodePort {
			npFound = append(npFound, f.Address)
		}
		if nj.policyDiffers(node, lag, pe, f, args) {
			// The endpoints it selects follow from the policy it carries:
			// this one finding says both.
			problems++
			continue
		}
		if f.SameAsClusterIP {
			continue // comparePort judged the ClusterIP's endpoints
		}
		if f.Blackhole {
			continue // no endpoints: comparePort judged the ClusterIP's verdict
		}
		problems += nj.compareScope(node, lag, pe, ebpf, f, pe.External, "externalTrafficPolicy", args)
		switch {
		case f.Internal != nil:
			problems += nj.compareScope(node, lag, pe, ebpf, f.Internal, pe.Internal, "internalTrafficPolicy", args)
		case f.TwoScopes && ebpf != nil:
			detail := "is flagged as having two scopes, but its internal scope is not in the " + ebpf.Map
			nj.faultOrLag(node, lag, report.CodeDPEBPFExternal, args(f, report.Args{"detail": detail}), "its "+f.Name+" has no internal scope yet", f.Evidence)
			problems++
		}
	}
	if len(npMissing) > 0 && len(npFound) > 0 {
		// Some node addresses serve the NodePort and others do not: the
		// shared NodePort check (pp.NodePortFound) passed on the first.
		if ebpf != nil {
			// The agents program every node address (and their wildcard)
			// they serve NodePorts on: a missing one is a fault.
			for _, f := range npMissingEntries {
				nj.frontendMissing(node, lag, ebpf, f, args)
				problems++
			}
		} else {
			// kube-proxy's nodePortAddresses may leave addresses out on
			// purpose, so this stays a warning beside DP015.
			nj.faultOrLag(node, lag, report.CodeDPIPVSNodePortPartial, with(report.Args{"nodePort": strconv.Itoa(int(pe.NodePort)),
				"found": listNames(npFound), "missing": listNames(npMissing)}), "no NodePort virtual server on "+listNames(npMissing)+" yet", nil,
				fieldItems("missing", npMissing), fieldItems("found", npFound))
		}
	}
	return problems
}

// policyDiffers reports an entry that carries another externalTrafficPolicy
// than the Service's (as a fault, or DP059 when a pending sync explains
// it), and says whether it does. kube-proxy's external chain
// carries it in its last rule, the jump to the local or the cluster
// endpoint chain; with neither, no traffic the chain does not
// short-circuit reaches an endpoint.
func (nj *nodeJudge) policyDiffers(node string, lag syncLag, pe expect.PortExpectation, f *programmed.Frontend, args func(*programmed.Frontend, report.Args) report.Args) bool {
	if f.Chain != "" {
		got := "no endpoint chain"
		switch {
		case f.PolicyLocal == nil:
		case *f.PolicyLocal == pe.ExternalPolicyLocal:
			return false
		default:
			got = "the " + strings.ToLower(policyName(*f.PolicyLocal)) + " endpoints"
		}
		detail := "to " + got + ", but externalTrafficPolicy is " + policyName(pe.ExternalPolicyLocal)
		nj.faultOrLag(node, lag, report.CodeDPExternalWrong, args(f, report.Args{"detail": detail}), "its external chain still sends traffic "+detail, f.Evidence)
		return true
	}
	if f.PolicyLocal == nil || *f.PolicyLocal == pe.ExternalPolicyLocal {
		return false
	}
	detail := fmt.Sprintf("carries externalTrafficPolicy %s, the Service says %s", policyName(*f.PolicyLocal), policyName(pe.ExternalPolicyLocal))
	nj.faultOrLag(node, lag, report.CodeDPEBPFExternal, args(f, report.Args{"detail": detail}), "its "+f.Name+" still "+detail, f.Evidence)
	return true
}

// frontendMissing reports an external entry the datapath does not hold:
// a fault, or DP059 when a pending sync explains it.
func (nj *nodeJudge) frontendMissing(node string, lag syncLag, ebpf *programmed.EBPFDetail, f *programmed.Frontend, args func(*programmed.Frontend, report.Args) report.Args) {
	switch {
	case f.Chain != "":
		nj.faultOrLag(node, lag, report.CodeDPExternalMissing, args(f, nil), "no external chain for it yet", f.Evidence)
	case f.Table != "":
		nj.faultOrLag(node, lag, report.CodeDPExternalAddressMissing, args(f, report.Args{"table": f.Table}), "no entry for "+f.Name+" in "+f.Table+" yet", f.Evidence)
	case ebpf != nil:
		nj.faultOrLag(node, lag, report.CodeDPEBPFExternal, args(f, report.Args{"detail": "is not in the " + ebpf.Map + ": traffic to it reaches no backend"}),
			"no entry "+f.Name+" in its "+ebpf.Map+" yet", nil)
	default:
		nj.faultOrLag(node, lag, report.CodeDPIPVSExternalMissing, args(f, nil), "no virtual server "+f.Name+" yet", nil)
	}
}

// compareScope compares what one entry (or its internal scope) selects
// with the endpoints its traffic policy leaves, and returns 1 when they
// differ: slots that lead nowhere, or other endpoints, whether or not a
// pending sync or slice change explains them. When every difference is
// explained it says so (DP059) and names them all; otherwise the fault
// names them all.
func (nj *nodeJudge) compareScope(node string, lag syncLag, pe expect.PortExpectation, ebpf *programmed.EBPFDetail, f *programmed.Frontend, wantEps []expect.ExpectedEndpoint, policy string, args func(*programmed.Frontend, report.Args) report.Args) int {
	problems := 0
	if len(f.Broken) > 0 {
		nj.EmitNode(report.CodeDPEBPFBrokenSlot, node, args(f, report.Args{"detail": strings.Join(f.Broken, "; ")}), f.Evidence)
		problems = 1
	}
	want := map[string]bool{}
	for _, e := range wantEps {
		want[e.String()] = true
	}
	got := map[string]bool{}
	for _, e := range f.Endpoints {
		got[e.Endpoint] = true
	}
	missing, extra := setDiff(want, got)
	if len(missing)+len(extra) == 0 {
		return problems
	}
	excusedMissing, faultyMissing, _ := lag.changes.split(missing, lag.pending)
	excusedExtra, faultyExtra, _ := lag.changes.split(extra, lag.pending)
	if len(faultyMissing)+len(faultyExtra) == 0 && len(excusedMissing)+len(excusedExtra) > 0 {
		nj.EmitNode(report.CodeDPSyncPending, node, args(f, report.Args{"what": f.Name + " holds " + orNone(listNames(extra)) + " and lacks " + orNone(listNames(missing)),
			"why": lag.whole(), "programmer": lag.programmer}), f.Evidence,
			fieldItems("missing", missing), fieldItems("extra", extra), fieldItems("expected", expect.EndpointStrings(wantEps)))
		return 1
	}
	switch {
	case f.Chain != "":
		nj.EmitNode(report.CodeDPExternalWrong, node, args(f, report.Args{"detail": fmt.Sprintf("to endpoints that differ from the EndpointSlices' %s ones (missing: %s; stale: %s)",
			strings.ToLower(policyName(pe.ExternalPolicyLocal)), listOrNone(missing), listOrNone(extra))}), f.Evidence,
			fieldItems("missing", missing), fieldItems("stale", extra), fieldItems("expected", expect.EndpointStrings(wantEps)))
		return 1
	case ebpf != nil:
		nj.EmitNode(report.CodeDPEBPFExternal, node, args(f, report.Args{"detail": fmt.Sprintf("selects backends that differ from what the EndpointSlices and %s leave (missing: %s; stale: %s)",
			policy, listOrNone(missing), listOrNone(extra))}), f.Evidence,
			fieldItems("missing", missing), fieldItems("stale", extra), fieldItems("expected", expect.EndpointStrings(wantEps)))
		return 1
	}
	nj.EmitNode(report.CodeDPIPVSExternalRealServers, node, args(f, report.Args{"policy": policyName(pe.ExternalPolicyLocal),
		"missing": orNone(listNames(missing)), "extra": orNone(listNames(extra))}), f.Evidence,
		fieldItems("missing", missing), fieldItems("extra", extra), fieldItems("expected", expect.EndpointStrings(wantEps)))
	return 1
}

// policyName is a traffic policy as the Service spells it.
func policyName(local bool) string {
	if local {
		return "Local"
	}
	return "Cluster"
}
