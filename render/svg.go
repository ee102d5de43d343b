package render

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// The SVG view is built as typed elements and written by encoding/xml, so
// every cluster-supplied string is escaped by the encoder and the document is
// well-formed by construction. It is self-contained: no script, no external
// font, stylesheet or image. Every hop and grid cell carries data-*
// attributes (status, node, endpoint) for tests and for tools that read the
// picture back.

// svgColors are the fills per status, readable on white.
var svgColors = map[report.Status]string{
	report.StatusPass:    "#1a7f37",
	report.StatusFail:    "#cf222e",
	report.StatusWarn:    "#9a6700",
	report.StatusSkipped: "#6e7781",
	report.StatusUnknown: "#8250df",
}

func svgColor(st report.Status) string {
	if c, ok := svgColors[st]; ok {
		return c
	}
	return "#57606a"
}

type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Xmlns   string   `xml:"xmlns,attr"`
	Width   int      `xml:"width,attr"`
	Height  int      `xml:"height,attr"`
	ViewBox string   `xml:"viewBox,attr"`
	Role    string   `xml:"role,attr"`
	Label   string   `xml:"aria-label,attr"`
	Title   string   `xml:"title"`
	Style   string   `xml:"style"`
	Items   []any
}

type svgGroup struct {
	XMLName   xml.Name `xml:"g"`
	Class     string   `xml:"class,attr,omitempty"`
	Transform string   `xml:"transform,attr,omitempty"`
	Hop       string   `xml:"data-hop,attr,omitempty"`
	Node      string   `xml:"data-node,attr,omitempty"`
	Endpoint  string   `xml:"data-endpoint,attr,omitempty"`
	Status    string   `xml:"data-status,attr,omitempty"`
	Failing   string   `xml:"data-failing,attr,omitempty"`
	Tooltip   *svgTitle
	Items     []any
}

type svgTitle struct {
	XMLName xml.Name `xml:"title"`
	Text    string   `xml:",chardata"`
}

type svgRect struct {
	XMLName     xml.Name `xml:"rect"`
	X           int      `xml:"x,attr"`
	Y           int      `xml:"y,attr"`
	Width       int      `xml:"width,attr"`
	Height      int      `xml:"height,attr"`
	RX          int      `xml:"rx,attr,omitempty"`
	Fill        string   `xml:"fill,attr"`
	Stroke      string   `xml:"stroke,attr,omitempty"`
	StrokeWidth int      `xml:"stroke-width,attr,omitempty"`
}

type svgText struct {
	XMLName xml.Name `xml:"text"`
	X       int      `xml:"x,attr"`
	Y       int      `xml:"y,attr"`
	Class   string   `xml:"class,attr,omitempty"`
	// Style carries a text color: the stylesheet's fill would win over a
	// fill attribute.
	Style  string `xml:"style,attr,omitempty"`
	Anchor string `xml:"text-anchor,attr,omitempty"`
	Text   string `xml:",chardata"`
}

type svgLine struct {
	XMLName xml.Name `xml:"line"`
	X1      int      `xml:"x1,attr"`
	Y1      int      `xml:"y1,attr"`
	X2      int      `xml:"x2,attr"`
	Y2      int      `xml:"y2,attr"`
	Stroke  string   `xml:"stroke,attr"`
	Width   int      `xml:"stroke-width,attr"`
}

type svgPolygon struct {
	XMLName xml.Name `xml:"polygon"`
	Points  string   `xml:"points,attr"`
	Fill    string   `xml:"fill,attr"`
}

const (
	svgWidth   = 1040
	svgMargin  = 24
	hopWidth   = 140
	hopHeight  = 64
	hopGap     = 26
	cellWidth  = 150
	cellHeight = 24
	nodeColumn = 170
)

const svgStyle = `text{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px;fill:#1f2328}` +
	`.title{font-size:18px;font-weight:bold}.verdict{font-size:14px}.hop{font-weight:bold}.small{font-size:11px;fill:#57606a}` +
	`.mark{font-weight:bold;fill:#ffffff}.cell{font-size:12px}`

