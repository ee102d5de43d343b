package trace

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/iptables"
	"github.com/svctrace/kubectl-svctrace/collectors/nftables"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// These tests judge what the real readers read from the real kube-proxy
// v1.37.2's rules of the testbed (collectors/testdata/iptables/testbed-node1.save,
// collectors/testdata/nftables/testbed-node2.list, the API objects in
// testbed-api.json), restored into namespaces of their own: every reader of
// a backend must lead to the same judgement, and the masquerade path is
// judged on the rules kube-proxy wrote and on the same rules with one piece
// of it removed.

const realNode = "svtb-node1"

// realInput is the trace Input for one Service of the recorded API objects.
func realInput(t *testing.T, name string) *input.Input {
	t.Helper()
	b, err := os.ReadFile("../collectors/testdata/iptables/testbed-api.json")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	in := &input.Input{Namespace: "nf-fixtures", Name: name, Nodes: map[string]*corev1.Node{}}
	for _, raw := range list.Items {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Service":
			var s corev1.Service
			if err := json.Unmarshal(raw, &s); err != nil {
				t.Fatal(err)
			}
			if s.Name == name {
				in.Service = &s
			}
		case "EndpointSlice":
			var sl discoveryv1.EndpointSlice
			if err := json.Unmarshal(raw, &sl); err != nil {
				t.Fatal(err)
			}
			if sl.Labels[discoveryv1.LabelServiceName] != name {
				continue
			}
			in.Slices = append(in.Slices, sl)
			for _, e := range sl.Endpoints {
				if e.NodeName != nil {
					in.Nodes[*e.NodeName] = node(*e.NodeName, true)
				}
			}
		}
	}
	if in.Service == nil {
		t.Fatalf("no Service %s", name)
	}
	in.Nodes[realNode] = node(realNode, true)
	return in
}

var nfacctMatch = regexp.MustCompile(` -m nfacct --nfacct-name +\S+`)

