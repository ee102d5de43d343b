package trace

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// withKubeRouter is healthyIPT plus the filter chains kube-router v2.1.0
// creates, as collectors/testdata/iptables/kube-router-v2.1.0-*.filter.save
// (saved on the testbed) hold them.
func withKubeRouter() *collectorapi.IPTablesObservation {
	o := healthyIPT()
	o.Backends[0].PolicyEnforcer = collectorapi.PolicyEnforcerKubeRouter
	o.Backends[0].PolicyEnforcerChains = []string{"KUBE-ROUTER-FORWARD", "KUBE-ROUTER-INPUT", "KUBE-ROUTER-OUTPUT"}
	return o
}

// A policy isolates web-1 (n1) and web-2 (n2): n1 runs kube-router, n2
// shows no enforcer. The caveat NP006 gives way to one answer per node.
func TestPolicyEnforcementPerNode(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	tr := judgeViews(t, in,
		plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, withKubeRouter(), nil)},
		plan.NodeView{Node: "n2", Observation: withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil),
			[]string{"KUBE-FIREWALL", "KUBE-FORWARD", "KUBE-SERVICES"}, "ip filter", "ip nat")})
	c, ok := nodeCodes(tr, report.LayerPolicy, "n1")[report.CodeNPEnforced]
	if !ok || !strings.Contains(c.Message, "kube-router") || !strings.Contains(c.Message, "KUBE-ROUTER-FORWARD") || !strings.Contains(c.Message, "web-1") {
		t.Errorf("n1: %v %q", ok, c.Message)
	}
	assertNoCode(t, tr, report.LayerPolicy, "n1", report.CodeNPNotEnforced)
	c, ok = nodeCodes(tr, report.LayerPolicy, "n2")[report.CodeNPNotEnforced]
	if !ok || c.Severity != report.SeverityWarning || !strings.Contains(c.Message, "default/web-from-frontend") || !strings.Contains(c.Message, "web-2") {
		t.Errorf("n2: %v %+v", ok, c)
	}
	assertNoCode(t, tr, report.LayerPolicy, "", report.CodeNPEnforcement)
}

// A node whose collector failed leaves the caveat in place and says
// nothing about that node.
func TestPolicyEnforcementNodeNotInspected(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	tr := judgeViews(t, in,
		plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, withKubeRouter(), nil)},
		plan.NodeView{Node: "n2", Failure: "collector Pod not scheduled"})
	if _, ok := nodeCodes(tr, report.LayerPolicy, "")[report.CodeNPEnforcement]; !ok {
		t.Error("NP006 dropped although n2 was not inspected")
	}
	assertNoCode(t, tr, report.LayerPolicy, "n2", report.CodeNPEnforced, report.CodeNPNotEnforced, report.CodeNPEnforcementUnknown)
	if _, ok := nodeCodes(tr, report.LayerPolicy, "n1")[report.CodeNPEnforced]; !ok {
		t.Error("no NP020 on n1")
	}
}

// An eBPF datapath enforces policies itself: no "not enforced" warning,
// and an unread iptables section is said to be why nothing is known.
func TestPolicyEnforcementEBPFAndUnread(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	cil := observation(t, collectorapi.ModeCilium, nil, nil)
	cil.Sections.Proxy.Data.Fingerprints = []collectorapi.Fingerprint{{Mode: collectorapi.ModeCilium, Check: "pinned map cilium_lb4_services_v2", Found: true}}
	unread := observation(t, collectorapi.ModeIPTables, nil, nil)
	unread.Sections.IPTables = &collectorapi.Section[collectorapi.IPTablesObservation]{Status: collectorapi.StatusError, Error: "permission denied"}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: cil}, plan.NodeView{Node: "n2", Observation: unread})
	for node, want := range map[string]string{"n1": "cilium", "n2": "permission denied"} {
		c, ok := nodeCodes(tr, report.LayerPolicy, node)[report.CodeNPEnforcementUnknown]
		if !ok || !strings.Contains(c.Message, want) {
			t.Errorf("%s: %v %q, want NP022 naming %q", node, ok, c.Message, want)
		}
		assertNoCode(t, tr, report.LayerPolicy, node, report.CodeNPNotEnforced)
	}
}

// Without NetworkPolicies nothing is said about enforcement.
func TestPolicyEnforcementNoPolicies(t *testing.T) {
	tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)})
	assertNoCode(t, tr, report.LayerPolicy, "", report.CodeNPEnforced, report.CodeNPNotEnforced, report.CodeNPEnforcementUnknown)
}

