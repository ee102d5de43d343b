package render

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// WatchText writes what changed between two consecutive traces of a watch,
// one line per change, each stamped with the time of the later trace: the
// endpoints whose conditions moved (the rollout's timeline), the nodes whose
// node-layer result moved (rules following, or not), the findings added
// (+), gone (-) and changed (~), and the verdict when it moved. It writes
// nothing when nothing changed.
//
// nodesAt, when not zero, is when the nodes were last read, earlier than
// the API state this trace judged: every line about a node then says so,
// because what it reports about the rules is as of that read (kube-proxy
// may have caught up since), not an observation at the stamped time.
func WatchText(w io.Writer, at, nodesAt time.Time, d *report.TraceDiff, endpoints []report.EndpointChange, opts TextOptions) error {
	bw := bufio.NewWriter(w)
	s := newTextStyle(w, opts)
	stamp := s.faint.Render(at.UTC().Format("15:04:05"))
	p := func(format string, a ...any) { fmt.Fprintf(bw, stamp+" "+format+"\n", a...) }
	asOf := func(node string) string {
		if node == "" || nodesAt.IsZero() {
			return ""
		}
		return " " + s.faint.Render("(node as read at "+nodesAt.UTC().Format("15:04:05")+")")
	}
	state := func(v string) string {
		if v == "" {
			return s.faint.Render("(none)")
		}
		st := report.StatusWarn
		switch {
		case v == "ready":
			st = report.StatusPass
		case v == "not ready", v == "terminating":
			st = report.StatusFail
		}
		return s.word(st, v)
	}
	for _, e := range endpoints {
		who := []string{}
		if e.Pod != nil {
			who = append(who, "pod "+esc(e.Pod.Name))
		}
		if e.Node != "" {
			who = append(who, esc(e.Node))
		}
		id := esc(e.IP)
		if len(who) > 0 {
			id += " (" + strings.Join(who, ", ") + ")"
		}
		p("%s %s %s %s %s", s.key.Render("endpoint"), id, state(e.Before), s.arrow(), state(e.After))
	}
	for _, n := range d.Nodes {
		p("%s %s %s %s %s%s", s.key.Render(string(n.Layer)), esc(n.Node), statusCell(s, n.Before), s.arrow(), statusCell(s, n.After), asOf(n.Node))
	}
	for _, f := range d.Added {
		p("+ %s %s: %s%s", s.mark(f.Status), findingHead(s, f.Layer, f.Code, f.Node, ""), esc(f.Message), asOf(f.Node))
	}
	for _, f := range d.Gone {
		p("- %s %s: %s%s", s.mark(f.Status), findingHead(s, f.Layer, f.Code, f.Node, ""), esc(f.Message), asOf(f.Node))
	}
	for _, c := range d.Changed {
		p("~ %s %s: %s %s %s: %s%s", s.mark(c.After.Status), findingHead(s, c.Layer, c.Code, c.Node, ""),
			s.word(c.Before.Status, string(c.Before.Status)), s.arrow(), s.word(c.After.Status, string(c.After.Status)), esc(c.After.Message), asOf(c.Node))
	}
	b, a := d.Before.Verdict, d.After.Verdict
	if b.Status != a.Status || b.Code != a.Code || b.Node != a.Node {
		p("%s %s %s %s %s%s", s.bold.Render("verdict"), s.word(b.Status, strings.ToUpper(string(b.Status))), s.arrow(),
			s.mark(a.Status), s.word(a.Status, strings.ToUpper(string(a.Status))+verdictCode(a)), asOf(a.Node))
		if a.Summary != "" {
			p("  %s", esc(a.Summary))
		}
	}
	return bw.Flush()
}

func verdictCode(v report.Verdict) string {
	out := ""
	if v.Code != "" {
		out += " " + v.Code
	}
	if v.Node != "" {
		out += " on " + v.Node
	}
	return out
}
