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
