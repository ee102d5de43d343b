package render

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// glyph is a status mark in its Unicode and ASCII forms.
type glyph struct{ unicode, ascii string }

var glyphs = map[report.Status]glyph{
	report.StatusPass:    {"✔", "[ok]"},
	report.StatusFail:    {"✖", "[FAIL]"},
	report.StatusWarn:    {"!", "[warn]"},
	report.StatusSkipped: {"–", "[skip]"},
	report.StatusUnknown: {"?", "[??]"},
}

// ANSI color numbers per status; fixed (not adaptive) so no terminal query
// is ever made and goldens are stable.
var statusColors = map[report.Status]string{
	report.StatusPass:    "2",
	report.StatusFail:    "1",
	report.StatusWarn:    "3",
	report.StatusSkipped: "8",
	report.StatusUnknown: "5",
}

// textStyle holds the lipgloss styles of one rendering.
type textStyle struct {
	opts   TextOptions
	status map[report.Status]lipgloss.Style
	bold   lipgloss.Style
	faint  lipgloss.Style
	key    lipgloss.Style
}

func newTextStyle(w io.Writer, opts TextOptions) *textStyle {
	r := lipgloss.NewRenderer(w)
	if opts.Color {
		r.SetColorProfile(termenv.ANSI)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	r.SetHasDarkBackground(true)
	s := &textStyle{opts: opts, status: map[report.Status]lipgloss.Style{},
		bold: r.NewStyle().Bold(true), faint: r.NewStyle().Faint(true), key: r.NewStyle().Foreground(lipgloss.Color("6"))}
	for st, c := range statusColors {
		s.status[st] = r.NewStyle().Foreground(lipgloss.Color(c)).Bold(st == report.StatusFail)
	}
	return s
}

func (s *textStyle) mark(st report.Status) string {
	g, ok := glyphs[st]
	if !ok {
		g = glyphs[report.StatusUnknown]
	}
	if s.opts.ASCII {
		// ASCII marks differ in width; pad them so columns line up.
		return s.status[st].Render(g.ascii) + strings.Repeat(" ", 6-len(g.ascii))
	}
	return s.status[st].Render(g.unicode)
}

func (s *textStyle) word(st report.Status, text string) string { return s.status[st].Render(text) }

func (s *textStyle) arrow() string {
	if s.opts.ASCII {
		return "->"
	}
	return "→"
}

func (s *textStyle) ellipsis() string {
	if s.opts.ASCII {
		return "..."
	}
	return "…"
}

// esc neutralizes terminal control sequences in cluster-supplied strings.
func esc(v string) string { return printers.EscapeTerminal(v) }

// Text writes the human view: the verdict on top, the path as a picture, the
// node × endpoint grid when several nodes were inspected, the Service and
// its endpoints, then the layers. By default a passing layer is one line
// (what was checked, how often) and only failing, warning and unknown checks
// show their evidence and next step; Details (-o wide) shows every check's.
func Text(w io.Writer, t *report.ServiceTrace, opts TextOptions) error {
	bw := bufio.NewWriter(w)
	s := newTextStyle(w, opts)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }

	name := esc(t.Subject())
	v := t.Verdict
	p("%s %s %s\n", s.mark(v.Status), s.bold.Render(name), s.word(v.Status, strings.ToUpper(string(v.Status))))
	p("  %s\n", esc(v.Summary))
	if v.LikelyCause != "" {
		p("  %s %s\n", s.bold.Render("likely cause:"), esc(v.LikelyCause))
	}
	meta := []string{"svctrace " + esc(orDash(t.Metadata.SvctraceVersion))}
	if t.Metadata.Context != "" {
		meta = append(meta, "context "+esc(t.Metadata.Context))
	}
	if t.Metadata.Port != "" {
		meta = append(meta, "port "+esc(t.Metadata.Port))
	}
	meta = append(meta, "domain "+esc(t.Metadata.ClusterDomain), t.Metadata.Time.UTC().Format("2006-01-02T15:04:05Z"))
	p("  %s\n", s.faint.Render(strings.Join(meta, "  ")))
	if c := t.Metadata.Collector; c != nil {
		p("  %s\n", s.faint.Render(collectorLine(c)))
	}

	p("\n")
	writePath(bw, s, t)
	if m := t.Matrix; m != nil && gridRowsCount(m) > 1 {
		p("\n")
		writeGrid(bw, s, m)
	}
	if t.Shares != nil {
		p("\n")
		writeShares(bw, s, t.Shares, opts.Details)
	}
	if opts.Details {
		if t.Service.Found {
			p("\n")
			writeService(bw, s, t)
			writeEndpoints(bw, s, t)
		}
		for _, l := range t.Layers {
			p("\n")
			writeLayer(bw, s, &l)
		}
		return bw.Flush()
	}
	if t.Service.Found {
		p("\n")
		writeServiceConcise(bw, s, t)
		writeEndpointsConcise(bw, s, t)
	}
	p("\n")
	for _, l := range t.Layers {
		writeLayerConcise(bw, s, &l)
	}
	return bw.Flush()
}

