package render

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// lineWidth is the width the text view's pictures (path, grid) stay inside.
const lineWidth = 80

// hop is one stop of the path a packet takes, drawn as a column: its name,
// and under it its mark and a detail. details go from the longest to the
// shortest form; the path uses the longest that fits the line.
type hop struct {
	name    string
	status  report.Status // "" for the client, which is not judged
	details []string
	// nodes are the per-node marks fanned out under the node hop.
	nodes []nodeHop
}

type nodeHop struct {
	node   string
	status report.Status
	reason string
}

// pathHops turns the result into the hops: client, DNS, Service, the node
// datapath, NetworkPolicy, endpoints. A hop's status is its layer's; the node
// hop's is the worst of the node layers (datapath, conntrack, route).
func pathHops(t *report.ServiceTrace) []hop {
	layerStatus := func(n report.LayerName) report.Status {
		if l := t.Layer(n); l != nil {
			return l.Status
		}
		return report.StatusSkipped
	}
	svc := &t.Service
	client := "any Pod"
	if c := t.Metadata.Client; c != "" {
		// pod/NAMESPACE/NAME is drawn as pod NAME: the namespace is in
		// the JSON, the hop has to stay narrow.
		kind, rest, _ := strings.Cut(c, "/")
		if i := strings.LastIndex(rest, "/"); i >= 0 {
			rest = rest[i+1:]
		}
		client = kind + " " + rest
	}
	hops := []hop{{name: client}}
	hops = append(hops, hop{name: "DNS", status: layerStatus(report.LayerDNS), details: dnsDetails(t)})
	hops = append(hops, hop{name: "Service", status: layerStatus(report.LayerService), details: serviceDetails(svc)})
	hops = append(hops, nodeHopOf(t))
	hops = append(hops, hop{name: "policy", status: layerStatus(report.LayerPolicy)})
	e := &t.Endpoints
	var epDetails []string
	if t.Service.Found && (e.Total > 0 || len(e.Slices) > 0) {
		epDetails = []string{fmt.Sprintf("%d/%d ready", e.Ready, e.Total), fmt.Sprintf("%d/%d", e.Ready, e.Total)}
	}
	hops = append(hops, hop{name: "endpoints", status: layerStatus(report.LayerEndpoints), details: epDetails})
	return hops
}

func dnsDetails(t *report.ServiceTrace) []string {
	if !t.Service.Found {
		return nil
	}
	if t.Service.ExternalName != "" {
		return []string{"CNAME " + t.Service.ExternalName, "CNAME"}
	}
	if t.Service.Headless {
		return []string{"Pod IPs"}
	}
	// The records a lookup of the name returns: one type per family the
	// Service has, so a dual-stack Service's picture says both are asked.
	switch v4, v6 := hasFamily(&t.Service, "IPv4"), hasFamily(&t.Service, "IPv6"); {
	case v4 && v6:
		return []string{"A+AAAA records", "A+AAAA"}
	case v6:
		return []string{"AAAA record", "AAAA"}
	}
	return []string{"A record", "A"}
}

// hasFamily says whether the Service has a ClusterIP of the family. A
// summary without IPFamilies (an older bundle) is read from its addresses.
func hasFamily(svc *report.ServiceSummary, family string) bool {
	if len(svc.IPFamilies) > 0 {
		return slices.Contains(svc.IPFamilies, family)
	}
	return slices.ContainsFunc(svc.ClusterIPs, func(ip string) bool { return familyOf(ip) == family })
}

