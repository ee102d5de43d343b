package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// TestSharesFoldRows: identical splits share a row, a folded row (sameAs)
// joins its referent's, and a different split gets its own.
func TestSharesFoldRows(t *testing.T) {
	eps := []report.EndpointShare{{Endpoint: "10.244.1.5:8080", Share: 0.5}, {Endpoint: "10.244.2.7:8080", Share: 0.5}}
	row := func(node string, eps []report.EndpointShare, sameAs string) report.NodeShares {
		return report.NodeShares{Node: node, Datapath: "iptables (nf_tables, IPv4)", Source: report.ShareProgrammed,
			Why: []string{"Cluster policy: every ready endpoint"}, Endpoints: eps, SameAs: sameAs}
	}
	tbl := &report.ShareTable{Ports: []report.SharePort{{Port: "default/web:http (80/TCP)", Nodes: []report.NodeShares{
		row("n1", eps, ""), row("n2", eps, ""), row("n3", []report.EndpointShare{}, "n1"),
		row("n4", []report.EndpointShare{{Endpoint: "10.244.1.5:8080", Share: 1}}, ""),
	}}}}
	var b bytes.Buffer
	writeShares(&b, newTextStyle(&b, TextOptions{}), tbl, false)
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a title and two rows:\n%s", out)
	}
	if !strings.HasPrefix(lines[1], "  n1, n2, n3  10.244.1.5:8080 50%  10.244.2.7:8080 50%") {
		t.Errorf("folded row: %q", lines[1])
	}
	if !strings.HasPrefix(lines[2], "  n4  10.244.1.5:8080 100%") {
		t.Errorf("own row: %q", lines[2])
	}
}
