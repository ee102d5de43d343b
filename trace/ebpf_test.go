package trace

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// ciliumFixture loads the observations svctrace's collector read from maps
// Cilium v1.20.2's own map specs and key/value types wrote
// (test/ebpf/cilium, go test -update), keyed by namespace/name.
func ciliumFixture(t *testing.T, service string) *collectorapi.CiliumObservation {
	t.Helper()
	raw, err := os.ReadFile("testdata/ebpf/cilium-v1.20.2-observations.json")
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]*collectorapi.CiliumObservation
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	c, ok := all[service]
	if !ok {
		t.Fatalf("no %s in the fixture", service)
	}
	return c
}

// ebpfObservation is a kube-proxy-free node: kube-proxy does not answer,
// no kube-proxy rules, the eBPF section holds c (and cal).
func ebpfObservation(t *testing.T, c *collectorapi.CiliumObservation, cal *collectorapi.CalicoObservation) *collectorapi.Observation {
	o := observation(t, "", nil, nil)
	if c == nil {
		c = &collectorapi.CiliumObservation{}
	}
	if cal == nil {
		cal = &collectorapi.CalicoObservation{}
	}
	o.Sections.EBPF = okSection(&collectorapi.EBPFObservation{BPFFSRoot: "/sys/fs/bpf", Cilium: c, Calico: cal})
	return o
}

// ciliumWeb is the Service and EndpointSlices the fixture's default/web
// maps were written for, seen from n1: dual-stack LoadBalancer with an
// externalIP, externalTrafficPolicy Local, ClientIP affinity 10800 s;
// IPv4 endpoints on n1 (ready), n2 (ready, and one terminating) and n3
// (ready; Cilium's health checker quarantined one, another is in
// maintenance); IPv6 on n1 and n2.
func ciliumWeb(mut ...func(*input.Input)) *input.Input {
	in := nodeInput(func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeLoadBalancer
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.50", []string{"10.96.0.50", "fd00:96::50"}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		s.Spec.Ports[0].NodePort = 30080
		s.Spec.ExternalIPs = []string{"192.0.2.9"}
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.HealthCheckNodePort = 32000
		s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
		s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(10800))}}
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "198.51.100.7"}}
	})
	v4 := slice("web-v4", "web", "http", 8080,
		ep{ip: "10.244.1.5", pod: "web-1", node: "n1", ready: true},
		ep{ip: "10.244.2.7", pod: "web-2", node: "n2", ready: true},
		ep{ip: "10.244.2.8", pod: "web-3", node: "n2", terminating: true},
		ep{ip: "10.244.3.9", pod: "web-4", node: "n3", ready: true},
		ep{ip: "10.244.3.10", pod: "web-5", node: "n3", ready: true})
	v6 := slice("web-v6", "web", "http", 8080,
		ep{ip: "fd00:244::1:5", pod: "web-1", node: "n1", ready: true},
		ep{ip: "fd00:244::2:7", pod: "web-2", node: "n2", ready: true})
	v6.AddressType = discoveryv1.AddressTypeIPv6
	in.Slices = []discoveryv1.EndpointSlice{*v4, *v6}
	in.Nodes["n3"] = node("n3", true)
	for _, m := range mut {
		m(in)
	}
	return in
}

// nodeMessages are the messages of every check of one code on a node.
func nodeMessages(tr *report.ServiceTrace, node, code string) string {
	var out []string
	for _, c := range tr.Layer(report.LayerDatapath).Checks {
		if c.Node == node && c.Code == code {
			out = append(out, c.Message)
		}
	}
	return strings.Join(out, "\n")
}

func requireNoNodeCheck(t *testing.T, tr *report.ServiceTrace, node string, codes ...string) {
	t.Helper()
	got := nodeCodes(tr, report.LayerDatapath, node)
	for _, code := range codes {
		if c, ok := got[code]; ok {
			t.Errorf("unexpected %s: %s", code, c.Message)
		}
	}
}

