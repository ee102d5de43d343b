package render

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Grid bounds: rows identical to at least foldRows others fold into one;
// at most maxOutlierRows other rows are listed; the node column is at most
// maxNodeColumn wide.
const (
	foldRows       = 3
	maxOutlierRows = 10
	maxNodeColumn  = 24
)

// gridRow is one printed row: one node or a fold of identical ones.
type gridRow struct {
	nodes  []string
	status report.Status
	cells  []string // plain text, mark first
	cellSt []report.Status
	note   string
}

// writeGrid draws, per Service port, the node × endpoint grid: rows nodes,
// columns endpoints, each cell the programmed share of new connections and
// the node's direct probe. Identical rows fold into one, the others are
// listed as outliers; with more endpoints than fit the width, the columns
// become per-node counts and each row names its odd endpoints.
func writeGrid(w io.Writer, s *textStyle, m *report.EndpointMatrix) {
	for pi, p := range m.Ports {
		if pi > 0 {
			fmt.Fprintln(w)
		}
		p = withSharedCells(p)
		title := s.bold.Render("Nodes × endpoints")
		if s.opts.ASCII {
			title = s.bold.Render("Nodes x endpoints")
		}
		fmt.Fprintf(w, "%s %s  %s\n", title, esc(p.Port), s.faint.Render("share of new connections, probe"))
		rows := gridRows(s, &p)
		nodeW := len("node")
		for _, r := range rows {
			nodeW = max(nodeW, width(r.label()))
		}
		nodeW = min(nodeW, maxNodeColumn)
		// A sparse port's rows list only their odd cells: always counted.
		colW := make([]int, len(p.Endpoints))
		fits := !p.Sparse
		total := 2 + nodeW
		for j, e := range p.Endpoints {
			if !fits {
				break
			}
			colW[j] = width(esc(e))
			for _, r := range rows {
				if j < len(r.cells) {
					colW[j] = max(colW[j], width(r.cells[j]))
				}
			}
			total += 2 + colW[j]
		}
		if total > lineWidth {
			fits = false
		}
		if fits {
			writeGridColumns(w, s, &p, rows, nodeW, colW)
		} else {
			writeGridSummary(w, s, &p, rows, nodeW)
		}
	}
}

func (r gridRow) label() string {
	if len(r.nodes) == 1 {
		return esc(r.nodes[0])
	}
	return fmt.Sprintf("%d nodes", len(r.nodes))
}

