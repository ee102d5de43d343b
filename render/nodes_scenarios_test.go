package render

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Node scenarios: the collectors' observations of kube-proxy in iptables
// mode (nf_tables backend) on each node, judged by trace.Assemble like a
// live trace's.

func okSection[T any](data *T) *collectorapi.Section[T] {
	return &collectorapi.Section[T]{Status: collectorapi.StatusOK, Data: data}
}

// nodeObservation is a node whose kube-proxy sends 10.96.0.20:80 to the
// given endpoints with the given shares, that routes to and reaches
// every endpoint in probes (ip:port → outcome: ok or an error class), and
// whose cluster DNS answers.
func nodeObservation(node string, shares map[string]float64, probes map[string]string) *collectorapi.Observation {
	o := &collectorapi.Observation{APIVersion: collectorapi.ObservationAPIVersion, Kind: collectorapi.ObservationKind,
		NodeName: node, CollectedAt: time.Date(2026, 1, 2, 3, 4, 4, 0, time.UTC)}
	o.Sections.Proxy = okSection(&collectorapi.ProxyObservation{Mode: collectorapi.ModeIPTables})
	svcChain := &collectorapi.IPTablesChain{Name: "KUBE-SVC-WEBHTTP", Exists: true}
	var eps []collectorapi.IPTablesEndpointChain
	for i, ep := range sortedKeys(shares) {
		sep := fmt.Sprintf("KUBE-SEP-WEB%d", i+1)
		svcChain.Selection = append(svcChain.Selection, collectorapi.IPTablesEndpointJump{Target: sep, Endpoint: ep, Share: shares[ep]})
		eps = append(eps, collectorapi.IPTablesEndpointChain{IPTablesChain: collectorapi.IPTablesChain{Name: sep, Exists: true,
			Rules: []collectorapi.IPTablesRule{{Raw: "-A " + sep + " -p tcp -m tcp -j DNAT --to-destination " + ep}}}, DNAT: ep})
	}
	o.Sections.IPTables = okSection(&collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{{
		Backend: collectorapi.IPTablesBackendNFTables, Family: "IPv4", KubeProxyChains: true,
		Ports: []collectorapi.IPTablesPortObservation{{ServicePortName: "default/web:http", Protocol: "tcp", Port: 80,
			Entry: []collectorapi.IPTablesEntryRule{{Kind: "clusterIP", IPTablesRule: collectorapi.IPTablesRule{
				Raw: "-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-WEBHTTP", Jump: "KUBE-SVC-WEBHTTP"}}},
			Service: svcChain, Endpoints: eps}}}}})
	route := &collectorapi.RouteObservation{IPv4Forward: "1", RPFilterAll: "0"}
	var ps []collectorapi.Probe
	for _, ep := range sortedKeys(probes) {
		ip := ep[:len(ep)-len(":8080")]
		route.Routes = append(route.Routes, collectorapi.RouteLookup{Destination: ip, Device: "eth0", Type: "unicast",
			Link: &collectorapi.LinkInfo{Name: "eth0", AdminUp: true, OperState: "up"}})
		p := collectorapi.Probe{Target: "endpoint", PortName: "http", Address: ep, Protocol: "TCP", Outcome: "connected", LatencyMillis: 0.4}
		if out := probes[ep]; out != "ok" {
			p.Outcome, p.ErrorClass, p.Error = "failed", out, "connect: connection "+out
		}
		ps = append(ps, p)
	}
	ps = append(ps, collectorapi.Probe{Target: "clusterIP", PortName: "http", Address: "10.96.0.20:80", Protocol: "TCP", Outcome: "connected", LatencyMillis: 0.5})
	o.Sections.Route = okSection(route)
	o.Sections.Probe = okSection(&collectorapi.ProbeObservation{TimeoutMillis: 1000, Concurrency: 8,
		EndpointsTotal: len(probes), EndpointsProbed: len(probes), Probes: ps})
	o.Sections.Conntrack = okSection(&collectorapi.ConntrackObservation{Count: 120, Max: 262144, SampleIntervalMillis: 200,
		StatsDelta: &collectorapi.ConntrackCounters{}})
	o.Sections.DNS = okSection(&collectorapi.DNSObservation{Servers: []string{"10.96.0.10"}, Queries: []collectorapi.DNSQuery{
		{Server: "10.96.0.10", Transport: "udp", Name: "web.default.svc.cluster.local.", Type: "A", Rcode: "NOERROR",
			Answers: []string{"A 10.96.0.20"}, LatencyMillis: 1.2}}})
	return o
}