// withNetfilter records what the collector saw of the filter table's hooks
// (every backend) and the node's nf_tables tables.
func withNetfilter(o *collectorapi.Observation, jumps []string, tables ...string) *collectorapi.Observation {
	for i := range o.Sections.IPTables.Data.Backends {
		b := &o.Sections.IPTables.Data.Backends[i]
		b.FilterJumps, b.FilterJumpsRead = jumps, true
	}
	if tables == nil {
		tables = []string{}
	}
	o.Sections.Proxy.Data.NetfilterTables = tables
	return o
}

// "Not enforced" (NP021) is said only where every hook of the filter table
// and every nf_tables table was read and belongs to a program that enforces
// no NetworkPolicy; an enforcer svctrace does not read, or anything it does
// not recognise, is named and makes the answer undetermined (NP022).
func TestPolicyEnforcementOnlyWhereKnown(t *testing.T) {
	kubeProxy := []string{"KUBE-FIREWALL", "KUBE-FORWARD", "KUBE-PROXY-FIREWALL", "KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-NODEPORTS"}
	iptNFT := []string{"ip filter", "ip nat", "ip6 filter", "ip6 nat", "ip mangle"}
	for _, tc := range []struct {
		name   string
		obs    func(*testing.T) *collectorapi.Observation
		want   string
		naming []string
	}{
		{"kube-proxy, CNI portmap and flannel only", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil),
				append([]string{"CNI-FORWARD", "FLANNEL-FWD", "ACCEPT"}, kubeProxy...), append(iptNFT, "ip kube-proxy")...)
		}, report.CodeNPNotEnforced, nil},
		{"Calico's iptables dataplane", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil), append([]string{"cali-FORWARD", "cali-INPUT"}, kubeProxy...), iptNFT...)
		}, report.CodeNPEnforcementUnknown, []string{"cali-FORWARD", "Calico"}},
		{"Antrea", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil), append([]string{"ANTREA-FORWARD"}, kubeProxy...), iptNFT...)
		}, report.CodeNPEnforcementUnknown, []string{"ANTREA-FORWARD", "Antrea"}},
		{"OVN-Kubernetes", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil), append([]string{"OVN-KUBE-EXTERNALIP"}, kubeProxy...), iptNFT...)
		}, report.CodeNPEnforcementUnknown, []string{"OVN-Kubernetes"}},
		{"Weave Net", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil), append([]string{"WEAVE-NPC-EGRESS"}, kubeProxy...), iptNFT...)
		}, report.CodeNPEnforcementUnknown, []string{"WEAVE-NPC-EGRESS", "Weave"}},
		{"Azure NPM", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil), append([]string{"AZURE-NPM"}, kubeProxy...), iptNFT...)
		}, report.CodeNPEnforcementUnknown, []string{"AZURE-NPM", "Azure"}},
		{"AWS VPC CNI", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil), append([]string{"AWS-SNAT-CHAIN-0"}, kubeProxy...), iptNFT...)
		}, report.CodeNPEnforcementUnknown, []string{"AWS VPC CNI"}},
		{"kube-network-policies' table", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeNFTables, healthyIPT(), nil), kubeProxy, "ip kube-proxy", "inet kube-network-policies")
		}, report.CodeNPEnforcementUnknown, []string{"inet kube-network-policies"}},
		{"kube-router in nftables mode", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeNFTables, healthyIPT(), nil), nil, "ip kube-proxy", "inet kube-router")
		}, report.CodeNPEnforcementUnknown, []string{"inet kube-router", "kube-router's nftables mode"}},
		{"Calico's nftables dataplane", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeNFTables, healthyIPT(), nil), nil, "ip calico", "ip6 calico")
		}, report.CodeNPEnforcementUnknown, []string{"ip calico"}},
		{"an unrecognised hook", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil), append([]string{"MYFW-FORWARD"}, kubeProxy...), iptNFT...)
		}, report.CodeNPEnforcementUnknown, []string{"MYFW-FORWARD", "not recognised"}},
		{"an unrecognised table", func(t *testing.T) *collectorapi.Observation {
			return withNetfilter(observation(t, collectorapi.ModeIPTables, healthyIPT(), nil), kubeProxy, "ip filter", "inet myfirewall")
		}, report.CodeNPEnforcementUnknown, []string{"inet myfirewall"}},
		{"an older collector: hooks and tables not read", func(t *testing.T) *collectorapi.Observation {
			return observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
		}, report.CodeNPEnforcementUnknown, []string{"not read", "nf_tables table list"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := nodeInput()
			in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: tc.obs(t)})
			c := wantCode(t, tr, report.LayerPolicy, "n1", tc.want, tc.naming...)
			other := report.CodeNPNotEnforced
			if tc.want == other {
				other = report.CodeNPEnforcementUnknown
			}
			assertNoCode(t, tr, report.LayerPolicy, "n1", other, report.CodeNPEnforced)
			if tc.want == report.CodeNPNotEnforced && c.Status != report.StatusWarn {
				t.Errorf("NP021 status %s", c.Status)
			}
		})
	}
}