func writeService(w io.Writer, s *textStyle, t *report.ServiceTrace) {
	svc := &t.Service
	kind := svc.Type
	if svc.Headless {
		kind += " (headless)"
	}
	fmt.Fprintf(w, "%s %s\n", s.bold.Render("Service"), esc(kind))
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "  %s %s\n", s.key.Render(fmt.Sprintf("%-24s", k)), v)
		}
	}
	kv("clusterIPs", esc(strings.Join(svc.ClusterIPs, ", ")))
	kv("ipFamilies", esc(joinNonEmpty(strings.Join(svc.IPFamilies, ", "), svc.IPFamilyPolicy, " ")))
	kv("externalName", esc(svc.ExternalName))
	kv("externalIPs", esc(strings.Join(svc.ExternalIPs, ", ")))
	kv("loadBalancerIngress", esc(strings.Join(svc.LoadBalancerIngress, ", ")))
	for _, port := range svc.Ports {
		desc := fmt.Sprintf("%d/%s", port.Port, port.Protocol)
		if port.Name != "" {
			desc = port.Name + " " + desc
		}
		if port.TargetPort != "" {
			desc += " " + s.arrow() + " " + port.TargetPort
		}
		if port.NodePort != 0 {
			desc += fmt.Sprintf(" (nodePort %d)", port.NodePort)
		}
		kv("port", esc(desc))
	}
	kv("selector", esc(labelsString(svc.Selector)))
	if svc.SessionAffinity != "" {
		aff := svc.SessionAffinity
		if svc.SessionAffinityTimeoutSeconds != nil {
			aff += fmt.Sprintf(" (timeout %ds)", *svc.SessionAffinityTimeoutSeconds)
		}
		kv("sessionAffinity", esc(aff))
	}
	kv("externalTrafficPolicy", esc(svc.ExternalTrafficPolicy))
	kv("internalTrafficPolicy", esc(svc.InternalTrafficPolicy))
	if svc.HealthCheckNodePort != 0 {
		kv("healthCheckNodePort", fmt.Sprint(svc.HealthCheckNodePort))
	}
	kv("trafficDistribution", esc(svc.TrafficDistribution))
	kv("topologyMode", esc(svc.TopologyMode))
	if svc.PublishNotReadyAddresses {
		kv("publishNotReadyAddresses", "true")
	}
	kv("serviceProxyName", esc(svc.ServiceProxyName))
}

