package trace

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func probes(ps ...collectorapi.Probe) *collectorapi.Section[collectorapi.ProbeObservation] {
	return okSection(&collectorapi.ProbeObservation{Probes: ps})
}

func probe(target, port, addr, outcome, class string) collectorapi.Probe {
	return collectorapi.Probe{Target: target, PortName: port, Address: addr, Protocol: "TCP", Outcome: outcome, ErrorClass: class}
}

// nodePortProbe is a probe of node's NodePort 30080 at addr.
func nodePortProbe(node, addr, outcome, class string) collectorapi.Probe {
	p := probe("nodePort", "http", addr, outcome, class)
	p.Node = node
	return p
}

// allowFromFrontend is the ordinary "only the frontend may call web" policy.
func allowFromFrontend() networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web-from-frontend", Namespace: "default"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}}}}}},
		}}
}

func assertNoCode(t *testing.T, tr *report.ServiceTrace, layer report.LayerName, node string, codes ...string) {
	t.Helper()
	got := nodeCodes(tr, layer, node)
	for _, c := range codes {
		if _, ok := got[c]; ok {
			t.Errorf("layer %s on %s has %s (%s); want none", layer, node, c, got[c].Message)
		}
	}
}

// TestProbesKeptOutByPolicy: the backends admit only the frontend, so the
// node's own probes to the Pod on the other node time out, and the ClusterIP
// probe, which may pick that Pod, too. That is the policy working: neither a
// route (RT007) nor the datapath (DP019) is at fault, and the trace passes.
func TestProbesKeptOutByPolicy(t *testing.T) {
	in := nodeInput()
	in.NetworkPolicies = []networkingv1.NetworkPolicy{allowFromFrontend()}
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	obs.Sections.Probe = probes(
		probe("clusterIP", "http", "10.96.0.20:80", "failed", "timeout"),
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "failed", "timeout"))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPodTimeout)
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPClusterIPFails)
	c, ok := nodeCodes(tr, report.LayerRoute, "n1")[report.CodeRTPolicyExplains]
	if !ok {
		t.Fatalf("no %s: %v", report.CodeRTPolicyExplains, keysOf(nodeCodes(tr, report.LayerRoute, "n1")))
	}
	for _, want := range []string{"web-2", "clusterIP 10.96.0.20:80", "default/web-from-frontend"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("%s message %q lacks %q", report.CodeRTPolicyExplains, c.Message, want)
		}
	}
	for _, l := range []report.LayerName{report.LayerRoute, report.LayerDatapath} {
		if s := tr.Layer(l).Status; s == report.StatusFail {
			t.Errorf("layer %s failed: %s", l, tr.Layer(l).Reason)
		}
	}
	if tr.Verdict.Status == report.StatusFail {
		t.Errorf("verdict %s (%s): a policy that admits the frontend is not a fault", tr.Verdict.Status, tr.Verdict.FirstFailingLayer)
	}
}

// TestProbesNotExplainedByAdmittingPolicy: a policy that admits the node's
// address (an ipBlock over the node network) explains nothing; the timeout
// is the route's.
func TestProbesNotExplainedByAdmittingPolicy(t *testing.T) {
	in := nodeInput()
	np := allowFromFrontend()
	np.Spec.Ingress[0].From = append(np.Spec.Ingress[0].From, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/24"}})
	in.NetworkPolicies = []networkingv1.NetworkPolicy{np}
	in.Nodes["n1"].Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.11"}}
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	obs.Sections.Probe = probes(
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "failed", "timeout"))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	requireNodeCheck(t, tr, report.LayerRoute, report.CodeRTPodTimeout, "n1")
	assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPolicyExplains)
}