// SVG writes the path and the node × endpoint grid as a self-contained SVG
// picture, for a postmortem or a ticket.
func SVG(w io.Writer, t *report.ServiceTrace) error {
	doc := &svgDoc{Xmlns: "http://www.w3.org/2000/svg", Role: "img"}
	name := t.Subject()
	doc.Title = "svctrace " + name + ": " + string(t.Verdict.Status)
	doc.Label = doc.Title
	doc.Style = svgStyle
	y := svgMargin + 18
	doc.Items = append(doc.Items,
		svgRect{X: 0, Y: 0, Width: svgWidthFor(t), Height: 1, Fill: "#ffffff"},
		svgText{X: svgMargin, Y: y, Class: "title", Text: "kubectl svctrace " + name + "  " + strings.ToUpper(string(t.Verdict.Status))})
	y += 22
	doc.Items = append(doc.Items, svgText{X: svgMargin, Y: y, Class: "verdict", Style: "fill:" + svgColor(t.Verdict.Status), Text: t.Verdict.Summary})
	if t.Verdict.LikelyCause != "" {
		y += 18
		doc.Items = append(doc.Items, svgText{X: svgMargin, Y: y, Class: "small", Text: "likely cause: " + t.Verdict.LikelyCause})
	}
	y += 12
	doc.Items = append(doc.Items, svgText{X: svgMargin, Y: y + 4, Class: "small",
		Text: fmt.Sprintf("svctrace %s  %s", t.Metadata.SvctraceVersion, t.Metadata.Time.UTC().Format("2006-01-02T15:04:05Z"))})
	y += 24

	path, h := svgPath(t, y)
	doc.Items = append(doc.Items, path)
	y += h + 24
	if m := t.Matrix; m != nil && gridRowsCount(m) > 1 {
		grid, gh := svgGrid(m, y)
		doc.Items = append(doc.Items, grid...)
		y += gh
	}
	doc.Height = y + svgMargin
	doc.Width = svgWidthFor(t)
	doc.Items[0] = svgRect{X: 0, Y: 0, Width: svgWidth, Height: doc.Height, Fill: "#ffffff"}
	doc.ViewBox = fmt.Sprintf("0 0 %d %d", doc.Width, doc.Height)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", " ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("encoding SVG: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// svgPath draws the hops as boxes joined by arrows, the failing hop
// outlined, and the inspected nodes listed under the node hop.
func svgPath(t *report.ServiceTrace, top int) (svgGroup, int) {
	hops := hopsWithFrontdoor(t, pathHops(t))
	failing := -1
	if f := t.Verdict.FirstFailingLayer; f != "" {
		failing = hopIndex(t, f)
	}
	g := svgGroup{Class: "path"}
	height := hopHeight
	for i, h := range hops {
		x := svgMargin + i*(hopWidth+hopGap)
		st := h.status
		fill, stroke := "#f6f8fa", "#d0d7de"
		if st != "" {
			fill = svgColor(st) + "1f" // the status color, faint
			stroke = svgColor(st)
		}
		hop := svgGroup{Hop: strings.ReplaceAll(strings.ToLower(h.name), " ", "-"), Status: string(st)}
		hop.Tooltip = &svgTitle{Text: h.name + ": " + orDash(string(st))}
		sw := 1
		if i == failing {
			sw, hop.Failing = 3, "true"
		}
		hop.Items = append(hop.Items, svgRect{X: x, Y: top, Width: hopWidth, Height: hopHeight, RX: 8, Fill: fill, Stroke: stroke, StrokeWidth: sw})
		hop.Items = append(hop.Items, svgText{X: x + 12, Y: top + 24, Class: "hop", Text: clipRunes(h.name, 16)})
		if st != "" {
			mark := glyphs[st].unicode
			hop.Items = append(hop.Items,
				svgRect{X: x + 12, Y: top + 34, Width: 20, Height: 20, RX: 10, Fill: svgColor(st)},
				svgText{X: x + 22, Y: top + 49, Class: "mark", Anchor: "middle", Text: mark})
			if len(h.details) > 0 {
				hop.Items = append(hop.Items, svgText{X: x + 38, Y: top + 49, Class: "small", Text: clipRunes(h.details[0], 14)})
			}
		}
		if i == failing {
			hop.Items = append(hop.Items, svgText{X: x + hopWidth/2, Y: top + hopHeight + 16, Anchor: "middle", Style: "fill:" + svgColor(report.StatusFail), Class: "hop", Text: "▲ fails here"})
		}
		if i > 0 {
			ax := x - hopGap
			g.Items = append(g.Items,
				svgLine{X1: ax + 2, Y1: top + hopHeight/2, X2: x - 8, Y2: top + hopHeight/2, Stroke: "#57606a", Width: 2},
				svgPolygon{Points: fmt.Sprintf("%d,%d %d,%d %d,%d", x-8, top+hopHeight/2-5, x-1, top+hopHeight/2, x-8, top+hopHeight/2+5), Fill: "#57606a"})
		}
		if len(h.nodes) > 0 {
			ny := top + hopHeight + 24
			if i == failing {
				ny += 14
			}
			shown := h.nodes
			const maxSVGNodes = 6
			var notPass, pass []nodeHop
			for _, n := range shown {
				if n.status == report.StatusPass {
					pass = append(pass, n)
				} else {
					notPass = append(notPass, n)
				}
			}
			shown = append(notPass, pass...)
			more := 0
			if len(shown) > maxSVGNodes {
				more = len(shown) - (maxSVGNodes - 1)
				shown = shown[:maxSVGNodes-1]
			}
			for k, n := range shown {
				row := svgGroup{Node: n.node, Status: string(n.status), Tooltip: &svgTitle{Text: n.node + ": " + n.reason}}
				yy := ny + k*18
				row.Items = append(row.Items,
					svgRect{X: x + 12, Y: yy - 11, Width: 12, Height: 12, RX: 6, Fill: svgColor(n.status)},
					svgText{X: x + 30, Y: yy, Class: "small", Text: clipRunes(n.node, 18)})
				hop.Items = append(hop.Items, row)
			}
			last := ny + len(shown)*18
			if more > 0 {
				hop.Items = append(hop.Items, svgText{X: x + 12, Y: last, Class: "small", Text: fmt.Sprintf("… %d more nodes (grid below)", more)})
				last += 18
			}
			height = max(height, last-top)
		}
		if i == failing {
			height = max(height, hopHeight+20)
		}
		g.Items = append(g.Items, hop)
	}
	return g, height
}

// svgGrid draws each port's grid with the text view's folding: rows of
// identical nodes merged, outliers listed.
func svgGrid(m *report.EndpointMatrix, top int) ([]any, int) {
	plain := &textStyle{opts: TextOptions{}}
	var out []any
	y := top
	for _, p := range m.Ports {
		p = withSharedCells(p)
		out = append(out, svgText{X: svgMargin, Y: y + 14, Class: "hop", Text: "Nodes × endpoints " + p.Port})
		out = append(out, svgText{X: svgMargin, Y: y + 30, Class: "small", Text: "each cell: share of new connections the node programs, its direct probe"})
		y += 44
		cols := p.Endpoints
		maxCols := (svgWidth - 2*svgMargin - nodeColumn) / cellWidth
		summary := len(cols) > maxCols || p.Sparse
		if summary {
			// As in the text view: counts per node instead of columns.
			cols = nil
			out = append(out, svgText{X: svgMargin + nodeColumn + 6, Y: y + 16, Class: "small",
				Text: fmt.Sprintf("%d endpoints: programmed/expected, probes, odd ones", len(p.Endpoints))})
		}
		for j, e := range cols {
			out = append(out, svgText{X: svgMargin + nodeColumn + j*cellWidth + 6, Y: y + 16, Class: "small", Text: e})
		}
		y += cellHeight
		rows := gridRows(plain, &p)
		byNode := map[string]report.MatrixRow{}
		for _, n := range p.Nodes {
			byNode[n.Node] = n
		}
		for k, r := range rows {
			if k >= maxOutlierRows+4 {
				out = append(out, svgText{X: svgMargin, Y: y + 16, Class: "small", Text: fmt.Sprintf("… %d more rows in -o json", len(rows)-k)})
				y += cellHeight
				break
			}
			row := svgGroup{Class: "row", Node: strings.Join(r.nodes, " "), Status: string(r.status)}
			label := r.label()
			row.Items = append(row.Items, svgText{X: svgMargin, Y: y + 16, Text: clipRunes(label, 20)})
			if len(r.nodes) > 1 {
				row.Tooltip = &svgTitle{Text: strings.Join(r.nodes, ", ")}
			}
			if summary && byNode[r.nodes[0]].Status != report.StatusUnknown {
				sum := summarizeRow(byNode[r.nodes[0]])
				x := svgMargin + nodeColumn
				text := fmt.Sprintf("%d/%d", sum.programmed, sum.expected)
				row.Items = append(row.Items,
					svgRect{X: x, Y: y + 2, Width: 90, Height: cellHeight - 4, RX: 4, Fill: svgColor(r.status) + "26", Stroke: svgColor(r.status), StrokeWidth: 1},
					svgText{X: x + 6, Y: y + 17, Class: "cell", Text: glyphs[r.status].unicode + " " + text})
				detail := "not probed"
				if len(sum.probes) > 0 {
					detail = "probes " + strings.Join(sum.probes, ", ")
				}
				if len(sum.odd) > 0 {
					detail += "   " + strings.Join(sum.odd, ", ")
				}
				row.Items = append(row.Items, svgText{X: x + 100, Y: y + 17, Class: "cell", Text: clipRunes(detail, 95)})
			}
			cells := byNode[r.nodes[0]].Cells
			for j := range cols {
				if j >= len(cells) {
					break
				}
				c := cells[j]
				cell := svgGroup{Class: "cell", Endpoint: cols[j], Status: string(c.Status)}
				x := svgMargin + nodeColumn + j*cellWidth
				cell.Items = append(cell.Items,
					svgRect{X: x, Y: y + 2, Width: cellWidth - 6, Height: cellHeight - 4, RX: 4, Fill: svgColor(c.Status) + "26", Stroke: svgColor(c.Status), StrokeWidth: 1},
					svgText{X: x + 6, Y: y + 17, Class: "cell", Text: r.cells[j]})
				row.Items = append(row.Items, cell)
			}
			if r.note != "" {
				row.Items = append(row.Items, svgText{X: svgMargin + nodeColumn + len(cols)*cellWidth + 4, Y: y + 16, Class: "small", Text: clipRunes(r.note, 40)})
			}
			out = append(out, row)
			y += cellHeight
			if len(r.nodes) > 1 {
				out = append(out, svgText{X: svgMargin + 12, Y: y + 12, Class: "small", Text: nodeRange(r.nodes, "…")})
				y += 18
			}
		}
		y += 16
	}
	return out, y - top
}

func clipRunes(v string, n int) string {
	r := []rune(v)
	if len(r) <= n {
		return v
	}
	return string(r[:n-1]) + "…"
}
