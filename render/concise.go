package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Bounds of the concise view; -o wide shows DefaultMaxEndpoints endpoints
// and every node, -o json everything.
const (
	conciseEndpoints = 10
	conciseNodes     = 6
	// conciseVariants is how many differing reports of one finding on
	// different nodes are shown in full; the others are counted.
	conciseVariants = 3
)

func gridRowsCount(m *report.EndpointMatrix) int {
	n := 0
	for _, p := range m.Ports {
		n = max(n, len(p.Nodes))
	}
	return n
}

// writeWrapped prints head (visible width headW) then text, wrapped at
// lineWidth on spaces, continuation lines indented by indent spaces.
func writeWrapped(w io.Writer, head string, headW int, text string, indent int) {
	words := strings.Fields(text)
	line, col := head, headW
	first := true
	for _, word := range words {
		ww := width(word)
		if !first && col+1+ww > lineWidth {
			fmt.Fprintln(w, line)
			line, col = strings.Repeat(" ", indent)+word, indent+ww
			continue
		}
		if first {
			if headW > 0 {
				line += " "
				col++
			}
			first = false
		} else {
			line += " "
			col++
		}
		line += word
		col += ww
	}
	fmt.Fprintln(w, line)
}

// writeServiceConcise is the Service on one or two lines: type, address, ports,
// selector, and the spec fields that change where traffic goes when they
// are not the defaults.
func writeServiceConcise(w io.Writer, s *textStyle, t *report.ServiceTrace) {
	svc := &t.Service
	parts := []string{svc.Type}
	if svc.Headless {
		parts = append(parts, "headless")
	}
	if len(svc.ClusterIPs) > 0 && !svc.Headless {
		parts = append(parts, strings.Join(svc.ClusterIPs, ","))
	}
	if svc.ExternalName != "" {
		parts = append(parts, "externalName "+svc.ExternalName)
	}
	for _, port := range svc.Ports {
		d := fmt.Sprintf("%d/%s", port.Port, port.Protocol)
		if port.Name != "" {
			d = port.Name + " " + d
		}
		if port.TargetPort != "" {
			d += " " + s.arrow() + " " + port.TargetPort
		}
		if port.NodePort != 0 {
			d += fmt.Sprintf(" nodePort %d", port.NodePort)
		}
		parts = append(parts, d)
	}
	if len(svc.Selector) > 0 {
		parts = append(parts, "selector "+labelsString(svc.Selector))
	}
	if a := svc.SessionAffinity; a != "" && a != "None" {
		parts = append(parts, "sessionAffinity "+a)
	}
	if p := svc.ExternalTrafficPolicy; p == "Local" {
		parts = append(parts, "externalTrafficPolicy Local")
	}
	if p := svc.InternalTrafficPolicy; p == "Local" {
		parts = append(parts, "internalTrafficPolicy Local")
	}
	if svc.TrafficDistribution != "" {
		parts = append(parts, "trafficDistribution "+svc.TrafficDistribution)
	}
	if svc.TopologyMode != "" {
		parts = append(parts, "topologyMode "+svc.TopologyMode)
	}
	if svc.PublishNotReadyAddresses {
		parts = append(parts, "publishNotReadyAddresses")
	}
	if svc.ServiceProxyName != "" {
		parts = append(parts, "serviceProxyName "+svc.ServiceProxyName)
	}
	if len(svc.ExternalIPs) > 0 {
		parts = append(parts, "externalIPs "+strings.Join(svc.ExternalIPs, ","))
	}
	if len(svc.LoadBalancerIngress) > 0 {
		parts = append(parts, "ingress "+strings.Join(svc.LoadBalancerIngress, ","))
	}
	writeWrapped(w, s.bold.Render("Service"), len("Service"), esc(strings.Join(parts, ", ")), 2)
}