// TestITPLocalDropsByDesign: internalTrafficPolicy Local, the only endpoint on
// n2. kube-proxy on n1 programs the filter-table DROP "has no local
// endpoints" (pkg/proxy/iptables/proxier.go) and no nat capture, so the
// ClusterIP probe from n1 times out while the Pod answers directly. That is
// a warning for n1, never DP019.
func TestITPLocalDropsByDesign(t *testing.T) {
	local := corev1.ServiceInternalTrafficPolicyLocal
	in := nodeInput(func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = &local })
	in.Slices[0].Endpoints = in.Slices[0].Endpoints[1:] // only web-2 on n2
	in.Pods = in.Pods[1:]
	obs := filterOnly(t, "default/web:http has no local endpoints", "DROP")
	obs.Sections.Probe = probes(
		probe("clusterIP", "http", "10.96.0.20:80", "failed", "timeout"),
		probe("endpoint", "http", "10.244.2.7:8080", "connected", ""))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPClusterIPFails, report.CodeDPNoRules)
	c, ok := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPDroppedByDesign]
	if !ok {
		t.Fatalf("no %s: %v", report.CodeDPDroppedByDesign, keysOf(nodeCodes(tr, report.LayerDatapath, "n1")))
	}
	if c.Status != report.StatusWarn || !strings.Contains(c.Message, "the drop rule for it is programmed") {
		t.Errorf("%s = %s %q", report.CodeDPDroppedByDesign, c.Status, c.Message)
	}
	var n1 *report.NodeResult
	for i, r := range tr.Layer(report.LayerDatapath).Nodes {
		if r.Node == "n1" {
			n1 = &tr.Layer(report.LayerDatapath).Nodes[i]
		}
	}
	if n1 == nil || n1.Status != report.StatusWarn {
		t.Errorf("datapath result for n1 = %+v, want warn", n1)
	}
	if tr.Verdict.FirstFailingLayer == report.LayerDatapath {
		t.Errorf("verdict blames the datapath: %+v", tr.Verdict)
	}
}

// TestITPLocalStaleRulesStillCompared: rules that still send the ClusterIP to
// another node's endpoint under internalTrafficPolicy Local are stale, not
// "dropped by design".
func TestITPLocalStaleRulesStillCompared(t *testing.T) {
	local := corev1.ServiceInternalTrafficPolicyLocal
	in := nodeInput(func(s *corev1.Service) { s.Spec.InternalTrafficPolicy = &local })
	in.Slices[0].Endpoints = in.Slices[0].Endpoints[1:]
	in.Pods = in.Pods[1:]
	ipt := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{
		iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-2", "10.244.2.7:8080", 1))}}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, ipt, nil)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPStaleEndpoints, "n1")
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPDroppedByDesign)
}

// TestClusterIPComparedPerPort: web has http (8080) and metrics (9090); the
// app does not listen on 9090. The metrics ClusterIP is refused like its
// endpoints are: the endpoints layer says so, and the datapath is not blamed
// because endpoints answered on http.
func TestClusterIPComparedPerPort(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Protocol: corev1.ProtocolTCP, Port: 9090, TargetPort: intstr.FromInt32(9090)})
	})
	in.Slices[0].Ports = append(in.Slices[0].Ports, in.Slices[0].Ports[0])
	in.Slices[0].Ports[1].Name, in.Slices[0].Ports[1].Port = ptr("metrics"), ptr(int32(9090))
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	obs.Sections.Probe = probes(
		probe("clusterIP", "http", "10.96.0.20:80", "connected", ""),
		probe("clusterIP", "metrics", "10.96.0.20:9090", "failed", "refused"),
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "connected", ""),
		probe("endpoint", "metrics", "10.244.1.5:9090", "failed", "refused"),
		probe("endpoint", "metrics", "10.244.2.7:9090", "failed", "refused"))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPClusterIPFails)
	requireNodeCheck(t, tr, report.LayerEndpoints, report.CodeEpsRefused, "n1")

	// The same ClusterIP failure with the metrics endpoints answering
	// directly is the datapath's.
	obs.Sections.Probe = probes(
		probe("clusterIP", "metrics", "10.96.0.20:9090", "failed", "timeout"),
		probe("endpoint", "metrics", "10.244.1.5:9090", "connected", ""),
		probe("endpoint", "metrics", "10.244.2.7:9090", "connected", ""))
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPClusterIPFails, "n1")
}

