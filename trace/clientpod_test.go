package trace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// clientView is node n1's observation with the client Pod's own probes.
func clientView(t *testing.T, nodeProbes []collectorapi.Probe, c *collectorapi.ClientProbeObservation) plan.NodeView {
	t.Helper()
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	obs.Sections.Probe = probes(nodeProbes...)
	obs.Sections.Probe.Data.Client = c
	return plan.NodeView{Node: "n1", Roles: []string{plan.RoleClient}, Profile: "netadmin+netns", Observation: obs}
}

func clientProbes(name string, ps ...collectorapi.Probe) *collectorapi.ClientProbeObservation {
	return &collectorapi.ClientProbeObservation{Namespace: "default", Name: name, PID: 4242, Command: "sleep", NetNS: "net:[4026532999]", Probes: ps}
}

func mustCode(t *testing.T, tr *report.ServiceTrace, layer report.LayerName, code string, wants ...string) report.Check {
	t.Helper()
	c, ok := nodeCodes(tr, layer, "n1")[code]
	if !ok {
		t.Fatalf("no %s in %s: %s", code, layer, summarizeChecks(tr.Layer(layer)))
	}
	for _, w := range wants {
		if !strings.Contains(c.Message, w) {
			t.Errorf("%s message %q lacks %q", code, c.Message, w)
		}
	}
	return c
}

// The node is kept out of web-2 by the policy, the admitted client reaches
// it from its own namespace: the node's failure is no fault, and the report
// says the client's view was probed and how.
func TestClientPassClearsNodeFailuresThePolicyExplains(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	client := pod("frontend", "frontend", "10.244.1.9", "n1")
	v := clientView(t,
		[]collectorapi.Probe{probe("clusterIP", "http", "10.96.0.20:80", "failed", "timeout"),
			probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
			probe("endpoint", "http", "10.244.2.7:8080", "failed", "timeout")},
		clientProbes("frontend", probe("clusterIP", "http", "10.96.0.20:80", "connected", ""),
			probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
			probe("endpoint", "http", "10.244.2.7:8080", "connected", "")))
	tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
	mustCode(t, tr, report.LayerRoute, report.CodeRTClientProbed, "pod default/frontend", "net:[4026532999]", "node n1", "netadmin+netns", "3 of 3")
	mustCode(t, tr, report.LayerRoute, report.CodeRTClientClearsNode, "10.244.2.7:8080")
	assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPodTimeout, report.CodeRTClientTimeout)
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPClusterIPFails, report.CodeDPClientClusterIPFails)
	assertNoCode(t, tr, report.LayerPolicy, "n1", report.CodeNPClientDropSeen, report.CodeNPClientNotEnforced)
	if tr.Verdict.Status == report.StatusFail {
		t.Fatalf("verdict fail at %s: %s", tr.Verdict.FirstFailingLayer, tr.Verdict.LikelyCause)
	}
}

// The policy admits the client, yet web-2 times out from its namespace:
// a route fault for this client, not a policy one.
func TestClientFailureNoPolicyExplainsIsARouteFault(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	client := pod("frontend", "frontend", "10.244.1.9", "n1")
	v := clientView(t, nil, clientProbes("frontend",
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "failed", "timeout")))
	tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
	c := mustCode(t, tr, report.LayerRoute, report.CodeRTClientTimeout, "10.244.2.7:8080 (timeout)", "pod default/frontend")
	if c.Status != report.StatusFail || tr.Layer(report.LayerRoute).Status != report.StatusFail {
		t.Fatalf("RT022 %s, route layer %s; want fail", c.Status, tr.Layer(report.LayerRoute).Status)
	}
	assertNoCode(t, tr, report.LayerPolicy, "n1", report.CodeNPClientDropSeen)
}

// A denied client's timeouts are the policy's drop seen happening.
func TestDeniedClientFailureIsAPolicyFinding(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	client := pod("intruder", "intruder", "10.244.1.10", "n1")
	v := clientView(t, nil, clientProbes("intruder",
		probe("clusterIP", "http", "10.96.0.20:80", "failed", "timeout"),
		probe("endpoint", "http", "10.244.1.5:8080", "failed", "timeout"),
		probe("endpoint", "http", "10.244.2.7:8080", "failed", "timeout")))
	tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
	c, ok := nodeCodes(tr, report.LayerPolicy, "n1")[report.CodeNPClientDropSeen]
	if !ok || c.Status != report.StatusFail || !strings.Contains(c.Message, "default/web-from-frontend") || !strings.Contains(c.Message, "clusterIP 10.96.0.20:80") {
		t.Fatalf("NP011 = %+v; policy: %s", c, summarizeChecks(tr.Layer(report.LayerPolicy)))
	}
	assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTClientTimeout)
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPClientClusterIPFails)
	if tr.Verdict.FirstFailingLayer != report.LayerPolicy {
		t.Errorf("first failing layer %s, want policy", tr.Verdict.FirstFailingLayer)
	}
}

