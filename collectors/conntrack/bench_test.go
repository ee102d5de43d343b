package conntrack

import (
	"fmt"
	"testing"

	ct "github.com/ti-mo/conntrack"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// BenchmarkServiceFlows reads one Service's flows from a table that also
// holds n other NATed entries, with both dump methods, in the same run:
//
//	go test -run '^$' -bench ServiceFlows ./collectors/conntrack
//
// The tuple filter's cost should stay flat as n grows; the status filter's
// grows with n (time and bytes allocated).
func BenchmarkServiceFlows(b *testing.B) {
	for _, n := range []int{1000, 10000, 50000} {
		s := netns.NewScenario(b)
		cluster := fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort)
		for i := 0; i < 3; i++ {
			s.Connect(b, cluster)
		}
		s.Flood(b, n)
		req := &collectorapi.Request{
			Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{s.ClusterIP},
				Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort)}}},
			Endpoints: []collectorapi.Endpoint{{IP: s.PodIP, Ports: map[string]int32{"http": int32(s.BackendPort)}}},
		}
		for _, method := range []string{MethodTupleFilter, MethodStatusFilter} {
			b.Run(fmt.Sprintf("entries=%d/method=%s", n, method), func(b *testing.B) {
				r := &Reader{NetNS: int(s.Node.Handle(b)), Method: method}
				var dumped int
				netns.Do(b, s.Node, func() {
					conn, err := ct.Dial(r.netlinkConfig())
					if err != nil {
						b.Fatal(err)
					}
					defer conn.Close()
					b.ReportAllocs()
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						flows, _, err := r.dumpFlows(conn, r.netlinkConfig(), req, nil)
						if err != nil {
							b.Fatal(err)
						}
						g := GroupFlows(flows, req, nil, DefaultFlowCap)
						if len(g.Frontends) != 1 || g.Frontends[0].Total != 3 {
							b.Fatalf("service flows %+v", g.Frontends)
						}
						dumped = g.DumpedEntries
					}
				})
				b.ReportMetric(float64(dumped), "entries-dumped")
			})
		}
	}
}