// TestNotReadyAnswerIsNoComparison: the only endpoint is not ready, so the
// ClusterIP rejects by design (DP022); that the Pod answers directly does not
// make the ClusterIP's refusal a datapath fault.
func TestNotReadyAnswerIsNoComparison(t *testing.T) {
	in := nodeInput()
	for i := range in.Slices[0].Endpoints {
		in.Slices[0].Endpoints[i].Conditions = discoveryConditions(false)
	}
	obs := filterOnly(t, "default/web:http has no endpoints", "REJECT")
	obs.Sections.Probe = probes(
		probe("clusterIP", "http", "10.96.0.20:80", "failed", "refused"),
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRejectNoEndpoints, "n1")
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPClusterIPFails)
	assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPodsReached)
}

func discoveryConditions(ready bool) discoveryv1.EndpointConditions {
	return discoveryv1.EndpointConditions{Ready: ptr(ready), Serving: ptr(ready), Terminating: ptr(false)}
}

// TestSlowProbeIsNoFailure: an endpoint that answered on the collector's
// second, longer try is reachable; the finding says it was slow.
func TestSlowProbeIsNoFailure(t *testing.T) {
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	late := probe("endpoint", "http", "10.244.2.7:8080", "connected", "")
	late.Attempts, late.FirstError = 2, "dial tcp 10.244.2.7:8080: i/o timeout"
	obs.Sections.Probe = probes(probe("endpoint", "http", "10.244.1.5:8080", "connected", ""), late)
	tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: obs})
	c := nodeCodes(tr, report.LayerRoute, "n1")[report.CodeRTPodsReached]
	if !strings.Contains(c.Message, "10.244.2.7:8080 answered only when probed again") {
		t.Errorf("%s = %q", report.CodeRTPodsReached, c.Message)
	}
	assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPodTimeout)
}

// TestUnNATedUDPFlowPinsClients: the UDP blackhole after a Service gains
// endpoints (kubernetes/kubernetes#106274): unreplied flows whose reply
// tuple is the ClusterIP itself were never NATed and keep the clients'
// datagrams away from the endpoints. The same for TCP, or answered UDP, is
// not this fault.
func TestUnNATedUDPFlowPinsClients(t *testing.T) {
	flows := func(frontend string, states map[string]int) *collectorapi.ServiceFlows {
		be, _, _ := strings.Cut(frontend, "/")
		return &collectorapi.ServiceFlows{Frontends: []collectorapi.FrontendFlows{{Frontend: frontend, Total: 3,
			Backends: []collectorapi.BackendFlows{{Backend: be, Count: 3, States: states}}}},
			Unexpected:      []collectorapi.ConntrackFlow{{Protocol: "udp", Original: "10.244.1.9:5353 -> 10.96.0.20:80", Reply: "10.96.0.20:80 -> 10.244.1.9:5353", Backend: be, Status: []string{"CONFIRMED"}}},
			UnexpectedTotal: 3}
	}
	for _, tt := range []struct {
		name string
		f    *collectorapi.ServiceFlows
		want bool
	}{
		{"udp unreplied", flows("10.96.0.20:80/UDP", map[string]int{"UNREPLIED": 3}), true},
		{"udp answered", flows("10.96.0.20:80/UDP", map[string]int{"SEEN_REPLY": 3}), false},
		{"tcp", flows("10.96.0.20:80/TCP", map[string]int{"SYN_SENT": 3}), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			obs.Sections.Conntrack.Data.Flows = tt.f
			tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: obs})
			c, got := nodeCodes(tr, report.LayerConntrack, "n1")[report.CodeCTUnNATedUDP]
			if got != tt.want {
				t.Fatalf("%s present = %v, want %v", report.CodeCTUnNATedUDP, got, tt.want)
			}
			if got && (!strings.Contains(c.Message, "3 unreplied UDP") || c.Evidence == nil || len(c.Evidence.Raw) != 1) {
				t.Errorf("%s: %q %+v", report.CodeCTUnNATedUDP, c.Message, c.Evidence)
			}
		})
	}
}