func serviceDetails(svc *report.ServiceSummary) []string {
	switch {
	case !svc.Found:
		return []string{"not found"}
	case svc.ExternalName != "":
		return []string{"ExternalName"}
	case svc.Headless:
		return []string{"headless"}
	}
	var out []string
	var ips []string
	for _, ip := range svc.ClusterIPs {
		if strings.Contains(ip, ":") {
			ip = "[" + ip + "]"
		}
		ips = append(ips, ip)
	}
	// A dual-stack Service is drawn with both addresses while they fit,
	// then with the primary one and a note that there is a second family.
	var both, other string
	if len(ips) > 1 {
		both, other = ips[0]+" "+ips[1], " +"+familyOf(svc.ClusterIPs[1])
	}
	if len(svc.Ports) > 0 && len(ips) > 0 {
		p := svc.Ports[0]
		more := ""
		if len(svc.Ports) > 1 {
			more = fmt.Sprintf(" +%d", len(svc.Ports)-1)
		}
		if both != "" {
			out = append(out, fmt.Sprintf("%s :%d%s", both, p.Port, more))
		}
		if p.NodePort != 0 {
			out = append(out, fmt.Sprintf("%s:%d :%d%s%s", ips[0], p.Port, p.NodePort, more, other))
		}
		out = append(out, fmt.Sprintf("%s:%d%s%s", ips[0], p.Port, more, other))
	}
	if len(ips) > 0 {
		if other != "" {
			out = append(out, ips[0]+other)
		}
		out = append(out, ips[0])
	}
	return append(out, svc.Type)
}

// familyOf is an address's family as the report names it.
func familyOf(ip string) string {
	if strings.Contains(ip, ":") {
		return "IPv6"
	}
	return "IPv4"
}

// nodeHopOf is the node datapath hop: one mark per inspected node.
func nodeHopOf(t *report.ServiceTrace) hop {
	h := hop{name: "datapath"}
	byNode := map[string]*nodeHop{}
	var order []string
	worst := report.Status("")
	allSkipped := true
	for _, name := range report.NodeLayers {
		l := t.Layer(name)
		if l == nil || l.Status == report.StatusSkipped {
			continue
		}
		allSkipped = false
		if rank(l.Status) > rank(worst) {
			worst = l.Status
		}
		for _, n := range l.Nodes {
			nh := byNode[n.Node]
			if nh == nil {
				nh = &nodeHop{node: n.Node, status: report.StatusPass}
				byNode[n.Node] = nh
				order = append(order, n.Node)
			}
			if rank(n.Status) > rank(nh.status) {
				nh.status, nh.reason = n.Status, string(name)+brokenFamily(t, l, n)+": "+n.Reason
			}
		}
	}
	if allSkipped {
		h.status = report.StatusSkipped
		h.details = []string{"does not apply", "n/a"}
		if l := t.Layer(report.LayerDatapath); l != nil && (l.Reason == report.ReasonNoNode || l.Reason == report.ReasonNoCollector) {
			h.details = []string{"not inspected", "skipped"}
		}
		return h
	}
	h.status = worst
	for _, n := range order {
		h.nodes = append(h.nodes, *byNode[n])
	}
	ok := 0
	for _, n := range h.nodes {
		if n.status == report.StatusPass {
			ok++
		}
	}
	switch n := len(h.nodes); {
	case n == 0:
	case ok == n:
		h.details = []string{plural(n, "node"), strconv.Itoa(n)}
	default:
		h.details = []string{fmt.Sprintf("%d of %d ok", ok, n), fmt.Sprintf("%d/%d", ok, n)}
	}
	return h
}

// brokenFamily names the family a dual-stack Service's node result is
// about when its worst findings are all about one family (" (IPv6)"): the
// other family works on that node, and the picture should say which broke.
func brokenFamily(t *report.ServiceTrace, l *report.Layer, n report.NodeResult) string {
	if len(t.Service.ClusterIPs) < 2 {
		return ""
	}
	family := ""
	for _, c := range l.Checks {
		if c.Node != n.Node || c.Status != n.Status {
			continue
		}
		if c.Family == "" || (family != "" && c.Family != family) {
			return ""
		}
		family = c.Family
	}
	if family == "" {
		return ""
	}
	return " (" + family + ")"
}

// rank orders statuses from best to worst for the picture (skipped below pass).
func rank(s report.Status) int {
	switch s {
	case report.StatusPass:
		return 1
	case report.StatusWarn:
		return 2
	case report.StatusUnknown:
		return 3
	case report.StatusFail:
		return 4
	}
	return 0
}

// pathMark is a hop's mark without the ASCII padding the layer list uses.
func (s *textStyle) pathMark(st report.Status) string {
	g, ok := glyphs[st]
	if !ok {
		g = glyphs[report.StatusUnknown]
	}
	if s.opts.ASCII {
		return g.ascii
	}
	return g.unicode
}

