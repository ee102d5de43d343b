package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestPathShortensThenWraps: long hop details (an IPv6 ClusterIP with a
// NodePort and more ports) shorten before the hops wrap, and every line
// stays inside 80 columns in Unicode and ASCII.
func TestPathShortensThenWraps(t *testing.T) {
	tr := findScenario(t, "nodes-healthy").trace()
	tr.Service.Type = "NodePort"
	tr.Service.ClusterIPs = []string{"fd00:10:96:ffff:ffff:ffff:ffff:1234"}
	tr.Service.Ports = []report.ServicePortSummary{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}, {Name: "https", Protocol: "TCP", Port: 443, NodePort: 30443}}
	for _, opts := range []TextOptions{{}, {ASCII: true}} {
		var buf bytes.Buffer
		writePath(&buf, newTextStyle(&buf, opts), tr)
		for _, l := range strings.Split(strings.TrimRight(buf.String(), "\n"), "\n") {
			if width(l) > lineWidth {
				t.Errorf("ascii=%v: %d columns: %q", opts.ASCII, width(l), l)
			}
		}
		if !strings.Contains(buf.String(), "Service") || !strings.Contains(buf.String(), "endpoints") {
			t.Errorf("a hop went missing:\n%s", buf.String())
		}
	}
	// With room, the NodePort is shown beside the ClusterIP port.
	tr.Service.ClusterIPs = []string{"10.96.0.20"}
	tr.Service.Ports = tr.Service.Ports[:1]
	var buf bytes.Buffer
	writePath(&buf, newTextStyle(&buf, TextOptions{}), tr)
	if !strings.Contains(buf.String(), "10.96.0.20:80 :30080") {
		t.Errorf("NodePort not shown:\n%s", buf.String())
	}
}

// TestPathStartsAtTheClient: with --from, the first hop is that client.
func TestPathStartsAtTheClient(t *testing.T) {
	tr := findScenario(t, "nodes-failing").trace()
	tr.Metadata.Client = "pod/shop/frontend-7d9f8c6b5-xk2lp"
	var buf bytes.Buffer
	writePath(&buf, newTextStyle(&buf, TextOptions{}), tr)
	out := buf.String()
	if !strings.HasPrefix(out, "  pod frontend-7d9f8c6b5-xk2lp ─▶ DNS") {
		t.Errorf("path does not start at the client:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if width(l) > lineWidth {
			t.Errorf("%d columns: %q", width(l), l)
		}
	}
}

// TestPathNamesTheBrokenFamily: a dual-stack Service's picture asks DNS for
// both record types, shows both ClusterIPs, and a node whose worst findings
// are all about one family says which; a node failing in both says none.
func TestPathNamesTheBrokenFamily(t *testing.T) {
	tr := findScenario(t, "nodes-failing").trace()
	tr.Service.ClusterIPs = []string{"10.96.0.20", "fd00:10:96::20"}
	tr.Service.IPFamilies = []string{"IPv4", "IPv6"}
	tr.Service.Ports = tr.Service.Ports[:1]
	l := tr.Layer(report.LayerDatapath)
	failing := ""
	for i := range l.Checks {
		if l.Checks[i].Status == report.StatusFail && l.Checks[i].Node != "" {
			failing = l.Checks[i].Node
		}
	}
	if failing == "" {
		t.Fatal("scenario nodes-failing has no failing node check in the datapath layer")
	}
	draw := func() string {
		var buf bytes.Buffer
		writePath(&buf, newTextStyle(&buf, TextOptions{}), tr)
		return buf.String()
	}
	setFamily := func(f func(i int) string) {
		n := 0
		for i := range l.Checks {
			if l.Checks[i].Node == failing && l.Checks[i].Status == report.StatusFail {
				l.Checks[i].Family = f(n)
				n++
			}
		}
	}
	setFamily(func(int) string { return "IPv6" })
	out := draw()
	if got := dnsDetails(tr); got[0] != "A+AAAA records" {
		t.Errorf("DNS detail %q, want both record types", got)
	}
	for _, want := range []string{"10.96.0.20", "IPv6", failing, "datapath (IPv6): "} {
		if !strings.Contains(out, want) {
			t.Errorf("picture lacks %q:\n%s", want, out)
		}
	}
	setFamily(func(i int) string { return []string{"IPv4", "IPv6"}[i%2] })
	if n := countFailing(l, failing); n > 1 && strings.Contains(draw(), "(IPv") {
		t.Errorf("a node failing in both families is drawn as one family's:\n%s", draw())
	}
	tr.Service.ClusterIPs, tr.Service.IPFamilies = []string{"fd00:10:96::20"}, []string{"IPv6"}
	setFamily(func(int) string { return "IPv6" })
	if got := dnsDetails(tr); got[0] != "AAAA record" {
		t.Errorf("single-stack IPv6: DNS detail %q, want AAAA only", got)
	}
	if out := draw(); strings.Contains(out, "(IPv6)") {
		t.Errorf("single-stack IPv6: want AAAA only and no family note:\n%s", out)
	}
}

func countFailing(l *report.Layer, node string) int {
	n := 0
	for _, c := range l.Checks {
		if c.Node == node && c.Status == report.StatusFail {
			n++
		}
	}
	return n
}