// TestNodePortProbes: web as an externalTrafficPolicy Local NodePort with
// endpoints on n1 and n2. From n1: its own NodePort is short-circuited to the
// cluster endpoints (local source); n2's NodePort goes to n2's own endpoint.
// A failure of n2's NodePort while that endpoint answers is n2's datapath.
func TestNodePortProbes(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	})
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	obs.Sections.Probe = probes(
		nodePortProbe("n1", "10.0.0.11:30080", "connected", ""),
		nodePortProbe("n2", "10.0.0.12:30080", "failed", "timeout"),
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "connected", ""))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	c := nodeCodes(tr, report.LayerDatapath, "n2")[report.CodeDPNodePortFails]
	if !strings.Contains(c.Message, "10.0.0.12:30080") || !strings.Contains(c.Message, "from n1") {
		t.Fatalf("%s on n2 = %q; datapath checks %v", report.CodeDPNodePortFails, c.Message, keysOf(nodeCodes(tr, report.LayerDatapath, "")))
	}
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPNodePortFails, report.CodeDPClusterIPFails)

	// n2 without a local endpoint drops its NodePort by design: no finding.
	in.Slices[0].Endpoints = in.Slices[0].Endpoints[:1]
	obs.Sections.Probe = probes(
		nodePortProbe("n2", "10.0.0.12:30080", "failed", "timeout"),
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""))
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	assertNoCode(t, tr, report.LayerDatapath, "n2", report.CodeDPNodePortFails)
}

// TestNodePortProbedInAFamilyTheServiceLacks: an IPv4-only NodePort
// Service on a dual-stack node. kube-proxy's IPv6 proxier does not serve it
// (its ServiceChangeTracker skips a Service without an IPv6 ClusterIP), so a
// probe of the node's IPv6 address is refused while the IPv4 endpoints
// answer: that is not the NodePort datapath failing (a bundle recorded
// before the plan stopped asking for such probes still holds them).
func TestNodePortProbedInAFamilyTheServiceLacks(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
	})
	obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
	obs.Sections.Probe = probes(
		nodePortProbe("n1", "10.0.0.11:30080", "connected", ""),
		nodePortProbe("n1", "[fd00:10::11]:30080", "failed", "refused"),
		nodePortProbe("n2", "[fd00:10::12]:30080", "failed", "refused"),
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "connected", ""))
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	for _, node := range []string{"n1", "n2"} {
		assertNoCode(t, tr, report.LayerDatapath, node, report.CodeDPNodePortFails, report.CodeDPClusterIPFails)
	}
	// The same refusal at an IPv4 address is the datapath's.
	obs.Sections.Probe = probes(
		nodePortProbe("n2", "10.0.0.12:30080", "failed", "refused"),
		probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
		probe("endpoint", "http", "10.244.2.7:8080", "connected", ""))
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
	if _, ok := nodeCodes(tr, report.LayerDatapath, "n2")[report.CodeDPNodePortFails]; !ok {
		t.Errorf("no %s for a refused IPv4 NodePort whose IPv4 endpoints answer", report.CodeDPNodePortFails)
	}
}

// TestHealthCheckNodePort: kube-proxy's answer is compared with the slices.
func TestHealthCheckNodePort(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 30999
	})
	n := func(v int) *int { return &v }
	for _, tt := range []struct {
		name string
		hc   collectorapi.HealthCheckProbe
		want string
	}{
		{"agrees", collectorapi.HealthCheckProbe{StatusCode: 200, LocalEndpoints: n(1)}, report.CodeDPHealthCheckOK},
		{"stale count", collectorapi.HealthCheckProbe{StatusCode: 200, LocalEndpoints: n(2)}, report.CodeDPHealthCheck},
		{"503 with a local endpoint", collectorapi.HealthCheckProbe{StatusCode: 503, LocalEndpoints: n(1), ServiceProxyHealthy: ptr(false)}, report.CodeDPHealthCheck},
		{"not served", collectorapi.HealthCheckProbe{Error: "connection refused", ErrorClass: "refused"}, report.CodeDPHealthCheck},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			hc := tt.hc
			hc.Address = "10.0.0.11:30999"
			obs.Sections.Probe = okSection(&collectorapi.ProbeObservation{HealthCheck: &hc})
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			if _, ok := nodeCodes(tr, report.LayerDatapath, "n1")[tt.want]; !ok {
				t.Errorf("want %s, got %v", tt.want, keysOf(nodeCodes(tr, report.LayerDatapath, "n1")))
			}
		})
	}
}