func TestCiliumMapsFromCiliumTypesHealthy(t *testing.T) {
	tr := judgeViews(t, ciliumWeb(), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/web"), nil)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPProxyUnreachable, report.CodeDPNoRules, report.CodeDPNodePortMissing, report.CodeDPStaleEndpoints,
		report.CodeDPMissingEndpoints, report.CodeDPUnequalShares, report.CodeDPEBPFExternal, report.CodeDPEBPFBrokenSlot, report.CodeDPAffinityTimeout,
		report.CodeDPAffinityMissing, report.CodeDPEBPFLayoutUnknown, report.CodeDPEBPFUnreadable)
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPEBPFOwner, "n1")
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPAffinityOK, "n1")
	got := nodeCodes(tr, report.LayerDatapath, "n1")
	if c := got[report.CodeDPEBPFQuarantined]; !strings.Contains(c.Message, "10.244.3.9:8080") {
		t.Errorf("quarantined backend not named: %+v", c)
	}
	if c := got[report.CodeDPEBPFMaintenance]; !strings.Contains(c.Message, "10.244.3.10:8080") {
		t.Errorf("maintenance backend not named: %+v", c)
	}
	if c := got[report.CodeDPEBPFInactiveBackends]; !strings.Contains(c.Message, "10.244.2.8:8080 terminating") || !strings.Contains(c.Message, "10.244.3.9:8080 quarantined") {
		t.Errorf("inactive slots: %+v", c)
	}
	var matched int
	for _, c := range tr.Layer(report.LayerDatapath).Checks {
		if c.Code == report.CodeDPRulesMatch {
			matched++
		}
	}
	if matched != 2 {
		t.Errorf("want the IPv4 and the IPv6 port matched, got %d", matched)
	}
	if s := tr.Layer(report.LayerDatapath).Status; s == report.StatusFail {
		t.Errorf("datapath %s", s)
	}
}

// TestCiliumStaleBackendsAfterScaleDown: the Deployment scaled down (web-2
// gone from the EndpointSlices) while the agent did not sync: the
// ClusterIP and the NodePort/LB/externalIP internal scopes still select it.
func TestCiliumStaleBackendsAfterScaleDown(t *testing.T) {
	in := ciliumWeb(func(in *input.Input) {
		eps := in.Slices[0].Endpoints
		in.Slices[0].Endpoints = append(eps[:1:1], eps[2:]...)
	})
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/web"), nil)})
	got := nodeCodes(tr, report.LayerDatapath, "n1")
	if c, ok := got[report.CodeDPStaleEndpoints]; !ok || !strings.Contains(c.Message, "10.244.2.7:8080") {
		t.Fatalf("stale backend not reported: %+v", got)
	}
	if m := nodeMessages(tr, "n1", report.CodeDPEBPFExternal); !strings.Contains(m, "nodePort 0.0.0.0:30080/TCP internal scope") || !strings.Contains(m, "stale: 10.244.2.7:8080") {
		t.Errorf("stale backend in the external frontends' internal scope: %s", m)
	}
	requireNoNodeCheck(t, tr, "n1", report.CodeDPNoRules, report.CodeDPProxyUnreachable)

	// The same maps, with web-2's listing changed while the node was read:
	// the agent may have applied a newer state than the API read, so every
	// frontend still selecting it warns instead of failing.
	in.SlicesChangedDuringRead = []input.SliceChange{{Slice: "web-v4", Type: "MODIFIED", Family: "IPv4", Addresses: []string{"10.244.2.7"}}}
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/web"), nil)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPStaleEndpoints, report.CodeDPEBPFExternal)
	m := nodeMessages(tr, "n1", report.CodeDPSyncPending)
	for _, want := range []string{"on cilium (random): 1 endpoint(s) no longer listed still programmed (10.244.2.7:8080), but the Cilium agent and the API",
		"on Cilium: nodePort 0.0.0.0:30080/TCP internal scope holds 10.244.2.7:8080 and lacks none", "EndpointSlice web-v4 modified while the nodes were read"} {
		if !strings.Contains(m, want) {
			t.Errorf("%s messages lack %q:\n%s", report.CodeDPSyncPending, want, m)
		}
	}
}

func TestCiliumWrongPortAndAffinityTimeout(t *testing.T) {
	in := ciliumWeb(func(in *input.Input) {
		in.Slices[0].Ports[0].Port = ptr(int32(8081))
		in.Service.Spec.Ports[0].TargetPort = intstr.FromInt32(8081)
		in.Service.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds = ptr(int32(3600))
	})
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/web"), nil)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPWrongDNATPort, "n1")
	if c := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPAffinityTimeout]; !strings.Contains(c.Message, "10800") || !strings.Contains(c.Message, "3600") {
		t.Errorf("affinity timeout: %+v", c)
	}
}

