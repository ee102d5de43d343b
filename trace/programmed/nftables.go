package programmed

import (
	"fmt"
	"net/netip"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

func FromNFTables(source string, t collectorapi.NFTablesTableObservation) []Port {
	var out []Port
	clusterIPs := map[netip.Addr]bool{}
	for _, m := range t.ClusterIPs {
		clusterIPs[parseAddr(m.Key)] = true
	}
	for _, p := range t.Ports {
		pp := Port{
			Datapath: fmt.Sprintf("nftables (%s %s, via %s)", t.Family, t.Name, source),
			Family:   FamilyOf(t.Family),
			PortName: PortNameOf(p.ServicePortName), Protocol: strings.ToUpper(p.Protocol), Port: p.Port, NodePort: p.NodePort,
		}
		chains := map[string]*collectorapi.NFTablesChain{}
		for _, c := range append([]*collectorapi.NFTablesChain{p.Service, p.Local, p.External, p.Firewall}, append(p.Other, p.Endpoints...)...) {
			if c != nil && c.Exists {
				chains[c.Name] = c
			}
		}
		var internal *collectorapi.NFTablesChain
		for _, e := range p.ServiceIPs {
			if !e.Found {
				continue
			}
			pp.Evidence = append(pp.Evidence, fmt.Sprintf("map %s: %s : %s", e.Map, e.Key, e.Verdict))
			if c := chains[e.Target]; c != nil && (c == p.Service || c == p.Local) && internal == nil {
				internal = c
				pp.Captured = true
				pp.InternalLocal = c == p.Local
			}
		}
		for _, e := range p.ServiceNodePorts {
			if e.Found {
				pp.NodePortFound = true
				pp.Evidence = append(pp.Evidence, fmt.Sprintf("map %s: %s : %s", e.Map, e.Key, e.Verdict))
			}
		}
		for _, e := range p.NoEndpointServices {
			if !e.Found {
				continue
			}
			pp.Evidence = append(pp.Evidence, fmt.Sprintf("map %s: %s : %s", e.Map, e.Key, e.Verdict))
			if strings.Contains(e.Verdict, "reject") {
				pp.Rejected = true
			} else if strings.Contains(e.Verdict, "drop") {
				pp.DroppedNoLocal = true
			}
		}
		if internal != nil {
			pp.Endpoints = nftChainEndpoints(internal, chains, p, &pp)
		}
		if f := nftExternal(p, chains, internal); f != nil {
			pp.Frontends = []Frontend{*f}
		}
		pp.AddressEntries = nftAddressEntries(p, clusterIPs)
		out = append(out, pp)
	}
	return out
}

// nftExternal is the port's external entries as the one Frontend they
// share: syncProxyRules maps the NodePort (service-nodeports), every
// externalIP and every load-balancer IP (service-ips) to external-…,
// written when the Service has endpoints and is externally accessible
// (usesExternalTrafficChain). Its last rule, "goto service-…" (Cluster) or
// "goto local-…" (Local; absent with no local endpoint), takes what is
// left; the rules before it short-circuit Pod sources ("ip saddr …") and
// local sources ("fib saddr type local") to service-… whatever the policy,
// so they say nothing of it. nil when the reader did not look for the
// chain.
func nftExternal(p collectorapi.NFTablesPortObservation, chains map[string]*collectorapi.NFTablesChain, internal *collectorapi.NFTablesChain) *Frontend {
	ext := p.External
	if ext == nil {
		return nil
	}
	f := &Frontend{Kind: FrontendExternalChain, Name: "external chain " + ext.Name, Chain: ext.Name, Found: ext.Exists}
	for _, e := range append(append([]collectorapi.NFTablesElement(nil), p.ServiceIPs...), p.ServiceNodePorts...) {
		if e.Found && e.Target == ext.Name {
			f.Evidence = append(f.Evidence, fmt.Sprintf("map %s: %s : %s", e.Map, e.Key, e.Verdict))
		}
	}
	if !ext.Exists {
		return f
	}
	for _, r := range ext.Rules {
		f.Evidence = append(f.Evidence, "chain "+ext.Name+": "+r.Text)
		if r.SourceMatch != "" || strings.Contains(r.Text, "saddr") || r.Target == "" {
			continue
		}
		for _, c := range []struct {
			chain *collectorapi.NFTablesChain
			local bool
		}{{p.Service, false}, {p.Local, true}} {
			if c.chain != nil && c.chain.Exists && c.chain.Name == r.Target {
				f.PolicyLocal = &c.local
				f.Endpoints = nftChainEndpoints(c.chain, chains, p, &Port{})
				f.SameAsClusterIP = c.chain == internal
			}
		}
	}
	return f
}

// nftChainEndpoints is the endpoints an nftables service- or local- chain
// sends new connections to, with their shares; its rules and affinity sets
// are recorded into pp.
func nftChainEndpoints(c *collectorapi.NFTablesChain, chains map[string]*collectorapi.NFTablesChain, p collectorapi.NFTablesPortObservation, pp *Port) []Endpoint {
	var eps []Endpoint
	for _, r := range c.Rules {
		pp.Evidence = append(pp.Evidence, "chain "+c.Name+": "+r.Text)
		if r.AffinityMatch != "" {
			readable := false
			for _, a := range p.Affinity {
				if a.Name == r.AffinityMatch && a.TimeoutSeconds > 0 {
					pp.AddAffinityTimeout(int(a.TimeoutSeconds))
					readable = true
				}
			}
			if !readable && pp.AffinitySeconds == 0 {
				pp.AffinitySeconds = -1 // rules without a readable timeout
			}
		}
		if r.Numgen == nil {
			continue
		}
		pp.Unmatched = r.Numgen.UnmatchedShare
		for _, en := range r.Numgen.Entries {
			ep := en.Address
			if ep == "" {
				if c := chains[en.Target]; c != nil {
					for _, er := range c.Rules {
						pp.Evidence = append(pp.Evidence, "chain "+c.Name+": "+er.Text)
						if er.DNAT != "" {
							ep = er.DNAT
						}
						if er.Update != "" {
							for _, a := range p.Affinity {
								if a.Name == er.Update && a.TimeoutSeconds > 0 {
									pp.AddAffinityTimeout(int(a.TimeoutSeconds))
								}
							}
						}
					}
				}
			}
			if ep == "" {
				ep = en.Target
			}
			eps = append(eps, Endpoint{Endpoint: ep, Share: en.Share})
		}
	}
	if eps == nil {
		// A single endpoint: kube-proxy jumps straight to it.
		for _, r := range c.Rules {
			if r.DNAT != "" {
				eps = append(eps, Endpoint{Endpoint: r.DNAT, Share: 1})
			} else if c := chains[r.Target]; c != nil && r.Target != "" && strings.HasPrefix(r.Target, "endpoint-") {
				for _, er := range c.Rules {
					if er.DNAT != "" {
						eps = append(eps, Endpoint{Endpoint: er.DNAT, Share: 1})
					}
				}
			}
		}
	}
	return eps
}
