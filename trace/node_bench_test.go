package trace

import (
	"fmt"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// bigObservation is a node whose iptables rules program every endpoint of
// bigInput(n) with equal shares, as kube-proxy would.
func bigObservation(tb testing.TB, in *input.Input) *collectorapi.Observation {
	var sel []collectorapi.IPTablesEndpointJump
	n := 0
	for _, sl := range in.Slices {
		n += len(sl.Endpoints)
	}
	for _, sl := range in.Slices {
		for _, e := range sl.Endpoints {
			sel = append(sel, jump("KUBE-SEP-"+e.Addresses[0], e.Addresses[0]+":8080", 1/float64(n)))
		}
	}
	b := iptRules(collectorapi.IPTablesBackendNFTables, 0, sel...)
	b.Ports[0].Entry[0].Raw = "-A KUBE-SERVICES -d 10.96.0.20/32 -p tcp --dport 80 -j KUBE-SVC-X"
	b.Ports[0].NodePort = 30080
	b.Ports[0].NodePorts = []collectorapi.IPTablesRule{{Raw: "-A KUBE-NODEPORTS -p tcp --dport 30080 -j KUBE-EXT-X"}}
	obs := observation(tb.(*testing.T), collectorapi.ModeIPTables, &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{b}}, nil)
	return obs
}

// BenchmarkJudgeWithNode measures the whole judgement of a 5,000-endpoint
// Service in 50 slices: API-side layers, policy, and one node's datapath with
// 5,000 programmed endpoints.
func BenchmarkJudgeWithNode(b *testing.B) {
	for _, n := range []int{500, 5000} {
		in := bigInput(n)
		in.Service.Spec.Ports[0].NodePort = 30080
		t := &testing.T{}
		obs := bigObservation(t, in)
		b.Run(fmt.Sprintf("endpoints=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Assemble(in, &plan.NodeReport{Nodes: []plan.NodeView{{Node: "node-00", Observation: obs}}}, Options{Now: fixedNow})
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "ms/trace")
		})
	}
}

func TestBigServiceNodeJudgement(t *testing.T) {
	in := bigInput(5000)
	in.Service.Spec.Ports[0].NodePort = 30080
	obs := bigObservation(t, in)
	tr := Assemble(in, &plan.NodeReport{Nodes: []plan.NodeView{{Node: "node-00", Observation: obs}}}, Options{Now: fixedNow})
	if _, ok := nodeCodes(tr, report.LayerDatapath, "node-00")[report.CodeDPRulesMatch]; !ok {
		t.Fatalf("5,000 programmed endpoints not judged matching: %v", keysOf(nodeCodes(tr, report.LayerDatapath, "")))
	}
}
