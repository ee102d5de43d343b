package render

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// maxShareEndpoints bounds the endpoints listed per share row; the rest are counted.
const maxShareEndpoints = 8

// shareRow is one printed row: one node's split, or identical splits of several nodes.
type shareRow struct {
	nodes []string
	ns    report.NodeShares
}

// writeShares prints, per Service port, which endpoints get what share of
// each inspected node's new connections and why that set. Nodes with the
// same split share a row: one line each by default, the datapath and every
// reason on lines of their own with details (-o wide).
func writeShares(w io.Writer, s *textStyle, t *report.ShareTable, details bool) {
	for pi, p := range t.Ports {
		if pi > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s %s  %s\n", s.bold.Render("Shares"), esc(p.Port), s.faint.Render("of each node's new connections to the ClusterIP"))
		var rows []shareRow
		index := map[string]int{}
		for _, n := range p.Nodes {
			if i, ok := index["node:"+n.SameAs]; ok && n.SameAs != "" {
				rows[i].nodes = append(rows[i].nodes, n.Node)
				continue
			}
			k := shareKey(n)
			if i, ok := index[k]; ok {
				rows[i].nodes = append(rows[i].nodes, n.Node)
				continue
			}
			index[k], index["node:"+n.Node] = len(rows), len(rows)
			rows = append(rows, shareRow{nodes: []string{n.Node}, ns: n})
		}
		for _, r := range rows {
			if details {
				writeShareRow(w, s, r)
			} else {
				writeShareLine(w, s, r)
			}
		}
	}
}

// writeShareLine is a row on one line: nodes, shares, then why in short.
func writeShareLine(w io.Writer, s *textStyle, r shareRow) {
	n := r.ns
	body := n.Reason
	if len(n.Endpoints) > 0 {
		body = endpointShares(s, n.Endpoints, false)
	}
	why := joinNonEmpty(strings.Join(n.Why, "; "), n.Balancer, "; ")
	if n.Source == report.ShareExpected {
		why = joinNonEmpty("expected, not read", why, "; ")
	}
	if len(n.Endpoints) > 0 {
		why = joinNonEmpty(why, n.Reason, "; ")
	}
	fmt.Fprintf(w, "  %s  %s  %s\n", s.bold.Render(esc(nodesLabel(r.nodes))), esc(orDash(body)), s.faint.Render("("+esc(why)+")"))
}

func nodesLabel(nodes []string) string {
	if len(nodes) > 3 {
		return fmt.Sprintf("%s and %d more", strings.Join(nodes[:3], ", "), len(nodes)-3)
	}
	return strings.Join(nodes, ", ")
}

func writeShareRow(w io.Writer, s *textStyle, r shareRow) {
	n := r.ns
	label := nodesLabel(r.nodes)
	how := joinNonEmpty(n.Datapath, n.Balancer, ", ")
	if n.Source == report.ShareExpected {
		how = joinNonEmpty(how, "expected, not read", ", ")
	}
	fmt.Fprintf(w, "  %s  %s\n", s.bold.Render(esc(label)), s.faint.Render(esc(orDash(how))))
	for _, why := range n.Why {
		fmt.Fprintf(w, "    %s\n", s.faint.Render(esc(why)))
	}
	if n.Reason != "" {
		fmt.Fprintf(w, "    %s\n", esc(n.Reason))
	}
	if len(n.Endpoints) == 0 {
		if n.Reason == "" {
			fmt.Fprintf(w, "    %s\n", "no endpoint")
		}
		return
	}
	fmt.Fprintf(w, "    %s\n", endpointShares(s, n.Endpoints, true))
}

// endpointShares lists at most maxShareEndpoints endpoints with their
// shares; withNode adds each endpoint's node and weight.
func endpointShares(s *textStyle, eps []report.EndpointShare, withNode bool) string {
	var parts []string
	for i, e := range eps {
		if i == maxShareEndpoints {
			parts = append(parts, fmt.Sprintf("%s %d more", s.ellipsis(), len(eps)-i))
			break
		}
		part := esc(e.Endpoint) + " " + percent(e.Share)
		var extra []string
		if e.Weight != nil {
			extra = append(extra, "weight "+strconv.Itoa(*e.Weight))
		}
		if e.Node != "" && withNode {
			extra = append(extra, esc(e.Node))
		}
		if len(extra) > 0 {
			part += " (" + strings.Join(extra, ", ") + ")"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "  ")
}

// shareKey is what makes two nodes' rows identical.
func shareKey(n report.NodeShares) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|%s|%s", n.Datapath, n.Source, n.Balancer, strings.Join(n.Why, ";"), n.Reason, "")
	for _, e := range n.Endpoints {
		w := -1
		if e.Weight != nil {
			w = *e.Weight
		}
		fmt.Fprintf(&b, "%s=%.4f/%d/%s;", e.Endpoint, e.Share, w, e.Node)
	}
	return b.String()
}
