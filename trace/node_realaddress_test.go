package trace

import (
	"context"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/nftables"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fixture"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// The testbed's extip Service (externalIP 198.51.100.5) as the real
// kube-proxy v1.37.2 wrote it, and the same rules without its externalIP
// entry: KUBE-SERVICES' "-d 198.51.100.5/32 … -j KUBE-EXT-…" rule, through
// every iptables reader (the netlink reader's reference counts no longer
// match and it reads KUBE-SERVICES), and service-ips' element, through
// netlink and nft --json. The external chain is still there, so the old
// judge passed the port (DP015).
func TestRealExternalIPEntryMissing(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "iptables-nft", "iptables-legacy", "nft", "nsenter")
	const frontend = "externalIP 198.51.100.5:80/TCP"
	judged := func(t *testing.T, tr *report.ServiceTrace, missing bool, how string) {
		t.Helper()
		if !missing {
			assertNoCode(t, tr, report.LayerDatapath, realNode, report.CodeDPExternalAddressMissing)
			wantCode(t, tr, report.LayerDatapath, realNode, report.CodeDPRulesMatch, "")
			return
		}
		chk := wantCode(t, tr, report.LayerDatapath, realNode, report.CodeDPExternalAddressMissing, frontend)
		if chk.Status != report.StatusFail || chk.NextStep == "" {
			t.Errorf("%s: %s %s, next step %q", how, chk.Code, chk.Status, chk.NextStep)
		}
		assertNoCode(t, tr, report.LayerDatapath, realNode, report.CodeDPRulesMatch)
	}
	for _, missing := range []bool{false, true} {
		for _, r := range iptReaders {
			cmd := map[string]string{"iptables-nft-restore": "iptables-nft", "iptables-legacy-restore": "iptables-legacy"}[r.restore]
			var fault [][]string
			if missing {
				fault = append(fault, []string{cmd, "-t", "nat", "-D", "KUBE-SERVICES", "-d", "198.51.100.5/32", "-p", "tcp",
					"-m", "comment", "--comment", "nf-fixtures/extip:http external IP", "-m", "tcp", "--dport", "80", "-j", "KUBE-EXT-XDZOPTEFO6RN5VPH"})
			}
			ns := restoredIPTables(t, r.restore, fault...)
			tr, _ := judgeRealIPTables(t, ns, "extip", r.backend, r.reader)
			judged(t, tr, missing, r.name)
		}
		ns := netns.New(t, "trc")
		ns.MustRun(t, "nft", "-f", "../collectors/testdata/nftables/testbed-node2.list")
		if missing {
			ns.MustRun(t, "nft", "delete", "element", "ip", "kube-proxy", "service-ips", "{ 198.51.100.5 . tcp . 80 }")
		}
		s := fixture.TestbedService(t, "extip")
		for _, cli := range []bool{false, true} {
			obs, err := nftables.Read(context.Background(), nftables.Query{Service: s.Spec, Endpoints: s.Endpoints, NetNS: ns.Path(), ForceCLI: cli})
			if err != nil {
				t.Fatal(err)
			}
			tr := judgeViews(t, realInput(t, "extip"), plan.NodeView{Node: realNode, Observation: observation(t, collectorapi.ModeNFTables, nil, obs)})
			judged(t, tr, missing, "nftables")
		}
	}
}