// TestHealthCheckPerFamily: on a dual-stack ETP Local LoadBalancer each
// family's proxier answers its own health check over its own family's
// local endpoints (healthcheck.newServiceHealthServer, tcp4 and tcp6), so
// each answer of 1 agrees while the node holds one endpoint per family.
func TestHealthCheckPerFamily(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 30999
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP, "fd00:96::20"}
	})
	v6 := slice("web-v6", "web", "http", 8080,
		ep{ip: "fd00:10:244:1::5", pod: "web-1", node: "n1", ready: true},
		ep{ip: "fd00:10:244:2::7", pod: "web-2", node: "n2", ready: true})
	v6.AddressType = discoveryv1.AddressTypeIPv6
	in.Slices = append(in.Slices, *v6)
	n := func(v int) *int { return &v }
	for _, tt := range []struct {
		name   string
		v4, v6 int
		want   string
	}{
		{"each family counts its own", 1, 1, report.CodeDPHealthCheckOK},
		{"the IPv6 server counts both families", 1, 2, report.CodeDPHealthCheck},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			obs.Sections.Probe = okSection(&collectorapi.ProbeObservation{HealthChecks: []collectorapi.HealthCheckProbe{
				{Address: "10.0.0.11:30999", StatusCode: 200, LocalEndpoints: n(tt.v4)},
				{Address: "[fd00::11]:30999", StatusCode: 200, LocalEndpoints: n(tt.v6)}}})
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			codes := nodeCodes(tr, report.LayerDatapath, "n1")
			if _, ok := codes[tt.want]; !ok {
				t.Errorf("want %s, got %v", tt.want, keysOf(codes))
			}
			if _, bad := codes[report.CodeDPHealthCheck]; bad && tt.want == report.CodeDPHealthCheckOK {
				t.Errorf("a health check that counts its own family was called wrong: %v", keysOf(codes))
			}
		})
	}
}

// TestClientEgressBlocksDNS: the frontend may reach web, but its egress
// policy admits nothing else, so it cannot resolve web's name (NP009). With
// UDP and TCP 53 to kube-dns admitted as well, the finding goes away.
func TestClientEgressBlocksDNS(t *testing.T) {
	in := nodeInput()
	in.DNSService.Spec.Ports = []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53}, {Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53}}
	dnsPod := pod("coredns-1", "kube-dns", "10.244.0.2", "n1")
	dnsPod.Namespace = "kube-system"
	dnsPod.Labels = map[string]string{"k8s-app": "kube-dns"}
	in.DNSPods = []corev1.Pod{*dnsPod}
	client := pod("frontend", "frontend", "10.244.1.9", "n1")
	egress := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "frontend-egress", Namespace: "default"},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "frontend"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{
				PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}}},
		}}
	in.NetworkPolicies = []networkingv1.NetworkPolicy{egress}
	find := func(tr *report.ServiceTrace, code string) *report.Check {
		for _, c := range tr.Layer(report.LayerPolicy).Checks {
			if c.Code == code {
				return &c
			}
		}
		return nil
	}
	tr := Assemble(in, nil, Options{Now: fixedNow, NoNode: true, From: report.PolicyClientFromPod(client)})
	if c := find(tr, report.CodeNPDNSDenied); c == nil || !strings.Contains(c.Message, "UDP Denied") {
		t.Fatalf("NP009 = %+v; policy checks: %s", c, summarizeChecks(tr.Layer(report.LayerPolicy)))
	}

	dns := networkingv1.NetworkPolicyEgressRule{To: []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}}}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolUDP), Port: ptr(intstr.FromInt32(53))}, {Protocol: ptr(corev1.ProtocolTCP), Port: ptr(intstr.FromInt32(53))}}}
	in.NetworkPolicies[0].Spec.Egress = append(in.NetworkPolicies[0].Spec.Egress, dns)
	tr = Assemble(in, nil, Options{Now: fixedNow, NoNode: true, From: report.PolicyClientFromPod(client)})
	if c := find(tr, report.CodeNPDNSDenied); c != nil {
		t.Errorf("DNS admitted, still NP009: %s", c.Message)
	}
	if c := find(tr, report.CodeNPDNSTCPDenied); c != nil {
		t.Errorf("DNS admitted, still NP010: %s", c.Message)
	}
}