func (s *textStyle) pathArrow() string {
	if s.opts.ASCII {
		return " -> "
	}
	return " ─▶ "
}

func width(v string) int { return utf8.RuneCountInString(v) }

// writePath draws the hops as columns joined by arrows: names on the first
// line, marks and details under them, the failing hop pointed at, then the
// inspected nodes fanned out under the node hop. It stays inside lineWidth:
// details shorten first, then the columns wrap onto another row.
func writePath(w io.Writer, s *textStyle, t *report.ServiceTrace) {
	hops := hopsWithFrontdoor(t, pathHops(t))
	for i := range hops {
		hops[i].name = esc(hops[i].name)
		for j := range hops[i].details {
			hops[i].details[j] = esc(hops[i].details[j])
		}
	}
	choice := make([]int, len(hops)) // index into details; len = no detail
	cell := func(i int) string {
		h := hops[i]
		if h.status == "" {
			return ""
		}
		m := s.pathMark(h.status)
		if choice[i] < len(h.details) {
			return m + " " + h.details[choice[i]]
		}
		return m
	}
	colWidth := func(i int) int { return max(width(hops[i].name), width(cell(i))) }
	indent, arrow := "  ", s.pathArrow()
	total := func() int {
		n := width(indent)
		for i := range hops {
			n += colWidth(i)
			if i > 0 {
				n += width(arrow)
			}
		}
		return n
	}
	// Shorten, while the line is too wide, the least telling detail that
	// still sticks out past its hop's name: DNS first, the Service's
	// address last.
	priority := pathPriority(t, []int{2, 5, 3, 1, 4, 0})
	for total() > lineWidth {
		best := -1
		for k := len(priority) - 1; k >= 0 && best < 0; k-- {
			i := priority[k]
			if i < len(hops) && choice[i] < len(hops[i].details) && width(cell(i)) > width(hops[i].name) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		choice[best]++
	}
	// Greedy shortening may have gone further than needed: give each hop
	// back the longest detail that still fits, the Service's address
	// first, then the endpoint and node counts, then DNS.
	for _, i := range priority {
		for choice[i] > 0 {
			choice[i]--
			if total() > lineWidth {
				choice[i]++
				break
			}
		}
	}
	// The pointer marks the hop of the verdict's failing layer, so the
	// picture and the headline name the same place.
	failing := -1
	if f := t.Verdict.FirstFailingLayer; f != "" {
		failing = hopIndex(t, f)
	}
	// Rows of columns that fit; a hop never splits.
	var rows [][]int
	cur, curW := []int{}, width(indent)
	for i := range hops {
		add := colWidth(i)
		if len(cur) > 0 {
			add += width(arrow)
		}
		if len(cur) > 0 && curW+add > lineWidth {
			rows = append(rows, cur)
			cur, curW = []int{}, width(indent)+width(arrow)
			add = colWidth(i) + width(arrow)
		}
		cur = append(cur, i)
		curW += add
	}
	rows = append(rows, cur)

	nodeCol := -1
	for r, row := range rows {
		var names, marks, pointer strings.Builder
		names.WriteString(indent)
		marks.WriteString(indent)
		pointer.WriteString(indent)
		col := width(indent)
		if r > 0 {
			names.WriteString(arrow)
			marks.WriteString(strings.Repeat(" ", width(arrow)))
			pointer.WriteString(strings.Repeat(" ", width(arrow)))
			col += width(arrow)
		}
		pointed := false
		for k, i := range row {
			h := hops[i]
			cw := colWidth(i)
			if k > 0 {
				names.WriteString(arrow)
				marks.WriteString(strings.Repeat(" ", width(arrow)))
				pointer.WriteString(strings.Repeat(" ", width(arrow)))
				col += width(arrow)
			}
			if len(h.nodes) > 0 {
				nodeCol = col
			}
			name := h.name
			switch {
			case i == failing:
				name = s.status[report.StatusFail].Render(name)
			case h.status == "":
				name = s.faint.Render(name)
			default:
				name = s.bold.Render(name)
			}
			names.WriteString(name + strings.Repeat(" ", cw-width(h.name)))
			c := cell(i)
			if h.status != "" {
				marks.WriteString(s.status[h.status].Render(s.pathMark(h.status)) + strings.TrimPrefix(c, s.pathMark(h.status)))
			}
			marks.WriteString(strings.Repeat(" ", cw-width(c)))
			if i == failing {
				p := "▲ fails here"
				if s.opts.ASCII {
					p = "^ fails here"
				}
				if col+width(p) > lineWidth {
					p = strings.TrimSuffix(p, " here")
				}
				pointer.WriteString(s.status[report.StatusFail].Render(p))
				pointed = true
			} else if !pointed {
				pointer.WriteString(strings.Repeat(" ", cw))
			}
			col += cw
		}
		fmt.Fprintln(w, strings.TrimRight(names.String(), " "))
		fmt.Fprintln(w, strings.TrimRight(marks.String(), " "))
		if pointed {
			fmt.Fprintln(w, strings.TrimRight(pointer.String(), " "))
		}
	}
	writeNodeFan(w, s, hops, nodeCol)
}

// maxFannedNodes is how many nodes the path lists under the node hop; the
// others are counted, the grid and the layers list them.
const maxFannedNodes = 4

func writeNodeFan(w io.Writer, s *textStyle, hops []hop, col int) {
	var h *hop
	for i := range hops {
		if len(hops[i].nodes) > 0 {
			h = &hops[i]
		}
	}
	if h == nil || col < 0 {
		return
	}
	// Nodes that are not passing first, grouped by what they report, then
	// the passing ones, up to the bound.
	var failing, passing []report.NodeResult
	for _, n := range h.nodes {
		r := report.NodeResult{Node: n.node, Status: n.status, Reason: n.reason}
		if n.status == report.StatusPass {
			r.Reason = ""
			passing = append(passing, r)
		} else {
			failing = append(failing, r)
		}
	}
	groups := append(groupNodes(failing), groupNodes(passing)...)
	var hidden []nodeGroup
	shown := groups
	if len(shown) > maxFannedNodes {
		hidden = shown[maxFannedNodes-1:]
		shown = shown[:maxFannedNodes-1]
	}
	rest := 0
	for _, g := range hidden {
		rest += len(g.nodes)
	}
	col = min(col, lineWidth-30)
	branch, last := "├ ", "└ "
	if s.opts.ASCII {
		branch, last = "|- ", "`- "
	}
	for k, g := range shown {
		b := branch
		if k == len(shown)-1 && rest == 0 {
			b = last
		}
		label := esc(g.nodes[0])
		if len(g.nodes) > 1 {
			label = plural(len(g.nodes), "node")
			if g.status == report.StatusPass {
				label += " pass"
			}
		}
		line := strings.Repeat(" ", col) + b + s.pathMark(g.status) + " " + label
		if g.status != report.StatusPass && g.reason != "" {
			line += "  " + esc(g.reason)
		}
		line = clipWidth(line, lineWidth, s)
		mark := s.pathMark(g.status)
		i := strings.Index(line, b+mark)
		fmt.Fprintln(w, line[:i+len(b)]+s.status[g.status].Render(mark)+line[i+len(b)+len(mark):])
	}
	if rest > 0 {
		notPassing := 0
		for _, g := range hidden {
			if g.status != report.StatusPass {
				notPassing += len(g.nodes)
			}
		}
		more := fmt.Sprintf("%s %d more nodes pass", s.pathMark(report.StatusPass), rest)
		if notPassing > 0 {
			more = fmt.Sprintf("%d more nodes, %d of them not passing (see the layers)", rest, notPassing)
		}
		fmt.Fprintln(w, strings.Repeat(" ", col)+last+s.faint.Render(more))
	}
}

// clipWidth cuts a plain line to n runes, ending it with an ellipsis.
func clipWidth(v string, n int, s *textStyle) string {
	if width(v) <= n {
		return v
	}
	e := s.ellipsis()
	r := []rune(v)
	return string(r[:n-width(e)]) + e
}

// hopOfLayer is the index in pathHops of the hop that shows layer.
func hopOfLayer(l report.LayerName) int {
	switch l {
	case report.LayerDNS:
		return 1
	case report.LayerService:
		return 2
	case report.LayerPolicy:
		return 4
	case report.LayerEndpoints:
		return 5
	}
	return 3 // datapath, conntrack, route: the node hop
}
