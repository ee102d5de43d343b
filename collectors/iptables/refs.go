package iptables

import (
	"context"
	"fmt"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/kubeproxy"
)

// Establishing a Service's entry rules without reading KUBE-SERVICES.
//
// nat KUBE-SERVICES holds one rule per Service port and frontend, so reading
// it costs what the node's size costs (7.7 MB of netlink messages at 10k
// Services), and netlink cannot filter rules by content. nf_tables keeps a
// reference count per chain instead (NFTA_CHAIN_USE, in every chain reply):
// one per rule of the chain plus one per jump or goto to it. The reader
// dumps the port's own chains (KUBE-SVC/SVL/EXT/FW, the KUBE-SEP chains) and
// counts their rules and their jumps; what the count has beyond that are
// jumps from chains it did not read. kube-proxy v1.37.2
// (pkg/proxy/iptables/proxier.go) writes jumps into those chains only from
// KUBE-SERVICES (cluster IP to the internal policy chain, KUBE-SVC or
// KUBE-SVL; external and load-balancer IPs to KUBE-EXT or KUBE-FW), from
// KUBE-NODEPORTS (node ports to KUBE-EXT), and between the port's own
// chains. When the unread jumps per chain are exactly what kube-proxy writes
// for this Service, the entry rules are established by their counts;
// anything else (a count that differs, a chain missing, a cluster IP both
// jumped to and rejected, a chain listed with iptables, a ruleset that
// changed while it was read) makes the reader read KUBE-SERVICES after all.
//
// What the counts prove is the number of jumps into each chain, not the
// match of the rules that jump (the destination and port): kube-proxy writes
// both in one restore, and the judge uses which chain the cluster IP and the
// node port lead to, not the match.

// referenceKinds are a port's hash-named chains in the order References
// lists them.
func portChains(p portPlan) []string {
	return []string{p.chains.Service, p.chains.Local, p.chains.External, p.chains.Firewall}
}

// readByReferences fills bo's ports from the port's own chains and the
// reference counts, leaving nat KUBE-SERVICES unread. It returns "" when the
// counts established every port's entry rules, else why they did not; bo is
// then to be assembled again with KUBE-SERVICES read. gen0 is the ruleset
// generation taken before the store's first listing.
func readByReferences(ctx context.Context, st *store, nl *nfnlConn, q Query, family string, gen0 uint32, bo *collectorapi.IPTablesBackendObservation) string {
	assemble(ctx, st, q, family, bo, false)
	if err := st.firstErr(); err != nil {
		return err.Error()
	}
	svcs, err := nl.chainInfo(family, "nat", chainServices)
	if err != nil {
		return "nat KUBE-SERVICES: " + err.Error()
	}
	if !svcs.exists {
		return "nat KUBE-SERVICES does not exist"
	}
	plans := plan(q, family)
	for i, p := range plans {
		po := &bo.Ports[i]
		refs, why := chainReferences(st, nl, family, p)
		if why != "" {
			return why
		}
		in := refInput{spn: p.spn, family: family, svc: q.Service, nodePort: p.port.NodePort != 0, filter: po.Filter, refs: refs}
		entries, needNodePorts, why := entryReferences(in)
		if needNodePorts {
			k := chainKey{"nat", chainNodePorts}
			st.ensure(ctx, k)
			if l := st.get(k); l.err != nil || !l.counted {
				return "nat KUBE-NODEPORTS could not be counted over netlink"
			}
			if refs, why = chainReferences(st, nl, family, p); why != "" {
				return why
			}
			rules, others := nodePortRules(st, p.spn, map[string]bool{p.chains.Service: true, p.chains.Local: true, p.chains.External: true, p.chains.Firewall: true})
			if len(others) > 0 {
				return fmt.Sprintf("nat KUBE-NODEPORTS has rules for %s jumping to %s, not to its own chains", p.spn, strings.Join(others, ", "))
			}
			po.NodePorts = rules
			in.refs, in.nodePortsRead = refs, true
			entries, _, why = entryReferences(in)
		}
		if why != "" {
			return why
		}
		po.References, po.EntryReferences = refs, entries
	}
	gen1, err := nl.generation()
	if err != nil {
		return "ruleset generation: " + err.Error()
	}
	if gen1 != gen0 {
		return fmt.Sprintf("the ruleset changed while it was read (generation %d, then %d)", gen0, gen1)
	}
	bo.Generation = gen0
	return ""
}