// A denied client that connects: the policy is not enforced.
func TestDeniedClientConnectsPolicyNotEnforced(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	client := pod("intruder", "intruder", "10.244.1.10", "n1")
	v := clientView(t, nil, clientProbes("intruder", probe("endpoint", "http", "10.244.2.7:8080", "connected", "")))
	tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
	c, ok := nodeCodes(tr, report.LayerPolicy, "n1")[report.CodeNPClientNotEnforced]
	if !ok || c.Status != report.StatusWarn || !strings.Contains(c.Message, "web-2") {
		t.Fatalf("NP012 = %+v; policy: %s", c, summarizeChecks(tr.Layer(report.LayerPolicy)))
	}
}

// The client reaches both endpoints directly but not the ClusterIP.
func TestClientClusterIPFailsWhileEndpointsAnswer(t *testing.T) {
	in := nodeInput()
	client := pod("frontend", "frontend", "10.244.1.9", "n1")
	v := clientView(t, nil, clientProbes("frontend",
		probe("clusterIP", "http", "10.96.0.20:80", "failed", "timeout"),
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "connected", "")))
	tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
	c := mustCode(t, tr, report.LayerDatapath, report.CodeDPClientClusterIPFails, "clusterIP 10.96.0.20:80/TCP (timeout)", "2 endpoint(s)")
	if c.Status != report.StatusFail {
		t.Fatalf("DP055 %s", c.Status)
	}
}

func TestClientProbesSkippedSaysHowToEnable(t *testing.T) {
	in := nodeInput()
	client := pod("frontend", "frontend", "10.244.1.9", "n1")
	v := clientView(t, nil, &collectorapi.ClientProbeObservation{Namespace: "default", Name: "frontend",
		Skipped: "not asked: the collector on the client's node runs without the netadmin+netns profile"})
	tr := judgeFrom(t, in, report.PolicyClientFromPod(client), v)
	c := mustCode(t, tr, report.LayerRoute, report.CodeRTClientSkipped, "node n1's network namespace", "not asked")
	if !strings.Contains(c.NextStep, "--client-netns") || c.Status != report.StatusPass {
		t.Fatalf("RT021 next step %q status %s", c.NextStep, c.Status)
	}
}

func TestClientResolver(t *testing.T) {
	q := func(name, rcode string, answers ...string) collectorapi.ClientQuery {
		return collectorapi.ClientQuery{Name: name, Type: "A", Server: "10.96.0.10:53", Rcode: rcode, Answers: answers}
	}
	base := collectorapi.ClientResolver{Nameservers: []string{"10.96.0.10"}, Ndots: 5, Name: "web",
		Search: []string{"tools.svc.cluster.local", "default.svc.cluster.local", "svc.cluster.local", "cluster.local"}}
	tests := []struct {
		name   string
		mut    func(r *collectorapi.ClientResolver)
		code   string
		status report.Status
		wants  []string
	}{
		{"a search domain holds the same short name", func(r *collectorapi.ClientResolver) {
			r.Answered, r.Addrs = "web.tools.svc.cluster.local.", []string{"10.96.7.7"}
			r.Queries = []collectorapi.ClientQuery{q("web.tools.svc.cluster.local.", "NOERROR", "A 10.96.7.7")}
		}, report.CodeDNSClientElsewhere, report.StatusWarn,
			[]string{"web.tools.svc.cluster.local.", "10.96.7.7", "not the Service web.default.svc.cluster.local", "web.tools.svc.cluster.local. A @10.96.0.10:53: NOERROR 10.96.7.7"}},
		{"the Service's own name answers after an NXDOMAIN", func(r *collectorapi.ClientResolver) {
			r.Answered, r.Addrs = "web.default.svc.cluster.local.", []string{"10.96.0.20"}
			r.Queries = []collectorapi.ClientQuery{q("web.tools.svc.cluster.local.", "NXDOMAIN"),
				q("web.default.svc.cluster.local.", "NOERROR", "A 10.96.0.20")}
		}, report.CodeDNSClientResolves, report.StatusPass,
			[]string{"web.tools.svc.cluster.local. A @10.96.0.10:53: NXDOMAIN; web.default.svc.cluster.local."}},
		{"nothing answers", func(r *collectorapi.ClientResolver) {
			r.Queries = []collectorapi.ClientQuery{q("web.tools.svc.cluster.local.", "NXDOMAIN"), {Name: "web.default.svc.cluster.local.", Type: "A", Server: "10.96.0.10:53", Error: "i/o timeout"}}
		}, report.CodeDNSClientNoAnswer, report.StatusFail,
			[]string{"got no address for web", "web.default.svc.cluster.local. A @10.96.0.10:53: i/o timeout", "ndots 5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInput()
			client := pod("frontend", "frontend", "10.244.1.9", "n1")
			r := base
			tt.mut(&r)
			c := clientProbes("frontend")
			c.Resolver = &r
			tr := judgeFrom(t, in, report.PolicyClientFromPod(client), clientView(t, nil, c))
			got := mustCode(t, tr, report.LayerDNS, tt.code, tt.wants...)
			if got.Status != tt.status {
				t.Errorf("%s status %s, want %s", tt.code, got.Status, tt.status)
			}
		})
	}
}

