package programmed

import (
	"fmt"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

type iptBackendPorts struct {
	obs   collectorapi.IPTablesBackendObservation
	ports []Port
}

func FromIPTables(b collectorapi.IPTablesBackendObservation) []Port {
	var out []Port
	for _, p := range b.Ports {
		pp := Port{
			Datapath: fmt.Sprintf("iptables (%s, %s)", b.Backend, b.Family),
			Family:   FamilyOf(b.Family),
			PortName: PortNameOf(p.ServicePortName), Protocol: strings.ToUpper(p.Protocol), Port: p.Port, NodePort: p.NodePort,
			NodePortFound: len(p.NodePorts) > 0,
			Evidence:      iptReaderLine(b),
		}
		var internal *collectorapi.IPTablesChain
		for _, e := range p.Entry {
			pp.Evidence = append(pp.Evidence, e.Raw)
			if e.Kind != "clusterIP" {
				continue
			}
			target := e.Target()
			for _, c := range []*collectorapi.IPTablesChain{p.Service, p.Local} {
				if c != nil && c.Name == target && c.Exists {
					internal = c
					pp.Captured = true
					pp.InternalLocal = c == p.Local
				}
			}
		}
		for _, e := range p.EntryReferences {
			pp.Evidence = append(pp.Evidence, referenceEvidence(e, p.References))
			switch e.Kind {
			case "clusterIP":
				for _, c := range []*collectorapi.IPTablesChain{p.Service, p.Local} {
					if c != nil && c.Name == e.Target && c.Exists {
						internal = c
						pp.Captured = true
						pp.InternalLocal = c == p.Local
					}
				}
			case "nodePort":
				pp.NodePortFound = true
			}
		}
		for _, r := range p.NodePorts {
			pp.Evidence = append(pp.Evidence, r.Raw)
		}
		for _, r := range p.Filter {
			pp.Evidence = append(pp.Evidence, r.Raw)
			switch {
			case strings.Contains(r.Comment, "has no endpoints") && r.Jump == "REJECT":
				pp.Rejected = true
			case strings.Contains(r.Comment, "has no local endpoints") && r.Jump == "DROP" && !r.NotDstType && r.DstType == "":
				pp.DroppedNoLocal = true
			}
		}
		if internal != nil {
			for _, r := range internal.Rules {
				pp.Evidence = append(pp.Evidence, r.Raw)
			}
			dnat := map[string]string{}
			for _, ec := range p.Endpoints {
				for _, r := range ec.Rules {
					pp.Evidence = append(pp.Evidence, r.Raw)
				}
				if ec.DNAT != "" {
					dnat[ec.Name] = ec.DNAT
				}
			}
			pp.Endpoints = iptSelection(internal, dnat)
			pp.Unmatched = internal.UnmatchedShare
			for _, a := range internal.Affinity {
				pp.AddAffinityTimeout(a.Seconds)
			}
		}
		if pp.Rejected && pp.Captured && len(pp.Endpoints) > 0 {
			pp.RejectShadowed = true
			// kube-router's network policy controller saves the filter
			// table, rebuilds its own chains and restores the whole table
			// without --noflush (fullPolicySync in
			// pkg/controllers/netpol/network_policy_controller.go), putting
			// back kube-proxy rules removed in between.
			if b.PolicyEnforcer == "kube-router" {
				pp.FilterRestorer = b.PolicyEnforcer
			}
		}
		if f := iptExternal(p, internal); f != nil {
			pp.Frontends = []Frontend{*f}
		}
		pp.AddressEntries, pp.AddressEntriesRead = iptAddressEntries(b, p)
		out = append(out, pp)
	}
	return out
}

// iptExternal is the port's external entries as the one Frontend they
// share: syncProxyRules sends the NodePort (KUBE-NODEPORTS), every
// externalIP and every load-balancer IP (KUBE-SERVICES, the latter through
// KUBE-FW-… when source ranges are set) into KUBE-EXT-…, written when the
// Service has endpoints and is externally accessible
// (usesExternalTrafficChain). Its last, unconditional rule sends what is
// left to KUBE-SVC-… (Cluster) or KUBE-SVL-… (Local; absent with no local
// endpoint); the rules before it short-circuit Pod and node-local sources
// to KUBE-SVC-… whatever the policy, so they say nothing of it. nil when
// the reader did not look for the chain.
func iptExternal(p collectorapi.IPTablesPortObservation, internal *collectorapi.IPTablesChain) *Frontend {
	ext := p.External
	if ext == nil {
		return nil
	}
	f := &Frontend{Kind: FrontendExternalChain, Name: "external chain " + ext.Name, Chain: ext.Name, Found: ext.Exists}
	for _, e := range p.Entry {
		if e.Kind == FrontendExternalIP || e.Kind == FrontendLoadBalancerIP {
			f.Evidence = append(f.Evidence, e.Raw)
		}
	}
	for _, r := range p.NodePorts {
		f.Evidence = append(f.Evidence, r.Raw)
	}
	if !ext.Exists {
		return f
	}
	dnat := map[string]string{}
	for _, ec := range p.Endpoints {
		if ec.DNAT != "" {
			dnat[ec.Name] = ec.DNAT
		}
	}
	for _, r := range ext.Rules {
		f.Evidence = append(f.Evidence, r.Raw)
		if r.Source != "" || r.SrcType != "" {
			continue
		}
		for _, c := range []struct {
			chain *collectorapi.IPTablesChain
			local bool
		}{{p.Service, false}, {p.Local, true}} {
			if c.chain != nil && c.chain.Exists && c.chain.Name == r.Target() {
				f.PolicyLocal = &c.local
				f.Endpoints = iptSelection(c.chain, dnat)
				f.SameAsClusterIP = c.chain == internal
			}
		}
	}
	return f
}

// iptSelection is the endpoints a KUBE-SVC/SVL chain chooses from, with their
// shares; dnat maps KUBE-SEP chains to their DNAT destinations.
func iptSelection(c *collectorapi.IPTablesChain, dnat map[string]string) []Endpoint {
	var out []Endpoint
	for _, s := range c.Selection {
		ep := dnat[s.Target]
		if ep == "" {
			ep = s.Endpoint
		}
		out = append(out, Endpoint{Endpoint: ep, Share: s.Share})
	}
	return out
}

// referenceEvidence tells an entry rule established by reference counts,
// with the counts of its target chain.
func referenceEvidence(e collectorapi.IPTablesEntryReference, refs []collectorapi.IPTablesChainReferences) string {
	s := fmt.Sprintf("%s -> %s (%s): %d jump(s), not read: established by the kernel's reference count", e.From, e.Target, e.Kind, e.Count)
	for _, r := range refs {
		if r.Chain == e.Target {
			s += fmt.Sprintf(" (NFTA_CHAIN_USE %d = %d rule(s) + %d jump(s) from the chains read + %d from chains not read)", r.Use, r.Rules, r.FromRead, r.Unread)
		}
	}
	return s
}

// iptReadEvidence says how an iptables backend was read: the reader, how
// its entry rules were established, and the commands it ran (the kernel
// readers run none).
func iptReadEvidence(b collectorapi.IPTablesBackendObservation) []string {
	return append(iptReaderLine(b), b.Commands...)
}

// iptReaderLine is the reader and entry proof of a backend, nil for an
// observation that does not record them.
func iptReaderLine(b collectorapi.IPTablesBackendObservation) []string {
	if b.Reader == "" && b.EntryProof == "" {
		return nil
	}
	s := fmt.Sprintf("read by the %s reader (%s)", orUnknown(b.Reader), orUnknown(b.Method))
	switch b.EntryProof {
	case collectorapi.IPTablesEntryProofReferences:
		s += fmt.Sprintf("; entry rules established by reference counts in ruleset generation %d", b.Generation)
	case collectorapi.IPTablesEntryProofRules:
		s += "; entry rules read from nat KUBE-SERVICES"
		if b.EntryProofFallback != "" {
			s += " because the reference counts were not conclusive: " + b.EntryProofFallback
		}
	}
	return []string{s}
}