var twoEndpoints = map[string]float64{"10.244.1.5:8080": 0.5, "10.244.2.5:8080": 0.5}

func bothReached() map[string]string {
	return map[string]string{"10.244.1.5:8080": "ok", "10.244.2.5:8080": "ok"}
}

func nodeRun(views []plan.NodeView) *report.CollectorRun {
	run := &report.CollectorRun{Image: "ghcr.io/svctrace/svctrace-collector:v0.1.0", Namespace: "svctrace-system",
		Profile: "netadmin", Capabilities: []string{"NET_ADMIN", "NET_RAW"}}
	for _, v := range views {
		run.Nodes = append(run.Nodes, report.CollectorNode{Node: v.Node, Roles: v.Roles, Inspected: v.Observation != nil, Failure: v.Failure})
	}
	return run
}

// manyNodes is a cluster of n Ready nodes node-001…; the endpoints stay on
// node-a and node-b.
func manyNodes(in *input.Input, n int) []string {
	var names []string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("node-%03d", i)
		names = append(names, name)
		in.Nodes[name] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	return names
}

func init() {
	scenarios = append(scenarios,
		scenario{name: "nodes-healthy", in: baseInput, views: func() (*report.CollectorRun, []plan.NodeView) {
			views := []plan.NodeView{
				{Node: "node-a", Roles: []string{"endpoints"}, Profile: "netadmin", Observation: nodeObservation("node-a", twoEndpoints, bothReached())},
				{Node: "node-b", Roles: []string{"endpoints"}, Profile: "netadmin", Observation: nodeObservation("node-b", twoEndpoints, bothReached())},
			}
			return nodeRun(views), views
		}},
		// node-b's kube-proxy still sends every connection to the endpoint
		// that was there before the slice changed, and node-a cannot
		// connect to web-2.
		scenario{name: "nodes-failing", in: func() *input.Input {
			in := baseInput()
			in.Slices = []discoveryv1.EndpointSlice{endpointSlice(true, "10.244.1.5", "10.244.2.5")}
			return in
		}, views: func() (*report.CollectorRun, []plan.NodeView) {
			refused := bothReached()
			refused["10.244.2.5:8080"] = "refused"
			views := []plan.NodeView{
				{Node: "node-a", Roles: []string{"endpoints"}, Profile: "netadmin", Observation: nodeObservation("node-a", twoEndpoints, refused)},
				{Node: "node-b", Roles: []string{"endpoints"}, Profile: "netadmin", Observation: nodeObservation("node-b",
					map[string]float64{"10.244.1.5:8080": 0.5, "10.244.9.9:8080": 0.5}, bothReached())},
			}
			return nodeRun(views), views
		}},
		// --all-nodes on 100 nodes: 97 agree, node-042 misses web-2,
		// node-077 cannot connect to web-1, node-099's collector never ran.
		scenario{name: "nodes-100", in: func() *input.Input {
			in := baseInput()
			manyNodes(in, 100)
			return in
		}, views: func() (*report.CollectorRun, []plan.NodeView) {
			var views []plan.NodeView
			for i := 1; i <= 100; i++ {
				name := fmt.Sprintf("node-%03d", i)
				v := plan.NodeView{Node: name, Roles: []string{"all-nodes"}, Profile: "netadmin"}
				switch name {
				case "node-042":
					v.Observation = nodeObservation(name, map[string]float64{"10.244.1.5:8080": 1}, bothReached())
				case "node-077":
					p := bothReached()
					p["10.244.1.5:8080"] = "timeout"
					v.Observation = nodeObservation(name, twoEndpoints, p)
				case "node-099":
					v.Failure = "collector on node node-099 (pod svctrace-collector-x1x2x) did not start within 30s"
				default:
					v.Observation = nodeObservation(name, twoEndpoints, bothReached())
				}
				views = append(views, v)
			}
			return nodeRun(views), views
		}},
	)
}

// manyEndpoints is web with n ready endpoints, 10.244.1.1… on node-a.
func manyEndpoints(n int) *input.Input {
	in := baseInput()
	var ips []string
	in.Pods = nil
	for i := 1; i <= n; i++ {
		ip := fmt.Sprintf("10.244.1.%d", i)
		ips = append(ips, ip)
		in.Pods = append(in.Pods, pod(fmt.Sprintf("web-%d", i), ip, "node-a"))
	}
	sl := endpointSlice(true, ips...)
	for i := range sl.Endpoints {
		sl.Endpoints[i].NodeName = ptr("node-a")
		sl.Endpoints[i].TargetRef.Name = fmt.Sprintf("web-%d", i+1)
	}
	in.Slices = []discoveryv1.EndpointSlice{sl}
	return in
}