func summarizeChecks(l *report.Layer) string {
	var parts []string
	for _, c := range l.Checks {
		parts = append(parts, c.Code+" "+c.Message)
	}
	return strings.Join(parts, "\n")
}

// filterOnly is web's port in iptables mode with no nat capture, only the
// filter-table KUBE-SERVICES rule kube-proxy writes when the ClusterIP has no
// (local) endpoint to go to: comment and target as pkg/proxy/iptables writes them.
func filterOnly(t *testing.T, comment, target string) *collectorapi.Observation {
	b := iptRules(collectorapi.IPTablesBackendNFTables, 0)
	b.Ports[0].Entry, b.Ports[0].Service = nil, nil
	b.Ports[0].Filter = []collectorapi.IPTablesRule{{
		Raw:     `-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment "` + comment + `" -m tcp --dport 80 -j ` + target,
		Comment: comment, Jump: target}}
	return observation(t, collectorapi.ModeIPTables, &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{b}}, nil)
}

// TestProbeOfEndpointChangedDuringReadIsNotARouteFailure: in a rollout a
// Pod deleted after the API read stops answering before the probe; its
// slice entry changed while the nodes were read. Its timeout, and the
// ClusterIP's that may pick it, are not the route's or the datapath's;
// the same timeout without the change is.
func TestProbeOfEndpointChangedDuringReadIsNotARouteFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changed []string
		class   string
		want    string
		fail    bool
	}{
		{"changed, timeout", []string{"10.244.2.7"}, "timeout", report.CodeRTEndpointChanged, false},
		{"changed, refused", []string{"10.244.2.7"}, "refused", report.CodeRTEndpointChanged, false},
		{"another endpoint changed", []string{"10.244.1.9"}, "timeout", report.CodeRTPodTimeout, true},
		{"unchanged", nil, "timeout", report.CodeRTPodTimeout, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := nodeInput()
			if tc.changed != nil {
				in.SlicesChangedDuringRead = []input.SliceChange{{Slice: "web-abc", Type: "MODIFIED", Family: "IPv4", Addresses: tc.changed}}
			}
			obs := observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)
			obs.Sections.Probe = probes(
				probe("clusterIP", "http", "10.96.0.20:80", "failed", tc.class),
				probe("endpoint", "http", "10.244.1.5:8080", "connected", ""),
				probe("endpoint", "http", "10.244.2.7:8080", "failed", tc.class))
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: obs})
			got := nodeCodes(tr, report.LayerRoute, "n1")
			if tc.class == "refused" {
				got = nodeCodes(tr, report.LayerEndpoints, "n1")
				for c, v := range nodeCodes(tr, report.LayerRoute, "n1") {
					got[c] = v
				}
			}
			if _, ok := got[tc.want]; !ok {
				t.Fatalf("no %s on n1; route and endpoints: %v", tc.want, got)
			}
			if c, ok := got[report.CodeRTEndpointChanged]; ok && !strings.Contains(c.Message, "10.244.2.7:8080 ("+tc.class+")") {
				t.Errorf("%s message %q does not name the endpoint and how it failed", c.Code, c.Message)
			}
			if !tc.fail {
				assertNoCode(t, tr, report.LayerRoute, "n1", report.CodeRTPodTimeout)
				assertNoCode(t, tr, report.LayerEndpoints, "n1", report.CodeEpsRefused)
				assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPClusterIPFails)
			}
			if fail := tr.Verdict.Status == report.StatusFail; fail != tc.fail {
				t.Errorf("verdict %s (%s), want fail=%v", tr.Verdict.Status, tr.Verdict.FirstFailingLayer, tc.fail)
			}
		})
	}
}