// TestCiliumExternalPolicyMismatch: the maps were written for
// externalTrafficPolicy Local; a Service that says Cluster is not what
// the agent programmed.
func TestCiliumExternalPolicyMismatch(t *testing.T) {
	in := ciliumWeb(func(in *input.Input) {
		in.Service.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
		in.Service.Spec.HealthCheckNodePort = 0
	})
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/web"), nil)})
	if m := nodeMessages(tr, "n1", report.CodeDPEBPFExternal); !strings.Contains(m, "nodePort 0.0.0.0:30080/TCP external scope for default/web:http (80/TCP) carries externalTrafficPolicy Local, the Service says Cluster") {
		t.Fatalf("%s", m)
	}
}

func TestCiliumBrokenSlot(t *testing.T) {
	c := ciliumFixture(t, "default/web")
	c.Frontends[0].Backends[1].Found = false // the backends map lost backend 2
	tr := judgeViews(t, ciliumWeb(), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, c, nil)})
	got := nodeCodes(tr, report.LayerDatapath, "n1")
	if ck, ok := got[report.CodeDPEBPFBrokenSlot]; !ok || !strings.Contains(ck.Message, "slot 2") {
		t.Fatalf("%+v", got)
	}
	if ck, ok := got[report.CodeDPUnequalShares]; !ok || !strings.Contains(ck.Message, "unmatched 50%") {
		t.Errorf("half the new connections go nowhere: %+v", ck)
	}
}

// kube-dns: 53/UDP and 53/TCP are two frontends with their own backends.
func TestCiliumKubeDNSUDPAndTCP(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) {
		s.Name, s.Namespace = "kube-dns", "kube-system"
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
		s.Spec.Ports = []corev1.ServicePort{{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
			{Name: "dns-tcp", Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromInt32(53)}}
	})
	in.Namespace, in.Name = "kube-system", "kube-dns"
	sl := slice("kube-dns-abc", "kube-dns", "dns", 53, ep{ip: "10.244.1.20", pod: "coredns-1", node: "n1", ready: true},
		ep{ip: "10.244.2.20", pod: "coredns-2", node: "n2", ready: true})
	sl.Namespace = "kube-system"
	sl.Ports = []discoveryv1.EndpointPort{{Name: ptr("dns"), Port: ptr(int32(53)), Protocol: ptr(corev1.ProtocolUDP)},
		{Name: ptr("dns-tcp"), Port: ptr(int32(53)), Protocol: ptr(corev1.ProtocolTCP)}}
	in.Slices = []discoveryv1.EndpointSlice{*sl}
	in.Pods = nil
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "kube-system/kube-dns"), nil)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPStaleEndpoints, report.CodeDPUnequalShares, report.CodeDPMissingEndpoints, report.CodeDPNoRules)
	n := 0
	for _, c := range tr.Layer(report.LayerDatapath).Checks {
		if c.Code == report.CodeDPRulesMatch && c.Node == "n1" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("want 53/UDP and 53/TCP matched, got %d", n)
	}
}

func hashInput() *input.Input {
	in := nodeInput(func(s *corev1.Service) {
		s.Name = "hash"
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.60", []string{"10.96.0.60"}
		s.Spec.Ports = []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(8443)}}
	})
	in.Name = "hash"
	in.Slices = []discoveryv1.EndpointSlice{*slice("hash-abc", "hash", "https", 8443,
		ep{ip: "10.244.1.30", pod: "h-1", node: "n1", ready: true}, ep{ip: "10.244.2.30", pod: "h-2", node: "n2", ready: true},
		ep{ip: "10.244.3.30", pod: "h-3", node: "n3", ready: true}, ep{ip: "10.244.3.31", pod: "h-4", node: "n3", terminating: true})}
	in.Pods = nil
	return in
}

// TestCiliumMaglevShares: the Maglev table Cilium's own builder made gives
// each of 3 backends 5460 or 5461 of 16381 entries: fair. Moving 2000
// entries from one backend to another is not.
func TestCiliumMaglevShares(t *testing.T) {
	tr := judgeViews(t, hashInput(), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/hash"), nil)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPUnequalShares, report.CodeDPEBPFMaglevTable, report.CodeDPStaleEndpoints)
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")
	if c := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPRulesMatch]; !strings.Contains(c.Message, "cilium (maglev)") {
		t.Errorf("algorithm not named: %s", c.Message)
	}

	c := ciliumFixture(t, "default/hash")
	mg := c.Frontends[0].Maglev
	mg.Backends[0].Entries -= 2000
	mg.Backends[1].Entries += 2000
	tr = judgeViews(t, hashInput(), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, c, nil)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPUnequalShares, "n1")

	c = ciliumFixture(t, "default/hash")
	c.Frontends[0].Maglev = nil
	tr = judgeViews(t, hashInput(), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, c, nil)})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPEBPFMaglevTable, "n1")
	requireNoNodeCheck(t, tr, "n1", report.CodeDPUnequalShares)
}

