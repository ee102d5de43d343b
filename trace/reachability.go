package trace

import (
	"fmt"
	"math"
	"net/netip"
	"sort"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/expect"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// maxMatrixCells bounds the cells of one port's grid that the result spells
// out: 5,000 endpoints on the 100 nodes that host them would otherwise be
// half a million cells, tens of megabytes of JSON saying "pass".
var maxMatrixCells = 20000

// maxSparseRowCells bounds the odd cells a sparse row keeps; OddCells
// counts them all.
var maxSparseRowCells = 100

// endpointMatrix lays the node observations out as the node × endpoint grid.
// It reads the expectation and the programmed ports judgeDatapath computed
// for each node (nodeJudge.expectation, nodeJudge.programmed), so a cell
// agrees with the node's datapath checks; it adds nothing to the layers.
func endpointMatrix(nj *nodeJudge, views []plan.NodeView) *report.EndpointMatrix {
	in := nj.in
	svc := in.Service
	if svc == nil || expect.SkippedByKubeProxy(svc) || len(views) == 0 {
		return nil
	}
	views = append([]plan.NodeView(nil), views...)
	sort.SliceStable(views, func(i, j int) bool { return views[i].Node < views[j].Node })

	type portGrid struct {
		port    report.MatrixPort
		columns map[string]bool
		// sets are the expected sets whose endpoints are columns already.
		sets map[*endpointSet]bool
		rows []matrixRowCells
	}
	grids := map[string]*portGrid{}
	var order []string
	grid := func(label string) *portGrid {
		g := grids[label]
		if g == nil {
			g = &portGrid{port: report.MatrixPort{Port: label, Endpoints: []string{}, Nodes: []report.MatrixRow{}},
				columns: map[string]bool{}, sets: map[*endpointSet]bool{}}
			grids[label] = g
			order = append(order, label)
		}
		return g
	}
	// Every endpoint of the slices is a column, whichever node should
	// program it.
	zeroExpect := expect.ExpectForNode(svc, in.Slices, "", nil)
	for _, pe := range zeroExpect {
		if !nj.portSelected(pe.PortName, pe.Port) {
			continue
		}
		g := grid(servicePortLabel(in.Namespace, in.Name, pe))
		for _, e := range allEndpointsOf(pe) {
			g.columns[e] = true
		}
	}

	// A row holds what its cells are judged from: the node's expected set
	// (shared by nodes with the same expectation) and what it programmed.
	// The cells are made only once the columns are known, and only the
	// ones the grid keeps.
	for _, v := range views {
		ne := nj.expectation(v.Node)
		expect, choices := ne.expect, ne.choices
		var ports []programmed.Port
		readable, reason := v.Observation != nil, v.Failure
		if v.Observation == nil && reason == "" {
			reason = "no observation"
		}
		var probes map[string]string
		var np *nodeProgrammed
		if obs := v.Observation; obs != nil {
			np = nj.programmed(v.Node, obs)
			if programmed.IsEBPF(np.Mode) || np.Mode == "" {
				readable, reason = false, np.Owner+": programmed endpoints not compared per endpoint"
			} else {
				ports = np.Ports
			}
			probes = endpointProbes(obs)
		}
		for i, pe := range expect {
			if !nj.portSelected(pe.PortName, pe.Port) {
				continue
			}
			pp := findProgrammed(ports, pe)
			if choices != nil {
				pe = fit(choices, i, pp)
			}
			g := grid(servicePortLabel(in.Namespace, in.Name, pe))
			row := matrixRowCells{node: v.Node, readable: readable, reason: reason, probes: probes,
				expected: nj.endpointSetOf(pe.Internal)}
			if why := np.unreadFor(pe.Family); readable && why != "" {
				row.readable, row.reason = false, "the datapath could not be read: "+why
			}
			if why := np.pendingFor(pe.Family); readable && why != "" {
				row.behind, row.reason = true, "kube-proxy has not applied the Service's latest change yet: "+why
			}
			if np != nil {
				row.changed = nj.readChanges(np.Mode, pe.Family)
			}
			if !g.sets[row.expected] {
				g.sets[row.expected] = true
				for _, e := range row.expected.strings {
					g.columns[e] = true
				}
			}
			if pp != nil {
				row.datapath = pp.Datapath
				if pp.Captured {
					row.programmed = make(map[string]float64, len(pp.Endpoints))
					for _, e := range pp.Endpoints {
						row.programmed[e.Endpoint] += e.Share
						g.columns[e.Endpoint] = true
					}
				}
			}
			g.rows = append(g.rows, row)
		}
	}

	m := &report.EndpointMatrix{}
	for _, label := range order {
		g := grids[label]
		for e := range g.columns {
			g.port.Endpoints = append(g.port.Endpoints, e)
		}
		sort.Strings(g.port.Endpoints)
		g.port.Sparse = len(g.port.Endpoints)*len(g.rows) > maxMatrixCells
		// In a sparse port, rows with the same kept cells name the first
		// of them (SameAs) instead of repeating its cells.
		firstWith := map[string]string{}
		for i := range g.rows {
			r := &g.rows[i]
			row := r.judge(g.port.Endpoints, g.port.Sparse)
			r.programmed, r.probes = nil, nil // done with: rows are judged one at a time
			if g.port.Sparse && len(row.Cells) > 0 {
				key := cellsKey(row.Cells)
				if first, ok := firstWith[key]; ok {
					row.SameAs, row.Cells = first, nil
				} else {
					firstWith[key] = row.Node
				}
			}
			g.port.Nodes = append(g.port.Nodes, row)
		}
		if len(g.port.Nodes) > 0 {
			m.Ports = append(m.Ports, g.port)
		}
	}
	if len(m.Ports) == 0 {
		return nil
	}
	return m
}

// cellsKey identifies a row's cells, for SameAs.
func cellsKey(cells []report.MatrixCell) string {
	var b strings.Builder
	for _, c := range cells {
		fmt.Fprintf(&b, "%s|%s|%t|%t|%g|%g|%s|%s\x00", c.Endpoint, c.Status, c.Expected, c.Programmed, c.Share, c.FairShare, c.Probe, c.Problem)
	}
	return b.String()
}

// allEndpointsOf is every endpoint the expectation names, for any policy.
func allEndpointsOf(pe expect.PortExpectation) []string {
	var out []string
	for _, l := range [][]expect.ExpectedEndpoint{pe.Cluster, pe.Local, pe.Internal, pe.External} {
		for _, e := range l {
			out = append(out, e.String())
		}
	}
	return out
}

// probeLate is the outcome of a probe that timed out where a timeout is
// not evidence (lateCollector): its cell is unknown, as its RT026 is.
const probeLate = "timeout on a slow node"

// endpointProbes maps ip:port to the outcome of the node's direct probe.
func endpointProbes(obs *collectorapi.Observation) map[string]string {
	s := obs.Sections.Probe
	if s == nil || s.Data == nil {
		return nil
	}
	out := map[string]string{}
	for _, p := range s.Data.Probes {
		if p.Target != "endpoint" {
			continue
		}
		key := p.Address
		if ap, err := netip.ParseAddrPort(p.Address); err == nil {
			key = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
		}
		switch {
		case p.Outcome == "connected" || p.Outcome == "reply":
			out[key] = "ok"
		case p.Outcome == "skipped":
		case p.Outcome == "no-reply":
			out[key] = "no-reply"
		case p.ErrorClass == collectorapi.ErrClassTimeout && lateCollector(obs, p.Attempts, s.Error) != "":
			out[key] = probeLate
		case p.ErrorClass != "":
			out[key] = p.ErrorClass
		default:
			out[key] = "other"
		}
	}
	return out
}

type matrixRowCells struct {
	node, datapath, reason string
	readable               bool
	expected               *endpointSet
	programmed             map[string]float64
	probes                 map[string]string
	// behind: kube-proxy may not have applied the Service's latest change
	// (nodeProgrammed.pendingFor), so a missing or stale cell warns.
	behind bool
	// changed: endpoints that changed while the node was read; their
	// missing or stale cells warn.
	changed readChange
}

// judge turns one node's facts into its row: a cell fails when the node
// misses an endpoint it should program, keeps one it should not, or cannot
// connect to a programmed one; it warns when a share is off the fair one by
// more than judgeDatapath's tolerance. A sparse row keeps only the cells
// that neither pass nor are skipped, at most maxSparseRowCells of them, and
// none when the node could not be read.
func (r matrixRowCells) judge(columns []string, sparse bool) report.MatrixRow {
	row := report.MatrixRow{Node: r.node, Datapath: r.datapath, Status: report.StatusPass}
	if !r.readable {
		row.Status, row.Reason = report.StatusUnknown, r.reason
	}
	// As judgeDatapath does, a share is fair against the endpoints the node
	// did program: a missing endpoint is reported as missing, not as every
	// other endpoint's share being too large.
	fair := 0.0
	if n := len(r.programmed); n > 0 {
		fair = 1 / float64(n)
	}
	odd, mismatched := 0, false
	for _, col := range columns {
		c := report.MatrixCell{Endpoint: col, Expected: r.expected.has[col]}
		if r.probes != nil {
			c.Probe = r.probes[probeKey(col)]
		}
		share, programmed := r.programmed[col]
		c.Programmed, c.Share = programmed, share
		if c.Expected || c.Programmed {
			c.FairShare = fair
		}
		switch {
		case !r.readable:
			c.Status = report.StatusUnknown
		case c.Expected && !c.Programmed:
			c.Status, c.Problem, mismatched = r.mismatch(col), "missing", true
		case !c.Expected && c.Programmed:
			c.Status, c.Problem, mismatched = r.mismatch(col), "stale", true
		case !c.Expected:
			c.Status = report.StatusSkipped
		case c.Probe == probeLate:
			c.Status, c.Problem = report.StatusUnknown, probeLate
		case c.Probe != "" && c.Probe != "ok" && c.Probe != "no-reply":
			c.Status, c.Problem = report.StatusFail, c.Probe
		case math.Abs(c.Share-fair) > shareTolerance*fair:
			c.Status, c.Problem = report.StatusWarn, "unequal share"
		default:
			c.Status = report.StatusPass
		}
		if c.Status != report.StatusSkipped && statusRank[c.Status] > statusRank[row.Status] {
			row.Status = c.Status
		}
		if c.Expected {
			row.Expected++
			if c.Programmed {
				row.Programmed++
			}
		}
		if c.Probe != "" {
			if row.Probes == nil {
				row.Probes = map[string]int{}
			}
			row.Probes[c.Probe]++
		}
		if sparse {
			if !r.readable || c.Status == report.StatusPass || c.Status == report.StatusSkipped {
				continue
			}
			if odd++; odd > maxSparseRowCells {
				continue
			}
		}
		row.Cells = append(row.Cells, c)
	}
	if odd > maxSparseRowCells {
		row.OddCells = odd
	}
	switch {
	case mismatched && r.behind:
		row.Reason = r.reason
	case mismatched && row.Status == report.StatusWarn && r.changed.why != "":
		row.Reason = r.changed.why
	}
	return row
}

// mismatch is the status of the cell of endpoint col when the rules miss or
// keep it against the API: a warning while kube-proxy may still be applying
// the change or when the endpoint changed while the node was read, a
// failure otherwise.
func (r matrixRowCells) mismatch(col string) report.Status {
	if r.behind || r.changed.addresses[endpointHost(col)] {
		return report.StatusWarn
	}
	return report.StatusFail
}

// probeKey normalizes an endpoint string the way endpointProbes keys probes.
func probeKey(ep string) string {
	if ap, err := netip.ParseAddrPort(ep); err == nil {
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()).String()
	}
	return ep
}