func writeEndpoints(w io.Writer, s *textStyle, t *report.ServiceTrace) {
	e := &t.Endpoints
	if len(e.Slices) == 0 && e.Total == 0 {
		return
	}
	fmt.Fprintf(w, "%s %d total, %d ready, %d serving, %d terminating, in %s\n", s.bold.Render("Endpoints"),
		e.Total, e.Ready, e.Serving, e.Terminating, plural(len(e.Slices), "EndpointSlice"))
	for _, sl := range e.Slices {
		var ports []string
		for _, p := range sl.Ports {
			ports = append(ports, fmt.Sprintf("%s %d/%s", orDash(p.Name), p.Port, p.Protocol))
		}
		fmt.Fprintf(w, "  %s %s %s, managed by %s, %s, ports %s\n", s.key.Render("slice"), esc(sl.Name),
			esc(sl.AddressType), esc(orDash(sl.ManagedBy)), plural(sl.Endpoints, "endpoint"), esc(orDash(strings.Join(ports, ", "))))
	}
	limit := s.opts.MaxEndpoints
	if limit == 0 {
		limit = DefaultMaxEndpoints
	}
	for i, ep := range e.Endpoints {
		if limit > 0 && i >= limit {
			fmt.Fprintf(w, "  %s\n", s.faint.Render(fmt.Sprintf("%s %d more endpoints (-o json lists all)", s.ellipsis(), len(e.Endpoints)-limit)))
			break
		}
		st, cond := report.StatusPass, "ready"
		switch {
		case ep.Ready && ep.Terminating:
			st, cond = report.StatusWarn, "ready,terminating"
		case ep.Ready:
		case ep.Serving && ep.Terminating:
			st, cond = report.StatusWarn, "serving,terminating"
		case ep.Terminating:
			st, cond = report.StatusFail, "terminating"
		default:
			st, cond = report.StatusFail, "not ready"
		}
		parts := []string{fmt.Sprintf("%-20s", esc(ep.IP)), fmt.Sprintf("%-20s", cond)}
		if ep.Node != "" {
			parts = append(parts, "node "+esc(ep.Node))
		}
		if ep.Zone != "" {
			parts = append(parts, "zone "+esc(ep.Zone))
		}
		if ep.Pod != nil {
			parts = append(parts, "pod "+esc(ep.Pod.Name))
		}
		if ep.Hints != nil {
			var h []string
			if len(ep.Hints.Zones) > 0 {
				h = append(h, "zones="+strings.Join(ep.Hints.Zones, ","))
			}
			if len(ep.Hints.Nodes) > 0 {
				h = append(h, "nodes="+strings.Join(ep.Hints.Nodes, ","))
			}
			parts = append(parts, "hints "+esc(strings.Join(h, " ")))
		}
		parts = append(parts, "slice "+esc(ep.Slice))
		fmt.Fprintf(w, "  %s %s\n", s.mark(st), strings.TrimRight(strings.Join(parts, "  "), " "))
	}
}

func writeLayer(w io.Writer, s *textStyle, l *report.Layer) {
	head := fmt.Sprintf("%s %s %s", s.mark(l.Status), s.bold.Render(fmt.Sprintf("%-10s", l.Name)), s.word(l.Status, string(l.Status)))
	if l.Reason != "" && l.Status != report.StatusPass {
		head += ": " + esc(l.Reason)
	}
	fmt.Fprintln(w, head)
	for _, n := range l.Nodes {
		line := fmt.Sprintf("    %s node %s %s", s.mark(n.Status), esc(n.Node), s.word(n.Status, string(n.Status)))
		if n.Reason != "" {
			line += ": " + esc(n.Reason)
		}
		fmt.Fprintln(w, line)
	}
	for _, c := range l.Checks {
		line := fmt.Sprintf("    %s %s %s", s.mark(c.Status), s.bold.Render(c.Code), esc(c.Message))
		if c.Node != "" {
			line += s.faint.Render(" (node " + esc(c.Node) + ")")
		}
		fmt.Fprintln(w, line)
		writeEvidence(w, s, c)
	}
}