// TestCiliumTerminatingFallback: with no ready endpoint, kube-proxy and
// Cilium both use the serving terminating ones.
func TestCiliumTerminatingFallback(t *testing.T) {
	in := nodeInput(func(s *corev1.Service) {
		s.Name = "drain"
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.70", []string{"10.96.0.70"}
		s.Spec.Ports = []corev1.ServicePort{{Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(80)}}
	})
	in.Name = "drain"
	sl := slice("drain-abc", "drain", "", 80, ep{ip: "10.244.2.40", pod: "d-1", node: "n2", terminating: true})
	in.Slices = []discoveryv1.EndpointSlice{*sl}
	in.Pods = nil
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/drain"), nil)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPStaleEndpoints, report.CodeDPMissingEndpoints, report.CodeDPNoRules)
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")
}

// TestEBPFUnknownLayoutIsNotAKubeProxyFailure: Cilium's or Calico's maps in
// a layout svctrace does not decode, on a node without kube-proxy, leave
// the datapath unknown: no DP003 "kube-proxy does not answer", no DP006
// "no kube-proxy datapath", no DP020.
func TestEBPFUnknownLayoutIsNotAKubeProxyFailure(t *testing.T) {
	cil := &collectorapi.CiliumObservation{Detected: true, Error: "could not read this Cilium version's maps: backends are in cilium_lb4_backends_v2, the layout of agents older than v1.13, not cilium_lb4_backends_v3",
		Maps: []collectorapi.PinnedMap{{Name: "cilium_lb4_services_v2", KeySize: 12, ValueSize: 12}, {Name: "cilium_lb4_backends_v2", KeySize: 4, ValueSize: 8}}}
	cal := &collectorapi.CalicoObservation{Detected: true, Error: "could not read this Calico version's maps: cali_v4_nat_fe4 has key 24/value 24 bytes, this reader knows 16/20"}
	for name, obs := range map[string]*collectorapi.Observation{
		"cilium": ebpfObservation(t, cil, nil),
		"calico": ebpfObservation(t, nil, cal),
	} {
		t.Run(name, func(t *testing.T) {
			tr := judgeViews(t, nodeInput(nodePortWeb), plan.NodeView{Node: "n1", Observation: obs})
			requireNoNodeCheck(t, tr, "n1", report.CodeDPProxyUnreachable, report.CodeDPNoRules, report.CodeDPNodePortMissing, report.CodeDPStaleEndpoints, report.CodeDPMissingEndpoints)
			c, ok := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPEBPFLayoutUnknown]
			if !ok || c.Status != report.StatusUnknown || !strings.Contains(c.Message, "could not read this") {
				t.Fatalf("%+v", c)
			}
			if s := tr.Layer(report.LayerDatapath).Status; s == report.StatusFail {
				t.Errorf("datapath %s", s)
			}
		})
	}
}

// calicoWeb is what Felix writes for nodeInput's web as a NodePort Service
// seen from n1 (10.0.0.11): the ClusterIP, the NodePort on the node address
// and on Felix's 255.255.255.255 wildcard, one backend list (local first).
func calicoWeb(backends ...collectorapi.CalicoBackend) *collectorapi.CalicoObservation {
	fe := func(kind, addr string, port uint16) collectorapi.CalicoFrontend {
		return collectorapi.CalicoFrontend{Frontend: kind, Address: addr, Port: port, Protocol: "TCP", SourceCIDR: "0.0.0.0/0", Found: true,
			ID: 1, Count: uint32(len(backends)), LocalCount: 1, Backends: backends}
	}
	return &collectorapi.CalicoObservation{Detected: true, Layout: "nat", Frontends: []collectorapi.CalicoFrontend{
		fe("clusterIP", "10.96.0.20", 80), fe("nodePort", "10.0.0.11", 30080), fe("nodePort", "255.255.255.255", 30080)}}
}