// restoredIPTables restores the testbed node's iptables-nft-save dump with
// restore (iptables-nft-restore or iptables-legacy-restore), without
// kube-proxy's "-m nfacct" matches (its nfacct objects are not in a fresh
// namespace), then applies the fault commands.
func restoredIPTables(t *testing.T, restore string, fault ...[]string) *netns.NS {
	t.Helper()
	b, err := os.ReadFile("../collectors/testdata/iptables/testbed-node1.save")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules")
	if err := os.WriteFile(path, nfacctMatch.ReplaceAll(b, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := netns.New(t, "trc")
	ns.MustRun(t, restore, path)
	for _, f := range fault {
		ns.MustRun(t, f...)
	}
	return ns
}

// iptReaders are the ways one backend is read: the kernel reader (netlink
// with reference counts, or the legacy blob) and the text reader.
var iptReaders = []struct {
	name, backend, restore, reader string
}{
	{"nf_tables netlink", collectorapi.IPTablesBackendNFTables, "iptables-nft-restore", ""},
	{"nf_tables text", collectorapi.IPTablesBackendNFTables, "iptables-nft-restore", iptables.ReaderText},
	{"legacy blob", collectorapi.IPTablesBackendLegacy, "iptables-legacy-restore", ""},
	{"legacy text", collectorapi.IPTablesBackendLegacy, "iptables-legacy-restore", iptables.ReaderText},
}

// judgeRealIPTables reads name from ns with one reader and judges it.
func judgeRealIPTables(t *testing.T, ns *netns.NS, name, backend, reader string) (*report.ServiceTrace, collectorapi.IPTablesBackendObservation) {
	t.Helper()
	s := fixture.TestbedService(t, name)
	obs, err := iptables.Read(context.Background(), iptables.Query{Service: s.Spec, Endpoints: s.Endpoints, NetNS: ns.Path(),
		Backends: []string{backend}, Reader: reader})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Backends) != 1 || obs.Backends[0].Error != "" || !obs.Backends[0].KubeProxyChains {
		t.Fatalf("%s: %+v", name, obs.Backends)
	}
	return judgeViews(t, realInput(t, name), plan.NodeView{Node: realNode, Observation: observation(t, collectorapi.ModeIPTables, obs, nil)}), obs.Backends[0]
}

// datapathJudgement is the datapath layer's checks on the node as
// "code status", sorted.
func datapathJudgement(tr *report.ServiceTrace) string {
	var out []string
	for _, c := range tr.Layer(report.LayerDatapath).Checks {
		if c.Node == realNode {
			out = append(out, c.Code+" "+string(c.Status))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Every reader of the real kube-proxy's rules leads to the same judgement,
// the reference counts of the nf_tables netlink reader included; the healthy
// masquerade path passes.
func TestRealIPTablesReadersJudgedAlike(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "nsenter")
	nss := map[string]*netns.NS{}
	for _, r := range iptReaders {
		if nss[r.restore] == nil {
			nss[r.restore] = restoredIPTables(t, r.restore)
		}
	}
	for _, name := range []string{"web", "sticky", "lb", "empty", "itp", "term", "extip", "big"} {
		var first, firstReader string
		for _, r := range iptReaders {
			tr, b := judgeRealIPTables(t, nss[r.restore], name, r.backend, r.reader)
			if r.name == "nf_tables netlink" && b.EntryProof != collectorapi.IPTablesEntryProofReferences {
				t.Errorf("%s: netlink reader proof %q (%s)", name, b.EntryProof, b.EntryProofFallback)
			}
			assertNoCode(t, tr, report.LayerDatapath, realNode, report.CodeDPMasqNoRule, report.CodeDPMasqNoJump)
			got := datapathJudgement(tr)
			if first == "" {
				first, firstReader = got, r.name
				continue
			}
			if got != first {
				t.Errorf("%s: %s judged %s; %s judged %s", name, r.name, got, firstReader, first)
			}
		}
		if first == "" {
			t.Errorf("%s: no datapath checks", name)
		}
	}
}

// The masquerade path with a piece removed from the real rules, through
// every reader: KUBE-POSTROUTING without its MASQUERADE rule (DP051), with
// a RETURN for every packet first (DP051), and nat POSTROUTING without its
// jump to KUBE-POSTROUTING (DP052).
func TestRealIPTablesMasqueradePathJudged(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "iptables-nft", "iptables-legacy", "nsenter")
	for _, c := range []struct {
		name  string
		fault []string // iptables arguments, run with the backend's command
		code  string
		msg   string
	}{
		{"MASQUERADE rule deleted", []string{"-t", "nat", "-D", "KUBE-POSTROUTING", "-m", "comment", "--comment", "kubernetes service traffic requiring SNAT", "-j", "MASQUERADE", "--random-fully"},
			report.CodeDPMasqNoRule, "has no MASQUERADE rule for packets marked 0x4000"},
		{"RETURN before MASQUERADE", []string{"-t", "nat", "-I", "KUBE-POSTROUTING", "1", "-j", "RETURN"},
			report.CodeDPMasqNoRule, "ends marked packets with"},
		{"POSTROUTING jump deleted", []string{"-t", "nat", "-D", "POSTROUTING", "-m", "comment", "--comment", "kubernetes postrouting rules", "-j", "KUBE-POSTROUTING"},
			report.CodeDPMasqNoJump, "does not jump to KUBE-POSTROUTING"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range iptReaders {
				cmd := map[string]string{"iptables-nft-restore": "iptables-nft", "iptables-legacy-restore": "iptables-legacy"}[r.restore]
				ns := restoredIPTables(t, r.restore, append([]string{cmd}, c.fault...))
				tr, _ := judgeRealIPTables(t, ns, "web", r.backend, r.reader)
				chk := wantCode(t, tr, report.LayerDatapath, realNode, c.code, c.msg)
				if chk.Status != report.StatusFail || chk.Evidence == nil || len(chk.Evidence.Raw) == 0 || chk.NextStep == "" {
					t.Errorf("%s: %s %s, evidence %v, next step %q", r.name, chk.Code, chk.Status, chk.Evidence, chk.NextStep)
				}
			}
		})
	}
}

// kube-proxy's nftables mode on the testbed's second node: the masquerade
// path passes as written, and fails without its masquerade rule (DP051) or
// without nat-postrouting's jump (DP052), read through netlink and through
// nft --json alike.
func TestRealNFTablesMasqueradePathJudged(t *testing.T) {
	netns.RequireTools(t, "nft", "nsenter")
	for _, c := range []struct {
		name  string
		fault func(t *testing.T, ns *netns.NS)
		code  string
		msg   string
	}{
		{"as kube-proxy wrote it", nil, "", ""},
		{"masquerade rule deleted", func(t *testing.T, ns *netns.NS) {
			out := ns.MustRun(t, "nft", "-a", "list", "chain", "ip", "kube-proxy", "masquerading")
			m := regexp.MustCompile(`meta mark .* masquerade .*# handle (\d+)`).FindStringSubmatch(out)
			if m == nil {
				t.Fatalf("no mark rule in %s", out)
			}
			ns.MustRun(t, "nft", "delete", "rule", "ip", "kube-proxy", "masquerading", "handle", m[1])
		}, report.CodeDPMasqNoRule, "no masquerade rule for packets marked 0x4000"},
		{"nat-postrouting flushed", func(t *testing.T, ns *netns.NS) {
			ns.MustRun(t, "nft", "flush", "chain", "ip", "kube-proxy", "nat-postrouting")
		}, report.CodeDPMasqNoJump, "does not jump to chain masquerading"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ns := netns.New(t, "trc")
			ns.MustRun(t, "nft", "-f", "../collectors/testdata/nftables/testbed-node2.list")
			if c.fault != nil {
				c.fault(t, ns)
			}
			s := fixture.TestbedService(t, "web")
			for _, cli := range []bool{false, true} {
				obs, err := nftables.Read(context.Background(), nftables.Query{Service: s.Spec, Endpoints: s.Endpoints, NetNS: ns.Path(), ForceCLI: cli})
				if err != nil {
					t.Fatal(err)
				}
				tr := judgeViews(t, realInput(t, "web"), plan.NodeView{Node: realNode, Observation: observation(t, collectorapi.ModeNFTables, nil, obs)})
				if c.code == "" {
					assertNoCode(t, tr, report.LayerDatapath, realNode, report.CodeDPMasqNoRule, report.CodeDPMasqNoJump)
					continue
				}
				chk := wantCode(t, tr, report.LayerDatapath, realNode, c.code, c.msg)
				if chk.Status != report.StatusFail || chk.Evidence == nil || len(chk.Evidence.Raw) == 0 {
					t.Errorf("cli=%v: %s %s, evidence %v", cli, chk.Code, chk.Status, chk.Evidence)
				}
			}
		})
	}
}