// writeEvidence prints a check's evidence fields and raw lines, bounded, and
// its next step unless it passed.
func writeEvidence(w io.Writer, s *textStyle, c report.Check) {
	indent := "           "
	if c.Evidence != nil {
		for _, f := range c.Evidence.Fields {
			val := f.Value
			if len(f.Items) > 0 {
				items := f.Items
				if len(items) > evidenceItems {
					items = append(slices.Clone(items[:evidenceItems]), fmt.Sprintf("%s %d more in -o json", s.ellipsis(), len(f.Items)-evidenceItems))
				}
				val = strings.Join(items, ", ")
			}
			if f.Set != "" {
				// A shared list, spelled out once in -o json.
				val = fmt.Sprintf("%s (endpointSets %s in -o json)", f.Value, f.Set)
				if len(f.Except) > 0 {
					val += fmt.Sprintf(", all but %s", strings.Join(f.Except[:min(len(f.Except), evidenceItems)], ", "))
					if len(f.Except) > evidenceItems {
						val += fmt.Sprintf(" %s %d more", s.ellipsis(), len(f.Except)-evidenceItems)
					}
				}
			}
			fmt.Fprintf(w, "%s%s %s\n", indent, s.key.Render(esc(f.Key)+":"), esc(clip(val, s)))
		}
		for _, r := range c.Evidence.Raw {
			if s.opts.ASCII {
				r = strings.ReplaceAll(r, "…", "...") // the "… N more" of a long listing
			}
			fmt.Fprintf(w, "%s%s\n", indent+"  ", s.faint.Render(esc(clip(r, s))))
		}
	}
	if c.NextStep != "" && c.Status != report.StatusPass {
		fmt.Fprintf(w, "%s%s %s\n", indent, s.arrow(), esc(c.NextStep))
	}
}

func labelsString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ",")
}

func joinNonEmpty(a, b, sep string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + sep + b
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// collectorLine says where the node facts came from and with which
// privileges: which nodes ran a collector (and why they were chosen), which
// could not, the profile and the image.
func collectorLine(c *report.CollectorRun) string {
	var ran, not []string
	for _, n := range c.Nodes {
		name := esc(n.Node)
		notes := slices.Clone(n.Roles)
		if n.Cordoned {
			notes = append(notes, "cordoned")
		}
		if len(notes) > 0 {
			name += " (" + esc(strings.Join(notes, ", ")) + ")"
		}
		if n.Inspected {
			ran = append(ran, name)
		} else {
			not = append(not, esc(n.Node))
		}
	}
	privs := slices.Clone(c.Capabilities)
	if c.HostPID {
		privs = append(privs, "hostPID")
	}
	line := "no node inspected"
	switch {
	case len(ran) > maxCollectorNodes:
		line = fmt.Sprintf("collectors on %d nodes (%s)", len(ran), esc(strings.Join(collectorRoles(c), ", ")))
	case len(ran) > 0:
		line = "collectors on " + strings.Join(ran, ", ")
	}
	if len(not) > 0 {
		line += "; not inspected: " + strings.Join(not, ", ")
	}
	line += "  profile " + esc(c.Profile)
	if len(privs) > 0 {
		line += " (" + esc(strings.Join(privs, ", ")) + ")"
	}
	return line + "  image " + esc(c.Image) + " in " + esc(c.Namespace)
}

// maxCollectorNodes is how many inspected nodes the collector line names;
// beyond it, it counts them (-o json lists every one).
const maxCollectorNodes = 6

// collectorRoles are the distinct reasons the inspected nodes were chosen.
func collectorRoles(c *report.CollectorRun) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range c.Nodes {
		for _, r := range n.Roles {
			if n.Inspected && !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// The terminal view shows a bounded part of large evidence: a 5,000-endpoint
// Service would otherwise print 100 KB lines (its endpoint list, an nftables
// map). -o json and -o yaml keep all of it.
const (
	evidenceItems   = 20
	evidenceLineMax = 400
)

// clip shortens one evidence line to evidenceLineMax bytes (at a rune
// boundary) and says how much was left out.
func clip(v string, s *textStyle) string {
	if len(v) <= evidenceLineMax {
		return v
	}
	cut := evidenceLineMax
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%s%s (%d more bytes in -o json)", v[:cut], s.ellipsis(), len(v)-cut)
}
