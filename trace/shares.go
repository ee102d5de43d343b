package trace

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// recordedShares is one node's port as comparePort saw it: the expectation
// it was judged against and what the datapath programmed.
type recordedShares struct {
	pe expect.PortExpectation
	pp *programmed.Port
}

// recordShares keeps what comparePort compared, so the share table shows
// exactly the split the datapath checks judged.
func (nj *nodeJudge) recordShares(node string, pe expect.PortExpectation, pp *programmed.Port) {
	if nj.shares == nil {
		nj.shares = map[string][]recordedShares{}
	}
	nj.shares[node] = append(nj.shares[node], recordedShares{pe: pe, pp: pp})
}

// shareTable lays out each inspected node's split of new connections per
// Service port: the programmed shares where the datapath was read, else
// kube-proxy's expectation for the node, with the reasons for that set.
func shareTable(nj *nodeJudge, views []plan.NodeView) *report.ShareTable {
	svc := nj.in.Service
	if svc == nil || expect.SkippedByKubeProxy(svc) || len(views) == 0 || nj.skipped(report.LayerDatapath) {
		return nil
	}
	views = append([]plan.NodeView(nil), views...)
	sort.SliceStable(views, func(i, j int) bool { return views[i].Node < views[j].Node })
	ports := map[string]*report.SharePort{}
	var order []string
	// In a large trace a node's split is folded into an earlier equal one
	// as it is added (foldShares' SameAs), so a thousand nodes' 5,000
	// shares each are never all held at once.
	fold := nj.sharesLists()
	first := map[string]map[string]string{}
	add := func(label string, ns report.NodeShares) {
		p := ports[label]
		if p == nil {
			p = &report.SharePort{Port: label, Nodes: []report.NodeShares{}}
			ports[label] = p
			order = append(order, label)
			first[label] = map[string]string{}
		}
		if fold {
			k := nodeSharesKey(&ns)
			if f, ok := first[label][k]; ok {
				ns.SameAs, ns.Endpoints = f, []report.EndpointShare{}
			} else {
				first[label][k] = ns.Node
			}
		}
		p.Nodes = append(p.Nodes, ns)
	}
	epNode := nj.endpointIndex().node
	for _, v := range views {
		if rec := nj.shares[v.Node]; len(rec) > 0 {
			for _, r := range rec {
				add(servicePortLabel(nj.in.Namespace, nj.in.Name, r.pe), programmedShares(v.Node, r, epNode))
			}
			continue
		}
		reason := v.Failure
		switch {
		case v.Observation == nil && reason == "":
			reason = "no observation"
		case v.Observation != nil:
			_, owner := programmed.Owner(v.Observation)
			reason = orNone(owner) + ": the datapath's split was not read"
		}
		for _, pe := range nj.expectation(v.Node).expect {
			if !nj.portSelected(pe.PortName, pe.Port) {
				continue
			}
			ns := report.NodeShares{Node: v.Node, Source: report.ShareExpected, Why: shareReasons(pe, nil), Reason: reason,
				Endpoints: equalShares(pe.Internal, epNode)}
			add(servicePortLabel(nj.in.Namespace, nj.in.Name, pe), ns)
		}
	}
	if len(order) == 0 {
		return nil
	}
	t := &report.ShareTable{}
	for _, label := range order {
		p := ports[label]
		foldShares(p)
		t.Ports = append(t.Ports, *p)
	}
	return t
}

// foldShares keeps a large port's table small: past maxMatrixCells
// endpoint shares, a node whose split equals an earlier node's names that
// node instead of repeating 5,000 endpoints.
func foldShares(p *report.SharePort) {
	total := 0
	for _, n := range p.Nodes {
		total += len(n.Endpoints)
	}
	if total <= maxMatrixCells {
		return
	}
	first := map[string]string{}
	for i := range p.Nodes {
		n := &p.Nodes[i]
		k := nodeSharesKey(n)
		if f, ok := first[k]; ok {
			n.SameAs, n.Endpoints = f, []report.EndpointShare{}
			continue
		}
		first[k] = n.Node
	}
}

func nodeSharesKey(n *report.NodeShares) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|%s|", n.Datapath, n.Source, n.Balancer, strings.Join(n.Why, ";"), n.Reason)
	for _, e := range n.Endpoints {
		w := -1
		if e.Weight != nil {
			w = *e.Weight
		}
		fmt.Fprintf(&b, "%s=%g/%d;", e.Endpoint, e.Share, w)
	}
	return b.String()
}