func init() {
	// Twelve endpoints do not fit as columns: the grid counts per node
	// and names the odd endpoints. node-c lacks one and times out on
	// another.
	scenarios = append(scenarios, scenario{name: "nodes-12-endpoints", in: func() *input.Input {
		in := manyEndpoints(12)
		manyNodes(in, 0)
		in.Nodes["node-c"] = in.Nodes["node-a"]
		return in
	}, views: func() (*report.CollectorRun, []plan.NodeView) {
		all, probes := map[string]float64{}, map[string]string{}
		for i := 1; i <= 12; i++ {
			ep := fmt.Sprintf("10.244.1.%d:8080", i)
			all[ep], probes[ep] = 1.0/12, "ok"
		}
		short := map[string]float64{}
		for ep := range all {
			if ep != "10.244.1.7:8080" {
				short[ep] = 1.0 / 11
			}
		}
		slow := map[string]string{}
		for ep, o := range probes {
			slow[ep] = o
		}
		slow["10.244.1.3:8080"] = "timeout"
		var views []plan.NodeView
		for _, n := range []string{"node-a", "node-b"} {
			views = append(views, plan.NodeView{Node: n, Roles: []string{"selected"}, Profile: "netadmin", Observation: nodeObservation(n, all, probes)})
		}
		views = append(views, plan.NodeView{Node: "node-c", Roles: []string{"selected"}, Profile: "netadmin", Observation: nodeObservation("node-c", short, slow)})
		return nodeRun(views), views
	}})
}

// fleetInput is web with 300 ready endpoints over n nodes node-001…:
// 70 nodes × 300 endpoints are over the 20,000 cells a grid spells out, so
// the evidence names shared endpoint sets and the grid shares rows' cells.
func fleetInput(n int) *input.Input {
	in := baseInput()
	in.Pods = nil
	names := manyNodes(in, n)
	var ips []string
	for i := range 300 {
		ips = append(ips, fmt.Sprintf("10.244.%d.%d", 1+i/250, 1+i%250))
	}
	sl := endpointSlice(true, ips...)
	for i := range sl.Endpoints {
		node := names[i%n]
		sl.Endpoints[i].NodeName, sl.Endpoints[i].Zone = ptr(node), nil
		sl.Endpoints[i].TargetRef.Name = fmt.Sprintf("web-%d", i+1)
		in.Pods = append(in.Pods, pod(fmt.Sprintf("web-%d", i+1), ips[i], node))
	}
	in.Slices = []discoveryv1.EndpointSlice{sl}
	return in
}

func init() {
	// --all-nodes on 70 nodes of a 300-endpoint Service: 65 nodes' kube-proxy
	// still sends everything to an endpoint that is gone and does not
	// forward (each node names its own endpoints then), 3 are healthy,
	// node-069 lacks one endpoint, node-070's collector never ran.
	scenarios = append(scenarios, scenario{name: "nodes-fleet", in: func() *input.Input { return fleetInput(70) },
		views: func() (*report.CollectorRun, []plan.NodeView) {
			all := map[string]float64{}
			for _, sl := range fleetInput(70).Slices {
				for _, e := range sl.Endpoints {
					all[e.Addresses[0]+":8080"] = 1.0 / 300
				}
			}
			short := map[string]float64{}
			for ep := range all {
				if ep != "10.244.2.17:8080" {
					short[ep] = 1.0 / 299
				}
			}
			var views []plan.NodeView
			for i := 1; i <= 70; i++ {
				name := fmt.Sprintf("node-%03d", i)
				v := plan.NodeView{Node: name, Roles: []string{"all-nodes"}, Profile: "netadmin"}
				switch {
				case i <= 65:
					v.Observation = nodeObservation(name, map[string]float64{"10.244.9.9:8080": 1}, nil)
					v.Observation.Sections.Route.Data.IPv4Forward = "0"
				case i <= 68:
					v.Observation = nodeObservation(name, all, nil)
				case i == 69:
					v.Observation = nodeObservation(name, short, nil)
				default:
					v.Failure = "collector on node node-070 (pod svctrace-collector-q8r2t) did not start within 60s"
				}
				views = append(views, v)
			}
			return nodeRun(views), views
		}})
}
