package render

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// PrintDiff renders a comparison of two traces in format ("" text, "json",
// "yaml"). JSON and YAML are the trace.TraceDiff document.
func PrintDiff(w io.Writer, d *report.TraceDiff, format string, opts TextOptions) error {
	switch format {
	case FormatText:
		return DiffText(w, d, opts)
	case FormatJSON:
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(d)
	case FormatYAML:
		b, err := yaml.Marshal(d)
		if err != nil {
			return fmt.Errorf("encoding YAML: %w", err)
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown output format %q", format)
}

// DiffText writes the human view of a comparison: one line per side with
// its verdict, the layers whose status moved, then the findings added (+),
// gone (-) and changed (~), each with its layer, code and node.
func DiffText(w io.Writer, d *report.TraceDiff, opts TextOptions) error {
	bw := bufio.NewWriter(w)
	s := newTextStyle(w, opts)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }

	name := esc(d.After.Service.Namespace + "/" + d.After.Service.Name)
	if b := d.Before.Service; b.Namespace != d.After.Service.Namespace || b.Name != d.After.Service.Name {
		name = esc(b.Namespace+"/"+b.Name) + " " + s.arrow() + " " + name
	}
	if d.Empty() {
		p("%s: no difference\n", s.bold.Render(name))
	} else {
		p("%s: %d added, %d gone, %d changed\n", s.bold.Render(name), len(d.Added), len(d.Gone), len(d.Changed))
	}
	for _, sd := range []struct {
		label string
		side  report.DiffSide
	}{{"before", d.Before}, {"after ", d.After}} {
		v := sd.side.Verdict
		line := fmt.Sprintf("  %s %s %s %s", s.faint.Render(sd.label), s.faint.Render(sd.side.Time.UTC().Format("2006-01-02T15:04:05Z")),
			s.mark(v.Status), s.word(v.Status, strings.ToUpper(string(v.Status))))
		if v.Code != "" {
			line += " " + esc(v.Code)
			if v.Node != "" {
				line += " " + s.faint.Render("on") + " " + esc(v.Node)
			}
		}
		if sd.side.Source != "" {
			line += "  " + s.faint.Render(esc(sd.side.Source))
		}
		p("%s\n", line)
	}
	if d.Before.Service.UID != "" && d.After.Service.UID != "" && d.Before.Service.UID != d.After.Service.UID {
		p("  %s\n", s.word(report.StatusWarn, "the Service was recreated in between (uid "+esc(d.Before.Service.UID)+" "+s.arrow()+" "+esc(d.After.Service.UID)+")"))
	}
	if len(d.Layers) > 0 {
		p("\n%s\n", s.bold.Render("Layers"))
		for _, l := range d.Layers {
			p("  %-10s %s %s %s %s %s\n", l.Name, s.mark(l.Before), s.word(l.Before, orDash(string(l.Before))), s.arrow(),
				s.mark(l.After), s.word(l.After, orDash(string(l.After))))
		}
	}
	if len(d.Nodes) > 0 {
		p("\n%s\n", s.bold.Render("Nodes"))
		for _, n := range d.Nodes {
			p("  %-10s %-12s %s %s %s\n", n.Layer, esc(n.Node), statusCell(s, n.Before), s.arrow(), statusCell(s, n.After))
		}
	}
	section := func(title, sign string, fs []report.Finding) {
		if len(fs) == 0 {
			return
		}
		p("\n%s\n", s.bold.Render(title))
		for _, f := range fs {
			p("  %s %s %s\n", sign, s.mark(f.Status), findingHead(s, f.Layer, f.Code, f.Node, f.Title))
			p("      %s\n", esc(f.Message))
		}
	}
	section("Added", "+", d.Added)
	section("Gone", "-", d.Gone)
	if len(d.Changed) > 0 {
		p("\n%s\n", s.bold.Render("Changed"))
		for _, c := range d.Changed {
			b, a := c.Before, c.After
			p("  ~ %s %s %s %s\n", s.mark(a.Status), findingHead(s, c.Layer, c.Code, c.Node, a.Title),
				s.word(b.Status, string(b.Status)), s.arrow()+" "+s.word(a.Status, string(a.Status)))
			if b.Message != a.Message {
				p("      %s %s\n", s.faint.Render("was:"), esc(b.Message))
				p("      %s %s\n", s.faint.Render("now:"), esc(a.Message))
			} else {
				p("      %s\n", esc(a.Message))
			}
		}
	}
	return bw.Flush()
}

func findingHead(s *textStyle, layer report.LayerName, code, node, title string) string {
	head := s.key.Render(string(layer)) + " " + s.bold.Render(esc(code))
	if node != "" {
		head += " " + s.faint.Render("on") + " " + esc(node)
	}
	if title != "" {
		head += ": " + esc(title)
	}
	return head
}

// statusCell is a status with its mark, or "(none)" for a node or layer
// absent from that trace.
func statusCell(s *textStyle, st report.Status) string {
	if st == "" {
		return s.faint.Render("(none)")
	}
	return s.mark(st) + " " + s.word(st, string(st))
}