func programmedShares(node string, r recordedShares, epNode map[string]string) report.NodeShares {
	ns := report.NodeShares{Node: node, Source: report.ShareProgrammed, Why: shareReasons(r.pe, r.pp), Endpoints: []report.EndpointShare{}}
	pp := r.pp
	switch {
	case pp == nil:
		ns.Reason = "the datapath holds no rules for this port"
		return ns
	case pp.Rejected:
		ns.Datapath, ns.Reason = pp.Datapath, "the ClusterIP rejects new connections (no endpoints)"
		return ns
	case pp.DroppedNoLocal:
		ns.Datapath, ns.Reason = pp.Datapath, "the ClusterIP drops new connections (internalTrafficPolicy Local, no local endpoint)"
		return ns
	case !pp.Captured:
		ns.Datapath, ns.Reason = pp.Datapath, "the ClusterIP is not captured"
		return ns
	}
	ns.Datapath, ns.Balancer = pp.Datapath, balancerOf(pp, r.pe)
	weights := shareWeights(pp, r.pe)
	for _, e := range pp.Endpoints {
		es := report.EndpointShare{Endpoint: e.Endpoint, Share: e.Share, Node: epNode[hostOf(e.Endpoint)]}
		if w, ok := weights[e.Endpoint]; ok {
			es.Weight = &w
		}
		ns.Endpoints = append(ns.Endpoints, es)
	}
	sort.Slice(ns.Endpoints, func(i, j int) bool { return ns.Endpoints[i].Endpoint < ns.Endpoints[j].Endpoint })
	return ns
}

// shareReasons says why the node uses its endpoint set, in kube-proxy's
// terms (CategorizeEndpoints): the traffic policy, topology, the
// terminating fallback, and session affinity.
func shareReasons(pe expect.PortExpectation, pp *programmed.Port) []string {
	var why []string
	switch {
	case pe.InternalPolicyLocal:
		why = append(why, "internalTrafficPolicy Local: only this node's endpoints")
	case pe.TopologyMode == "PreferSameNode":
		why = append(why, "trafficDistribution PreferSameNode: this node's endpoints (node hints)")
	case pe.TopologyMode != "":
		z := pe.Zone
		if pe.ZoneAssumed {
			z += ", zone assumed"
		}
		why = append(why, fmt.Sprintf("topology hints (%s): endpoints hinted for zone %s", pe.TopologyMode, orNone(z)))
	default:
		why = append(why, "Cluster policy: every ready endpoint")
	}
	if pe.FallbackTerminating {
		why = append(why, "no ready endpoint: kube-proxy falls back to serving terminating ones")
	}
	if pp != nil && pp.AffinitySeconds != 0 {
		s := strconv.Itoa(pp.AffinitySeconds) + " s"
		if pp.AffinitySeconds < 0 {
			s = "unknown timeout"
		}
		why = append(why, "ClientIP session affinity ("+s+"): the shares apply to a client's first connection, later ones follow it")
	}
	return why
}

// balancerOf names how the datapath picks among the endpoints.
func balancerOf(pp *programmed.Port, pe expect.PortExpectation) string {
	switch d := pp.Datapath; {
	case strings.HasPrefix(d, "iptables"):
		return "random (statistic match, probability per rule)"
	case strings.HasPrefix(d, "nftables"):
		return "random (numgen random mod n)"
	case strings.HasPrefix(d, "ipvs"):
		if vs := ipvsClusterIP(pp, pe); vs != nil {
			return "IPVS scheduler " + vs.Scheduler + " (weights per real server)"
		}
		return "IPVS"
	case strings.HasPrefix(d, "cilium"):
		if pp.EBPF != nil && pp.EBPF.MaglevTableSize > 0 {
			return fmt.Sprintf("Maglev (%d table entries)", pp.EBPF.MaglevTableSize)
		}
		return strings.TrimSuffix(strings.TrimPrefix(d, "cilium ("), ")")
	case strings.HasPrefix(d, "calico"):
		return "random (Calico NAT backends)"
	}
	return ""
}

// shareWeights are IPVS real-server weights or Maglev table entries per endpoint.
func shareWeights(pp *programmed.Port, pe expect.PortExpectation) map[string]int {
	out := map[string]int{}
	if vs := ipvsClusterIP(pp, pe); vs != nil {
		for _, rs := range vs.RealServers {
			out[net.JoinHostPort(rs.Address, strconv.Itoa(int(rs.Port)))] = rs.Weight
		}
	}
	if pp != nil && pp.EBPF != nil {
		for ep, n := range pp.EBPF.MaglevEntries {
			out[ep] += n
		}
	}
	return out
}

func ipvsClusterIP(pp *programmed.Port, pe expect.PortExpectation) *collectorapi.IPVSVirtualServer {
	if pp == nil || pp.IPVS == nil {
		return nil
	}
	for i, vs := range pp.IPVS.VirtualServers {
		if vs.Frontend == "clusterIP" && int32(vs.Port) == pe.Port {
			return &pp.IPVS.VirtualServers[i]
		}
	}
	return nil
}

func equalShares(eps []expect.ExpectedEndpoint, epNode map[string]string) []report.EndpointShare {
	out := []report.EndpointShare{}
	for _, e := range eps {
		out = append(out, report.EndpointShare{Endpoint: e.String(), Share: 1 / float64(len(eps)), Node: orEndpointNode(e, epNode)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Endpoint < out[j].Endpoint })
	return out
}

func orEndpointNode(e expect.ExpectedEndpoint, epNode map[string]string) string {
	if e.Node != "" {
		return e.Node
	}
	return epNode[e.IP]
}

func hostOf(ep string) string {
	if h, _, err := net.SplitHostPort(ep); err == nil {
		return h
	}
	return ep
}
