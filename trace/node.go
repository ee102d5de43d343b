package trace

import (
	"fmt"
	"hash/maphash"
	"sort"
	"strconv"
	"strings"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// judgeNodes compares each node's observation with what the Service and its
// EndpointSlices say should be there, and fills the dns, datapath, conntrack
// and route layers with checks and per-node results. Layers the API side
// already skipped (datapath of a headless Service, say) are left alone. The
// returned judge holds each node's expectation for the endpoint matrix.
func judgeNodes(in *input.Input, t *report.ServiceTrace, views []plan.NodeView, from *report.PolicyClient) *nodeJudge {
	sort.SliceStable(views, func(i, j int) bool { return views[i].Node < views[j].Node })
	fqdn := serviceFQDN(in.Name, in.Namespace, t.Metadata.ClusterDomain)
	nj := &nodeJudge{Emitter: report.NewEmitter(t, templateArgs(in, fqdn)), in: in, t: t, fqdn: fqdn, from: from,
		nodeCount: len(views), listSeed: maphash.MakeSeed()}
	nj.sockets = nj.buildSocketIndex(views)
	nj.modes = make(map[string]collectorapi.DatapathMode, len(views))
	for _, v := range views {
		if v.Observation != nil {
			nj.modes[v.Node], _ = programmed.Owner(v.Observation)
		}
	}
	if c := t.Metadata.Collector; c != nil {
		for _, v := range views {
			if o := v.Observation; o != nil && o.Sections.Sockets != nil && o.Sections.Sockets.Data != nil && o.Sections.Sockets.Data.HostPID {
				c.HostPID = true
			}
		}
	}
	for i := range views {
		nj.judge(&views[i])
	}
	nj.judgeDNS(views)
	nj.judgeClientDroppedByDesign()
	nj.explainCauses()
	return nj
}

type nodeJudge struct {
	*report.Emitter
	in   *input.Input
	t    *report.ServiceTrace
	fqdn string
	// shares are the ports comparePort judged, per node, for the share table.
	shares map[string][]recordedShares
	// from is the --from client, nil without one.
	from       *report.PolicyClient
	eps        *endpointIndex
	sockets    *socketIndex
	readOrders *expect.ReadOrders
	// expectations and programmedPorts hold each node's expectation and
	// programmed ports, computed once (expectation, programmed).
	expectations map[string]*nodeExpectation
	// modes are the datapath owning the Service on each node observed
	// (programmed.Owner): its programmer's rules decide the expectation.
	modes           map[string]collectorapi.DatapathMode
	programmedPorts map[string]*nodeProgrammed
	// changedAt is when the Service last changed (serviceChangedAt).
	changedAt     time.Time
	changedAtDone bool
	// nodeIndependent: the expectation depends on a node's zone only
	// (expect.NodeIndependent); byZone then holds one per zone.
	nodeIndependent bool
	byZone          map[string]*nodeExpectation
	// endpointSets are the sets derived from a shared expectation's
	// endpoint lists, by the list (endpointSetOf).
	endpointSets map[endpointListKey]*endpointSet
	// lists are the distinct endpoint lists of the expectations, by hash
	// (internLists).
	lists    map[uint64][][]expect.ExpectedEndpoint
	listSeed maphash.Seed
	// probeSets are the probe scopes' expectation-derived sets, per
	// expectation (probeScope).
	probeSets map[string]*probeScope
	// nodeCount is the number of nodes judged.
	nodeCount int
}

func (nj *nodeJudge) skipped(layer report.LayerName) bool {
	return nj.t.Layer(layer).Status == report.StatusSkipped
}

// nodeResult records a node's status in a layer from the checks emitted for it.
func (nj *nodeJudge) nodeResult(layer report.LayerName, node string, forced report.Status, reason string) {
	l := nj.t.Layer(layer)
	if l.Status == report.StatusSkipped {
		return
	}
	st := forced
	if st == "" {
		st = report.StatusPass
		for _, c := range l.Checks {
			if c.Node == node && statusRank[c.Status] > statusRank[st] {
				st = c.Status
				reason = c.Title
			}
		}
		if st == report.StatusPass {
			reason = ""
		}
	}
	l.Nodes = append(l.Nodes, report.NodeResult{Node: node, Status: st, Reason: reason})
}

func (nj *nodeJudge) judge(v *plan.NodeView) {
	if v.Observation == nil {
		reason := v.Failure
		if reason == "" {
			reason = "no observation"
		}
		if !nj.skipped(report.LayerDatapath) {
			nj.EmitNode(report.CodeNodeCollectorFailed, v.Node, report.Args{"reason": reason}, nil)
		} else if !nj.skipped(report.LayerRoute) {
			c := nj.NewNodeCheck(report.CodeNodeCollectorFailed, v.Node, report.Args{"reason": reason}, nil)
			nj.t.Layer(report.LayerRoute).Add(c)
		}
		for _, l := range report.NodeLayers {
			nj.nodeResult(l, v.Node, report.StatusUnknown, reason)
		}
		return
	}
	obs := v.Observation
	if !nj.skipped(report.LayerDatapath) {
		nj.judgeDatapath(v.Node, obs)
		nj.judgeMasquerade(v.Node, obs)
	}
	if !nj.skipped(report.LayerConntrack) {
		nj.judgeConntrack(v.Node, obs)
	}
	if !nj.skipped(report.LayerRoute) || !nj.skipped(report.LayerEndpoints) {
		nj.judgeRouteAndProbes(v.Node, obs)
	}
	if !nj.skipped(report.LayerEndpoints) {
		nj.judgeSockets(v.Node)
	}
	if s := obs.Sections.Probe; s != nil && s.Data != nil && s.Data.Client != nil {
		nj.judgeClient(v, s.Data.Client)
	}
	for _, l := range report.NodeLayers {
		nj.nodeResult(l, v.Node, "", "")
	}
}

// endpointIndex maps endpoint IPs to their node, readiness and Pod. It does
// not depend on the node being judged, so it is built once per trace.
type endpointIndex struct {
	node  map[string]string
	ready map[string]bool
	pod   map[string]string
}

func (nj *nodeJudge) endpointIndex() *endpointIndex {
	if nj.eps != nil {
		return nj.eps
	}
	idx := &endpointIndex{node: map[string]string{}, ready: map[string]bool{}, pod: map[string]string{}}
	for _, sl := range nj.in.Slices {
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			ip := e.Addresses[0]
			if e.NodeName != nil {
				idx.node[ip] = *e.NodeName
			}
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				idx.ready[ip] = true
			}
			if e.TargetRef != nil {
				idx.pod[ip] = e.TargetRef.Name
			}
		}
	}
	nj.eps = idx
	return idx
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
		if m[x] < 0 {
			return false
		}
	}
	return true
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "nothing"
	}
	return strings.Join(l, ", ")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boolKeys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func capLines(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	out := append([]string{}, l[:n]...)
	return append(out, fmt.Sprintf("… %d more", len(l)-n))
}

func upDown(b bool) string {
	if b {
		return "up"
	}
	return "down"
}

func u64(v uint64) string { return strconv.FormatUint(v, 10) }
func i64(v int64) string  { return strconv.FormatInt(v, 10) }

func orTCP(p string) string {
	if p == "" {
		return "TCP"
	}
	return p
}