// The real rules without web's cluster IP jump in KUBE-SERVICES: the
// netlink reader's reference counts do not match, it reads KUBE-SERVICES,
// and both nf_tables readers fail the datapath alike.
func TestRealIPTablesMissingEntryJudgedAlike(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-nft", "nsenter")
	ns := restoredIPTables(t, "iptables-nft-restore", []string{"iptables-nft", "-t", "nat", "-D", "KUBE-SERVICES", "-d", "10.96.219.249/32", "-p", "tcp",
		"-m", "comment", "--comment", "nf-fixtures/web:http cluster IP", "-m", "tcp", "--dport", "80", "-j", "KUBE-SVC-EZNMPPQBOZVU5VUP"})
	netlinkTrace, b := judgeRealIPTables(t, ns, "web", collectorapi.IPTablesBackendNFTables, "")
	textTrace, _ := judgeRealIPTables(t, ns, "web", collectorapi.IPTablesBackendNFTables, iptables.ReaderText)
	if b.EntryProof != collectorapi.IPTablesEntryProofRules || b.EntryProofFallback == "" {
		t.Errorf("netlink reader proof %q, fallback %q", b.EntryProof, b.EntryProofFallback)
	}
	got, want := datapathJudgement(netlinkTrace), datapathJudgement(textTrace)
	if got != want || !strings.Contains(got, " fail") {
		t.Errorf("netlink judged %q, text %q; want the same failure", got, want)
	}
}