func TestCalicoHealthyAndStale(t *testing.T) {
	be := func(o uint32, ip string) collectorapi.CalicoBackend {
		return collectorapi.CalicoBackend{Ordinal: o, Found: true, Address: ip, Port: 8080}
	}
	tr := judgeViews(t, nodeInput(nodePortWeb), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil, calicoWeb(be(0, "10.244.1.5"), be(1, "10.244.2.7")))})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPProxyUnreachable, report.CodeDPNoRules, report.CodeDPNodePortMissing, report.CodeDPStaleEndpoints, report.CodeDPEBPFExternal, report.CodeDPUnequalShares)
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPRulesMatch, "n1")
	if c := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPEBPFOwner]; !strings.Contains(c.Message, "Calico") {
		t.Errorf("owner: %s", c.Message)
	}

	tr = judgeViews(t, nodeInput(nodePortWeb), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil,
		calicoWeb(be(0, "10.244.1.5"), be(1, "10.244.2.7"), be(2, "10.244.2.99")))})
	if c, ok := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPStaleEndpoints]; !ok || !strings.Contains(c.Message, "10.244.2.99:8080") {
		t.Fatalf("stale Calico backend: %+v", c)
	}
	if m := nodeMessages(tr, "n1", report.CodeDPEBPFExternal); !strings.Contains(m, "255.255.255.255:30080") || !strings.Contains(m, "10.0.0.11:30080") {
		t.Errorf("stale backend behind both NodePort entries: %s", m)
	}

	// An endpoint added and removed again while the node was read: Felix
	// may have programmed it in between.
	in := nodeInput(nodePortWeb)
	in.SlicesChangedDuringRead = []input.SliceChange{{Slice: "web-abc", Type: "MODIFIED", Family: "IPv4", Addresses: []string{"10.244.2.99"}}}
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil,
		calicoWeb(be(0, "10.244.1.5"), be(1, "10.244.2.7"), be(2, "10.244.2.99")))})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPStaleEndpoints, report.CodeDPEBPFExternal)
	if m := nodeMessages(tr, "n1", report.CodeDPSyncPending); strings.Count(m, "10.244.2.99:8080") != 3 || !strings.Contains(m, "Calico's Felix and the API") {
		t.Errorf("a backend changed during the read, ClusterIP and both NodePort entries: %s", m)
	}
}

// TestCalicoExternalLocal: externalTrafficPolicy Local; Felix flags the
// NodePort frontend external-local and its first LocalCount ordinals are
// the node's own backends.
func TestCalicoExternalLocal(t *testing.T) {
	be := func(o uint32, ip string) collectorapi.CalicoBackend {
		return collectorapi.CalicoBackend{Ordinal: o, Found: true, Address: ip, Port: 8080}
	}
	in := nodeInput(nodePortWeb, func(s *corev1.Service) { s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal })
	cal := calicoWeb(be(0, "10.244.1.5"), be(1, "10.244.2.7"))
	for i := range cal.Frontends {
		if cal.Frontends[i].Frontend == "nodePort" {
			cal.Frontends[i].Flags = 0x1
		}
	}
	tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil, cal)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPEBPFExternal, report.CodeDPStaleEndpoints, report.CodeDPNodePortMissing)

	cal.Frontends[1].Flags = 0 // the node-address NodePort without the flag
	tr = judgeViews(t, in, plan.NodeView{Node: "n1", Observation: ebpfObservation(t, nil, cal)})
	if m := nodeMessages(tr, "n1", report.CodeDPEBPFExternal); !strings.Contains(m, "10.0.0.11:30080/TCP for default/web:http (80/TCP) carries externalTrafficPolicy Cluster, the Service says Local") {
		t.Fatalf("%s", m)
	}
}

// TestCiliumMapsNotOpenedAreUnknown: maps the collector was refused
// opening are unreadable (DP025, unknown), neither an unknown layout nor a
// kube-proxy failure.
func TestCiliumMapsNotOpenedAreUnknown(t *testing.T) {
	cil := &collectorapi.CiliumObservation{Detected: true, Error: "could not open Cilium's maps: cilium_lb4_services_v2: operation not permitted",
		Maps: []collectorapi.PinnedMap{{Name: "cilium_lb4_services_v2", Error: "operation not permitted"}}}
	tr := judgeViews(t, nodeInput(nodePortWeb), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, cil, nil)})
	requireNoNodeCheck(t, tr, "n1", report.CodeDPProxyUnreachable, report.CodeDPNoRules, report.CodeDPNodePortMissing, report.CodeDPEBPFLayoutUnknown)
	if c, ok := nodeCodes(tr, report.LayerDatapath, "n1")[report.CodeDPEBPFUnreadable]; !ok || c.Status != report.StatusUnknown {
		t.Fatalf("%+v", c)
	}
}