func TestHairpin(t *testing.T) {
	hp := func(hits, connected, failed int, errText string) *collectorapi.HairpinProbe {
		return &collectorapi.HairpinProbe{Frontend: "10.96.0.20:80", Self: "10.244.1.5:8080", Attempts: connected + failed,
			SelfHits: hits, Connected: connected, Failed: failed, Error: errText, PeerAddress: map[bool]string{true: "10.0.0.11"}[hits > 0]}
	}
	tests := []struct {
		name    string
		hairpin *collectorapi.HairpinProbe
		noMasq  bool
		code    string
		wants   []string
	}{
		{"reached itself, masquerade rule present", hp(1, 3, 0, ""), false, report.CodeDPHairpinOK,
			[]string{"reached itself (10.244.1.5:8080)", "seen from 10.0.0.11", "KUBE-SEP-1", "-s 10.244.1.5 -j KUBE-MARK-MASQ", "0x4000/0x4000"}},
		{"the connections sent back to itself are lost", hp(0, 2, 2, "i/o timeout"), true, report.CodeDPHairpinFails,
			[]string{"2 of 4", "none reached the Pod itself", "has no \"-s 10.244.1.5 -j KUBE-MARK-MASQ\" rule"}},
		{"bridge port without hairpin_mode", func() *collectorapi.HairpinProbe {
			h := hp(0, 0, 3, "i/o timeout")
			h.HostInterface, h.BridgeHairpinMode = "veth1a2b", "0"
			return h
		}(), false, report.CodeDPHairpinFails,
			[]string{"bridge port veth1a2b has hairpin_mode 0", "KUBE-MARK-MASQ"}},
		{"never picked itself", hp(0, 16, 0, ""), false, report.CodeDPHairpinNotSelected,
			[]string{"16 connection(s)", "not exercised"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := nodeInput()
			client := in.Pods[0].DeepCopy() // web-1 is its own Service's client
			ipt := healthyIPT()
			b := &ipt.Backends[0]
			b.MasqMark = "0x4000/0x4000"
			b.MarkMasq = []collectorapi.IPTablesRule{{Raw: "-A KUBE-MARK-MASQ -j MARK --set-xmark 0x4000/0x4000"}}
			if !tt.noMasq {
				b.Ports[0].Endpoints[0].Hairpin = "10.244.1.5"
			}
			obs := observation(t, collectorapi.ModeIPTables, ipt, nil)
			c := clientProbes("web-1")
			c.Hairpin = tt.hairpin
			obs.Sections.Probe = probes()
			obs.Sections.Probe.Data.Client = c
			tr := judgeFrom(t, in, report.PolicyClientFromPod(client), plan.NodeView{Node: "n1", Observation: obs})
			mustCode(t, tr, report.LayerDatapath, tt.code, tt.wants...)
		})
	}
}