// chainReferences counts, for each of the port's hash-named chains, its
// rules, the jumps to it from the chains in the store and the kernel's
// reference count. Every nat chain in the store must have been counted over
// netlink, or jumps from it would go unseen.
func chainReferences(st *store, nl *nfnlConn, family string, p portPlan) ([]collectorapi.IPTablesChainReferences, string) {
	st.mu.Lock()
	var read []*chainListing
	for k, l := range st.listings {
		if k.table != "nat" {
			continue
		}
		if !l.counted && l.exists {
			st.mu.Unlock()
			return nil, fmt.Sprintf("nat %s was listed with iptables, so its jumps were not counted", k.chain)
		}
		read = append(read, l)
	}
	st.mu.Unlock()
	var out []collectorapi.IPTablesChainReferences
	for _, c := range portChains(p) {
		ci, err := nl.chainInfo(family, "nat", c)
		if err != nil {
			return nil, c + ": " + err.Error()
		}
		l := st.get(chainKey{"nat", c})
		if ci.exists != l.exists {
			return nil, c + " appeared or vanished while it was read"
		}
		r := collectorapi.IPTablesChainReferences{Chain: c, Exists: ci.exists, Use: ci.use, Rules: l.count}
		for _, o := range read {
			r.FromRead += o.jumps[c]
		}
		r.Unread = int(ci.use) - r.Rules - r.FromRead
		if r.Unread < 0 {
			return nil, fmt.Sprintf("%s: reference count %d is below its %d rules and %d jumps read", c, ci.use, r.Rules, r.FromRead)
		}
		out = append(out, r)
	}
	return out, ""
}

// refInput is what entryReferences decides from.
type refInput struct {
	spn    string
	family string
	svc    collectorapi.ServiceSpec
	// nodePort: the port has a node port.
	nodePort bool
	// filter are the port's filter-table rules (read whole).
	filter []collectorapi.IPTablesRule
	// refs are the counts of the port's chains in portChains order.
	refs []collectorapi.IPTablesChainReferences
	// nodePortsRead: nat KUBE-NODEPORTS was read, so its jumps are in
	// FromRead and not in Unread.
	nodePortsRead bool
}