// gridRows builds the printed rows: folds of identical rows first (the
// largest first), then the outliers, worst first.
func gridRows(s *textStyle, p *report.MatrixPort) []gridRow {
	type group struct {
		row gridRow
		key string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, n := range p.Nodes {
		r := gridRow{nodes: []string{n.Node}, status: n.Status}
		for _, c := range n.Cells {
			r.cells = append(r.cells, cellText(s, c))
			r.cellSt = append(r.cellSt, c.Status)
		}
		if n.Status == report.StatusUnknown && n.Reason != "" {
			r.note = n.Reason
		}
		// The counts matter when a sparse row lists only its odd cells.
		key := fmt.Sprintf("%s\x00%d/%d %v\x00%s\x00%s", n.Status, n.Programmed, n.Expected, n.Probes, strings.Join(r.cells, "\x00"), r.note)
		if g := byKey[key]; g != nil {
			g.row.nodes = append(g.row.nodes, n.Node)
			continue
		}
		g := &group{row: r, key: key}
		byKey[key] = g
		groups = append(groups, g)
	}
	var folded, single []gridRow
	for _, g := range groups {
		if len(g.row.nodes) >= foldRows {
			folded = append(folded, g.row)
			continue
		}
		for _, n := range g.row.nodes {
			r := g.row
			r.nodes = []string{n}
			single = append(single, r)
		}
	}
	sort.SliceStable(folded, func(i, j int) bool { return len(folded[i].nodes) > len(folded[j].nodes) })
	if len(folded) > 0 {
		// Beside folds, a lone row is an outlier: the worst first.
		sort.SliceStable(single, func(i, j int) bool { return rank(single[i].status) > rank(single[j].status) })
	}
	return append(folded, single...)
}

// cellText is a cell's mark, share and probe, e.g. "✔ 50% ok".
func cellText(s *textStyle, c report.MatrixCell) string {
	m := s.pathMark(c.Status)
	parts := []string{m}
	switch c.Problem {
	case "missing":
		return m + " missing"
	case "stale":
		parts = append(parts, "stale")
	}
	if c.Status == report.StatusSkipped || c.Status == report.StatusUnknown {
		return m
	}
	if c.Programmed {
		parts = append(parts, percent(c.Share))
	}
	if c.Probe != "" {
		parts = append(parts, c.Probe)
	}
	return strings.Join(parts, " ")
}

func percent(f float64) string {
	v := f * 100
	if v == float64(int(v)) {
		return strconv.Itoa(int(v)) + "%"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "%"
}

func writeGridColumns(w io.Writer, s *textStyle, p *report.MatrixPort, rows []gridRow, nodeW int, colW []int) {
	var head strings.Builder
	head.WriteString("  " + pad("node", nodeW))
	for j, e := range p.Endpoints {
		head.WriteString("  " + pad(esc(e), colW[j]))
	}
	fmt.Fprintln(w, s.faint.Render(strings.TrimRight(head.String(), " ")))
	writeRows(w, s, rows, nodeW, func(r gridRow) string {
		var b strings.Builder
		for j, c := range r.cells {
			b.WriteString("  " + colorMark(s, c, r.cellSt[j]) + strings.Repeat(" ", colW[j]-width(c)))
		}
		return b.String()
	})
}

// writeGridSummary replaces the endpoint columns by counts when they do not
// fit: how many endpoints the node programmed of those it should, whether the
// shares are fair, the probe outcomes, and the endpoints that are off.
func writeGridSummary(w io.Writer, s *textStyle, p *report.MatrixPort, rows []gridRow, nodeW int) {
	byNode := map[string]report.MatrixRow{}
	for _, n := range p.Nodes {
		byNode[n.Node] = n
	}
	fmt.Fprintln(w, s.faint.Render(fmt.Sprintf("  %s  %s", pad("node", nodeW), fmt.Sprintf("%d endpoints: programmed/expected, probes, odd ones", len(p.Endpoints)))))
	writeRows(w, s, rows, nodeW, func(r gridRow) string {
		n := byNode[r.nodes[0]]
		if n.Status == report.StatusUnknown {
			return ""
		}
		sum := summarizeRow(n)
		expected, programmed, pr, odd, hidden := sum.expected, sum.programmed, sum.probes, sum.odd, sum.hidden
		line := fmt.Sprintf("  %s %d/%d", s.status[n.Status].Render(s.pathMark(n.Status)), programmed, expected)
		if len(pr) > 0 {
			line += "  probes " + strings.Join(pr, ", ")
		} else {
			line += "  not probed"
		}
		// The odd endpoints, worst first, as many as fit the line.
		room := lineWidth - 2 - nodeW - lipgloss.Width(line) - 2
		for k, o := range odd {
			rest := ""
			if left := len(odd) - k - 1 + hidden; left > 0 {
				rest = fmt.Sprintf(", +%d more", left)
			}
			sep := "  "
			if k > 0 {
				sep = ", "
			}
			if width(sep+o+rest) > room {
				line += fmt.Sprintf("%s+%d more", sep, len(odd)-k+hidden)
				hidden = 0
				break
			}
			line += sep + esc(o)
			room -= width(sep + o)
		}
		if hidden > 0 && len(odd) > 0 && !strings.HasSuffix(line, "more") {
			line += fmt.Sprintf(", +%d more", hidden)
		}
		return line
	})
}

// rowSummary is one node's row counted: the endpoints it should and does
// program, its probe outcomes, and the endpoints that are off, the
// datapath's misses first, then failed probes, then warnings.
type rowSummary struct {
	expected, programmed int
	probes               []string
	odd                  []string
	// hidden counts the odd cells a sparse row did not keep.
	hidden int
}

func summarizeRow(n report.MatrixRow) rowSummary {
	sum := rowSummary{expected: n.Expected, programmed: n.Programmed}
	var programmedOdd, failed, warned []string
	for _, c := range n.Cells {
		switch {
		case c.Problem == "":
		case c.Problem == "missing" || c.Problem == "stale":
			programmedOdd = append(programmedOdd, c.Endpoint+" "+c.Problem)
		case c.Status == report.StatusFail:
			failed = append(failed, c.Endpoint+" "+c.Problem)
		default:
			warned = append(warned, c.Endpoint+" "+c.Problem)
		}
	}
	sum.odd = append(append(programmedOdd, failed...), warned...)
	sum.hidden = max(n.OddCells-len(n.Cells), 0)
	for _, k := range sortedKeys(n.Probes) {
		sum.probes = append(sum.probes, fmt.Sprintf("%d %s", n.Probes[k], k))
	}
	return sum
}

// writeRows prints the rows with their node labels, a fold's node names on
// the line under it, and says how many outliers were left out.
func writeRows(w io.Writer, s *textStyle, rows []gridRow, nodeW int, cells func(gridRow) string) {
	shownSingles := 0
	left := 0
	for _, r := range rows {
		if len(r.nodes) == 1 {
			if shownSingles >= maxOutlierRows {
				left++
				continue
			}
			shownSingles++
		}
		label := r.label()
		line := "  " + pad(clipWidth(label, nodeW, s), nodeW) + cells(r)
		if r.note != "" {
			if room := lineWidth - lipgloss.Width(line) - 2; room > 8 {
				line += "  " + clipWidth(esc(r.note), room, s)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
		if len(r.nodes) > 1 {
			fmt.Fprintf(w, "  %s\n", s.faint.Render(clipWidth(esc(nodeRange(r.nodes, s.ellipsis())), lineWidth-2, s)))
		}
	}
	if left > 0 {
		fmt.Fprintf(w, "  %s\n", s.faint.Render(fmt.Sprintf("%s %d more nodes differ (-o json lists every cell)", s.ellipsis(), left)))
	}
}

// nodeRange names a fold's nodes: all of them when few, else the first
// ones and a count.
func nodeRange(nodes []string, ellipsis string) string {
	const listed = 4
	if len(nodes) <= listed {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s, %s %d more", strings.Join(nodes[:listed], ", "), ellipsis, len(nodes)-listed)
}

func colorMark(s *textStyle, cell string, st report.Status) string {
	m := s.pathMark(st)
	if !strings.HasPrefix(cell, m) {
		return cell
	}
	return s.status[st].Render(m) + cell[len(m):]
}

func pad(v string, n int) string {
	if d := n - width(v); d > 0 {
		return v + strings.Repeat(" ", d)
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// withSharedCells is p with each SameAs row holding the cells of the row it
// names (shared, not copied), so the renderers read every row alike.
func withSharedCells(p report.MatrixPort) report.MatrixPort {
	shared := false
	for _, n := range p.Nodes {
		shared = shared || n.SameAs != ""
	}
	if !shared {
		return p
	}
	cells := map[string][]report.MatrixCell{}
	rows := make([]report.MatrixRow, len(p.Nodes))
	for i, n := range p.Nodes {
		if n.SameAs != "" {
			n.Cells = cells[n.SameAs]
		} else {
			cells[n.Node] = n.Cells
		}
		rows[i] = n
	}
	p.Nodes = rows
	return p
}