func TestPlanNamesTheClientPodOnlyToItsNode(t *testing.T) {
	in := nodeInput()
	client := pod("frontend", "frontend", "10.244.1.9", "n1")
	client.UID = "uid-frontend"
	np := plan.PlanNodes(in, plan.NodeSelection{}, report.PolicyClientFromPod(client), "")
	for _, n := range np.Nodes {
		c := n.CollectRequest().Client
		switch n.Name {
		case "n1":
			if c == nil || c.UID != "uid-frontend" || c.Namespace != "default" || c.Name != "frontend" || len(c.IPs) != 1 || c.IPs[0] != "10.244.1.9" || c.EnterNetns {
				t.Errorf("n1 client = %+v", c)
			}
		default:
			if c != nil {
				t.Errorf("%s is not the client's node, got client %+v", n.Name, c)
			}
		}
	}
	host := client.DeepCopy()
	host.Spec.HostNetwork = true
	for _, n := range plan.PlanNodes(in, plan.NodeSelection{}, report.PolicyClientFromPod(host), "").Nodes {
		if n.CollectRequest().Client != nil {
			t.Errorf("a host-network client's namespace is the node's: %+v", n.CollectRequest().Client)
		}
	}
}

// kube-proxy's nftables proxier hairpins through a set, not per-endpoint
// marks: the evidence says so instead of claiming a rule is missing.
func TestHairpinNFTablesNamesTheSet(t *testing.T) {
	in := nodeInput()
	client := in.Pods[0].DeepCopy()
	obs := observation(t, collectorapi.ModeNFTables, nil, &collectorapi.NFTablesObservation{Tables: []collectorapi.NFTablesTableObservation{{Family: "ip", Name: "kube-proxy", Present: true}}})
	c := clientProbes("web-1")
	c.Hairpin = &collectorapi.HairpinProbe{Frontend: "10.96.0.20:80", Self: "10.244.1.5:8080", Attempts: 2, SelfHits: 1, Connected: 2, PeerAddress: "10.0.0.11"}
	obs.Sections.Probe = probes()
	obs.Sections.Probe.Data.Client = c
	tr := judgeFrom(t, in, report.PolicyClientFromPod(client), plan.NodeView{Node: "n1", Observation: obs})
	mustCode(t, tr, report.LayerDatapath, report.CodeDPHairpinOK, "hairpin-connections set (10.244.1.5 . 10.244.1.5 . tcp . 8080)")
}

// internalTrafficPolicy Local with the only endpoint on n2: n1 drops the
// ClusterIP by design (DP027, a warning for the node). For a client named
// with --from on n1 that drop is the failure, stated with its cause; for a
// client on n2, and without --from, it stays a warning.
func TestClientOnNodeDroppingByDesign(t *testing.T) {
	local := corev1.ServiceInternalTrafficPolicyLocal
	for _, tc := range []struct {
		name string
		from *report.PolicyClient
		fail bool
	}{
		{"client on the dropping node", report.PolicyClientFromPod(pod("frontend", "frontend", "10.244.1.9", "n1")), true},
		{"node client on the dropping node", &report.PolicyClient{NodeName: "n1"}, true},
		{"client on the endpoint's node", report.PolicyClientFromPod(pod("frontend", "frontend", "10.244.2.9", "n2")), false},
		{"no --from", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := nodeInput(func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = &local })
			in.Slices[0].Endpoints = in.Slices[0].Endpoints[1:] // only web-2 on n2
			in.Pods = in.Pods[1:]
			obs := filterOnly(t, "default/web:http has no local endpoints", "DROP")
			obs.Sections.Probe = probes(
				probe("clusterIP", "http", "10.96.0.20:80", "failed", "timeout"),
				probe("endpoint", "http", "10.244.2.7:8080", "connected", ""))
			tr := judgeFrom(t, in, tc.from, plan.NodeView{Node: "n1", Observation: obs})
			requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPDroppedByDesign, "n1")
			c, got := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPClientDroppedByDesign]
			if got != tc.fail {
				t.Fatalf("DP070 %v, want %v: %s", got, tc.fail, summarizeChecks(tr.Layer(report.LayerDatapath)))
			}
			if !tc.fail {
				if tr.Verdict.Status == report.StatusFail {
					t.Errorf("verdict fail: %s", tr.Verdict.Summary)
				}
				return
			}
			if c.Status != report.StatusFail || !strings.Contains(c.Message, "internalTrafficPolicy Local") || !strings.Contains(c.Message, "endpoints run on n2") {
				t.Errorf("DP070 %s %q", c.Status, c.Message)
			}
			if tr.Verdict.Status != report.StatusFail || tr.Verdict.Code != report.CodeDPClientDroppedByDesign {
				t.Errorf("verdict %s on %s, want fail on DP070: %s", tr.Verdict.Status, tr.Verdict.Code, tr.Verdict.Summary)
			}
			for _, r := range tr.Layer(report.LayerDatapath).Nodes {
				if r.Node == "n1" && r.Status != report.StatusFail {
					t.Errorf("n1's datapath result %s, want fail", r.Status)
				}
			}
		})
	}
}