// writeEndpointsConcise is the counts and one short line per endpoint, not
// ready ones first, up to conciseEndpoints.
func writeEndpointsConcise(w io.Writer, s *textStyle, t *report.ServiceTrace) {
	e := &t.Endpoints
	if len(e.Slices) == 0 && e.Total == 0 {
		return
	}
	fmt.Fprintf(w, "%s %d/%d ready, %d serving, %d terminating, in %s\n", s.bold.Render("Endpoints"),
		e.Ready, e.Total, e.Serving, e.Terminating, plural(len(e.Slices), "EndpointSlice"))
	type line struct {
		st   report.Status
		text string
	}
	var bad, good []line
	for _, ep := range e.Endpoints {
		st, cond := endpointCondition(ep)
		parts := []string{pad(esc(ep.IP), 15), pad(cond, 10)}
		if ep.Pod != nil {
			parts = append(parts, "pod "+esc(ep.Pod.Name))
		}
		if ep.Node != "" {
			parts = append(parts, "on "+esc(ep.Node))
		}
		l := line{st, strings.Join(parts, " ")}
		if st == report.StatusPass {
			good = append(good, l)
		} else {
			bad = append(bad, l)
		}
	}
	all := append(bad, good...)
	for i, l := range all {
		if i >= conciseEndpoints {
			fmt.Fprintf(w, "  %s\n", s.faint.Render(fmt.Sprintf("%s %d more endpoints (-o wide lists %d, -o json all)", s.ellipsis(), len(all)-conciseEndpoints, DefaultMaxEndpoints)))
			break
		}
		fmt.Fprintf(w, "  %s %s\n", s.mark(l.st), strings.TrimRight(l.text, " "))
	}
}

// endpointCondition is an endpoint's mark and its conditions in a word.
func endpointCondition(ep report.EndpointSummary) (report.Status, string) {
	switch {
	case ep.Ready && ep.Terminating:
		return report.StatusWarn, "ready,terminating"
	case ep.Ready:
		return report.StatusPass, "ready"
	case ep.Serving && ep.Terminating:
		return report.StatusWarn, "serving,terminating"
	case ep.Terminating:
		return report.StatusFail, "terminating"
	}
	return report.StatusFail, "not ready"
}

// checkCounts says which checks ran and how often, in order: "DNS001
// DNS007" or, for node checks, "DP001×2".
func (s *textStyle) checkCounts(checks []report.Check) string {
	var order []string
	count := map[string]int{}
	for _, c := range checks {
		if count[c.Code] == 0 {
			order = append(order, c.Code)
		}
		count[c.Code]++
	}
	times := "×"
	if s.opts.ASCII {
		times = "x"
	}
	out := make([]string, len(order))
	for i, code := range order {
		out[i] = code
		if count[code] > 1 {
			out[i] += fmt.Sprintf("%s%d", times, count[code])
		}
	}
	return strings.Join(out, " ")
}

// layerHead is a layer's first line prefix: mark and padded name.
func (s *textStyle) layerHead(l *report.Layer) (string, int) {
	head := fmt.Sprintf("%s %s", s.mark(l.Status), s.bold.Render(fmt.Sprintf("%-10s", l.Name)))
	w := 1 + 1 + 10
	if s.opts.ASCII {
		w = 6 + 1 + 10
	}
	return head, w
}