// entryReferences compares the unread jumps into the port's chains with
// what kube-proxy v1.37.2 writes for the Service (syncProxyRules: "Capture
// the clusterIP", "Capture externalIPs", "Capture load-balancer ingress",
// "Capture nodeports") and names the entry rules they stand for. It asks for
// KUBE-NODEPORTS (needNodePorts) when node-port jumps cannot be told from
// external-IP or load-balancer jumps by their count; why is non-empty when
// the counts are not what kube-proxy writes.
func entryReferences(in refInput) (entries []collectorapi.IPTablesEntryReference, needNodePorts bool, why string) {
	svc, svl, ext, fw := in.refs[0], in.refs[1], in.refs[2], in.refs[3]
	ofFamily := func(ips []string) int {
		n := 0
		for _, ip := range ips {
			if familyOf(kubeproxy.NormalizeIP(ip)) == in.family {
				n++
			}
		}
		return n
	}
	nCIP, nExt, nLB := ofFamily(in.svc.ClusterIPs), ofFamily(in.svc.ExternalIPs), ofFamily(in.svc.LoadBalancerIPs)
	var rejected, dropped bool // kube-proxy's filter rule for the cluster IP instead of the jump
	for _, r := range in.filter {
		switch {
		case r.Chain == chainServices && r.Comment == in.spn+" has no endpoints" && r.Jump == "REJECT":
			rejected = true
		case r.Chain == chainServices && r.Comment == in.spn+" has no local endpoints" && r.Jump == "DROP":
			dropped = true
		}
	}

	// The cluster IP: one jump to the internal policy chain, or the filter
	// rule rejecting (no endpoints) or dropping (internalTrafficPolicy Local,
	// none on this node) it.
	internal := svc.Unread + svl.Unread
	switch {
	case nCIP == 0 && internal == 0:
	case nCIP == 0:
		return nil, false, fmt.Sprintf("%d jump(s) to %s/%s from chains not read, though the Service has no %s cluster IP", internal, svc.Chain, svl.Chain, in.family)
	case internal == 1 && !rejected && !dropped:
		target := svc.Chain
		if svl.Unread == 1 {
			target = svl.Chain
		}
		entries = append(entries, collectorapi.IPTablesEntryReference{Kind: "clusterIP", From: chainServices, Target: target, Count: 1})
	case internal == 0 && (rejected || dropped):
	default:
		return nil, false, fmt.Sprintf("%s and %s have %d jump(s) from chains not read (filter rule for the cluster IP: %v); kube-proxy writes one jump, or the filter rule instead",
			svc.Chain, svl.Chain, internal, rejected || dropped)
	}

	// External IPs, load-balancer IPs and the node port all jump to
	// KUBE-EXT, load-balancer IPs to KUBE-FW instead when it exists
	// (loadBalancerSourceRanges), and KUBE-FW to KUBE-EXT.
	accessible := nExt > 0 || nLB > 0 || in.nodePort
	if !ext.Exists {
		switch {
		case fw.Exists:
			return nil, false, fmt.Sprintf("%s exists without %s", fw.Chain, ext.Chain)
		case accessible && !rejected:
			return nil, false, fmt.Sprintf("%s does not exist, though the port is reachable from outside and its cluster IP is not rejected for lack of endpoints", ext.Chain)
		}
		return entries, false, ""
	}
	if !accessible {
		if ext.Unread != 0 || fw.Unread != 0 {
			return nil, false, fmt.Sprintf("%s/%s have %d jump(s) from chains not read, though the port has no external IP, load-balancer IP or node port", ext.Chain, fw.Chain, ext.Unread+fw.Unread)
		}
		return entries, false, ""
	}
	lbTarget, direct := ext.Chain, nExt+nLB
	if fw.Exists {
		lbTarget, direct = fw.Chain, nExt
		if fw.Unread != nLB {
			return nil, false, fmt.Sprintf("%s has %d jump(s) from chains not read; kube-proxy writes %d (one per load-balancer IP)", fw.Chain, fw.Unread, nLB)
		}
	} else if fw.Unread != 0 {
		return nil, false, fmt.Sprintf("%s does not exist but is counted", fw.Chain)
	}
	nodePorts := 0
	switch {
	case !in.nodePort || in.nodePortsRead:
	case direct == 0 && ext.Unread == 1:
		nodePorts = 1
	default:
		// Which of the jumps come from KUBE-NODEPORTS (one per node port,
		// two with kube-proxy's localhost node-port rule) only that chain
		// says.
		return nil, true, ""
	}
	if ext.Unread != direct+nodePorts {
		return nil, false, fmt.Sprintf("%s has %d jump(s) from chains not read; kube-proxy writes %d (%d external IP, %d load-balancer IP, %d node port)",
			ext.Chain, ext.Unread, direct+nodePorts, nExt, direct-nExt, nodePorts)
	}
	if nExt > 0 {
		entries = append(entries, collectorapi.IPTablesEntryReference{Kind: "externalIP", From: chainServices, Target: ext.Chain, Count: nExt})
	}
	if nLB > 0 {
		entries = append(entries, collectorapi.IPTablesEntryReference{Kind: "loadBalancerIP", From: chainServices, Target: lbTarget, Count: nLB})
	}
	if nodePorts > 0 {
		entries = append(entries, collectorapi.IPTablesEntryReference{Kind: "nodePort", From: chainNodePorts, Target: ext.Chain, Count: nodePorts})
	}
	return entries, false, ""
}
