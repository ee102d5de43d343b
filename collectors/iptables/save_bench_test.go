package iptables

import (
	"bytes"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/test/bench/netfilter/kpgen"
)

// BenchmarkSaveFilter measures the legacy path's parser alone on 10k
// Services of kube-proxy-layout rules (15 MB, 40k comment-less endpoint
// chains): its CPU competes with iptables-legacy-save on a busy node.
func BenchmarkSaveFilter(b *testing.B) {
	var buf bytes.Buffer
	if err := kpgen.IPTables(&buf, kpgen.Bench(10000), kpgen.Options{}); err != nil {
		b.Fatal(err)
	}
	s := kpgen.BenchService(5000)
	q := Query{Service: collectorapi.ServiceSpec{Namespace: s.Namespace, Name: s.Name, ClusterIPs: []string{s.ClusterIP},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}}
	for _, e := range s.Endpoints {
		q.Endpoints = append(q.Endpoints, collectorapi.Endpoint{IP: e.IP, Ports: map[string]int32{"http": e.Port}, Ready: true})
	}
	plans := plan(q, "IPv4")
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		f := newSaveFilter(plans)
		if err := f.consume(bytes.NewReader(buf.Bytes())); err != nil {
			b.Fatal(err)
		}
		st := f.store()
		if !st.get(chainKey{"nat", chainServices}).exists {
			b.Fatal("KUBE-SERVICES not found")
		}
	}
}