// writeLayerConcise prints a passing or skipped layer on one line (what was
// checked and how often, on how many nodes), and a layer that did not pass
// with its nodes that did not pass and its checks that did not pass in
// full, folded across nodes that report the same finding.
func writeLayerConcise(w io.Writer, s *textStyle, l *report.Layer) {
	head, headW := s.layerHead(l)
	var passed, skipped, other []report.Check
	for _, c := range l.Checks {
		switch c.Status {
		case report.StatusPass:
			passed = append(passed, c)
		case report.StatusSkipped:
			skipped = append(skipped, c)
		default:
			other = append(other, c)
		}
	}
	onNodes := ""
	if n := len(l.Nodes); n > 0 {
		onNodes = " on " + plural(n, "node")
	}
	summary := func() string {
		var parts []string
		if len(passed) > 0 {
			parts = append(parts, fmt.Sprintf("%s passed%s: %s", plural(len(passed), "check"), onNodes, s.checkCounts(passed)))
		}
		if len(skipped) > 0 {
			parts = append(parts, "skipped: "+s.checkCounts(skipped))
		}
		return strings.Join(parts, "; ")
	}
	switch l.Status {
	case report.StatusPass:
		writeWrapped(w, head, headW, summary(), headW+1)
		return
	case report.StatusSkipped:
		writeWrapped(w, head+" "+s.word(l.Status, "skipped")+":", headW+len(" skipped:"), esc(orDash(l.Reason)), headW+1)
		return
	}
	reason := ""
	if l.Reason != "" {
		reason = esc(l.Reason)
	}
	writeWrapped(w, head+" "+s.word(l.Status, string(l.Status))+":", headW+1+len(l.Status)+1, reason, headW+1)
	// Nodes with the same result are one line, the outliers one each.
	var okNodes, shown, hidden int
	var notPassing []report.NodeResult
	for _, n := range l.Nodes {
		if n.Status == report.StatusPass {
			okNodes++
			continue
		}
		notPassing = append(notPassing, n)
	}
	for _, g := range groupNodes(notPassing) {
		if shown >= conciseNodes {
			hidden += len(g.nodes)
			continue
		}
		shown++
		var line string
		if len(g.nodes) == 1 {
			line = fmt.Sprintf("    %s node %s %s", s.mark(g.status), esc(g.nodes[0]), s.word(g.status, string(g.status)))
		} else {
			line = fmt.Sprintf("    %s %d nodes %s", s.mark(g.status), len(g.nodes), s.word(g.status, string(g.status)))
		}
		if g.reason != "" {
			line += ": " + esc(g.reason)
		}
		if len(g.nodes) > 1 {
			line += s.faint.Render(" (" + esc(nodeRange(g.nodes, s.ellipsis())) + ")")
		}
		fmt.Fprintln(w, line)
	}
	if hidden > 0 {
		fmt.Fprintf(w, "    %s\n", s.faint.Render(fmt.Sprintf("%s %d more nodes did not pass (-o wide lists them)", s.ellipsis(), hidden)))
	}
	if okNodes > 0 && okNodes < len(l.Nodes) {
		fmt.Fprintf(w, "    %s %s\n", s.mark(report.StatusPass), s.faint.Render(plural(okNodes, "other node")+" passed"))
	}
	// A finding whose details differ on every node (its own endpoints,
	// say) is shown in full on the first few and counted on the rest.
	variants := map[string]int{}
	rest := map[string][]string{}
	var restOrder []foldedCheck
	for _, f := range foldChecks(other) {
		key := f.check.Code + "\x00" + string(f.check.Status)
		if f.check.Node != "" && variants[key] >= conciseVariants {
			if rest[key] == nil {
				restOrder = append(restOrder, f)
			}
			rest[key] = append(rest[key], f.nodes...)
			continue
		}
		variants[key]++
		writeCheck(w, s, f.check, f.nodes)
	}
	for _, f := range restOrder {
		nodes := rest[f.check.Code+"\x00"+string(f.check.Status)]
		line := fmt.Sprintf("    %s %s %s", s.mark(f.check.Status), s.bold.Render(f.check.Code),
			s.faint.Render(fmt.Sprintf("also on %s, with details of their own (-o wide lists them): %s", plural(len(nodes), "more node"), esc(nodeRange(nodes, s.ellipsis())))))
		fmt.Fprintln(w, line)
	}
	if sum := summary(); sum != "" {
		writeWrapped(w, "    "+s.faint.Render("also"), 8, s.faint.Render(sum), 9)
	}
}

// foldedCheck is one finding and the nodes that reported it.
type foldedCheck struct {
	check report.Check
	nodes []string
}

// foldChecks merges checks that differ only in their node, so a fault seen
// by 100 nodes prints once with its evidence.
func foldChecks(checks []report.Check) []foldedCheck {
	var out []foldedCheck
	idx := map[string]int{}
	for _, c := range checks {
		key := c.Code + "\x00" + string(c.Status) + "\x00" + c.Message
		if c.Node != "" {
			key = c.Code + "\x00" + string(c.Status) + "\x00" + strings.ReplaceAll(c.Message, c.Node, "\x01")
		}
		if i, ok := idx[key]; ok && c.Node != "" {
			out[i].nodes = append(out[i].nodes, c.Node)
			continue
		}
		idx[key] = len(out)
		f := foldedCheck{check: c}
		if c.Node != "" {
			f.nodes = []string{c.Node}
		}
		out = append(out, f)
	}
	return out
}

// writeCheck prints one check with its evidence and next step, as the
// detailed view does; a folded check names every node that reported it.
func writeCheck(w io.Writer, s *textStyle, c report.Check, nodes []string) {
	line := fmt.Sprintf("    %s %s %s", s.mark(c.Status), s.bold.Render(c.Code), esc(c.Message))
	switch {
	case len(nodes) > 1:
		line += s.faint.Render(fmt.Sprintf(" (%s: %s)", plural(len(nodes), "node"), esc(nodeRange(nodes, s.ellipsis()))))
	case c.Node != "":
		line += s.faint.Render(" (node " + esc(c.Node) + ")")
	}
	fmt.Fprintln(w, line)
	writeEvidence(w, s, c)
}
