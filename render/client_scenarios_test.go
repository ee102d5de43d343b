package render

import (
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// A trace from pod frontend on node-a with --client-netns: from the Pod's
// own namespace web-2 times out (no policy explains it), and its search
// list sends the short name to another namespace's web first.
func init() {
	client := pod("frontend", "10.244.1.9", "node-a")
	client.Labels = map[string]string{"app": "frontend"}
	scenarios = append(scenarios, scenario{name: "from-client-netns", in: baseInput,
		opts: trace.Options{From: report.PolicyClientFromPod(&client)},
		views: func() (*report.CollectorRun, []plan.NodeView) {
			a := nodeObservation("node-a", twoEndpoints, bothReached())
			a.Sections.Probe.Data.Client = &collectorapi.ClientProbeObservation{Namespace: "default", Name: "frontend",
				PID: 4242, Command: "frontend", NetNS: "net:[4026532871]",
				Probes: []collectorapi.Probe{
					{Target: "clusterIP", PortName: "http", Address: "10.96.0.20:80", Protocol: "TCP", Outcome: "connected", LatencyMillis: 0.6},
					{Target: "endpoint", PortName: "http", Address: "10.244.1.5:8080", Protocol: "TCP", Outcome: "connected", LatencyMillis: 0.3},
					{Target: "endpoint", PortName: "http", Address: "10.244.2.5:8080", Protocol: "TCP", Outcome: "failed", ErrorClass: "timeout",
						Error: "dial tcp 10.244.2.5:8080: i/o timeout", LatencyMillis: 2000, Attempts: 2, FirstError: "dial tcp 10.244.2.5:8080: i/o timeout"},
				},
				Resolver: &collectorapi.ClientResolver{Nameservers: []string{"10.96.0.10"}, Ndots: 5, Name: "web",
					Search:   []string{"tools.svc.cluster.local", "default.svc.cluster.local", "svc.cluster.local", "cluster.local"},
					Answered: "web.tools.svc.cluster.local.", Addrs: []string{"10.96.7.7"},
					Queries: []collectorapi.ClientQuery{{Name: "web.tools.svc.cluster.local.", Type: "A", Server: "10.96.0.10:53",
						Rcode: "NOERROR", Answers: []string{"A 10.96.7.7"}, LatencyMillis: 0.9}}},
			}
			views := []plan.NodeView{
				{Node: "node-a", Roles: []string{"endpoints", "client"}, Profile: "netadmin+netns", Observation: a},
				{Node: "node-b", Roles: []string{"endpoints"}, Profile: "netadmin", Observation: nodeObservation("node-b", twoEndpoints, bothReached())},
			}
			run := nodeRun(views)
			run.Nodes[0].Profile = "netadmin+netns"
			return run, views
		}})
}
