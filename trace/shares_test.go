package trace

import (
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// sharesOf is one port's node rows of the share table, by node.
func sharesOf(t *testing.T, tr *report.ServiceTrace) map[string]report.NodeShares {
	t.Helper()
	if tr.Shares == nil || len(tr.Shares.Ports) == 0 {
		t.Fatalf("no share table")
	}
	out := map[string]report.NodeShares{}
	for _, n := range tr.Shares.Ports[0].Nodes {
		out[n.Node] = n
	}
	return out
}

func shareString(n report.NodeShares) string {
	var parts []string
	for _, e := range n.Endpoints {
		s := e.Endpoint + "=" + percentOf(e.Share)
		if e.Weight != nil {
			s += "/w" + strconv.Itoa(*e.Weight)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func percentOf(f float64) string { return strconv.Itoa(int(f*100+0.5)) + "%" }

// TestShareTableHealthy: a healthy trace carries the split too, equal or not.
func TestShareTableHealthy(t *testing.T) {
	tr := judgeViews(t, nodeInput(),
		plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)},
		plan.NodeView{Node: "n2", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)})
	if tr.Verdict.Status != report.StatusPass {
		t.Fatalf("verdict %+v", tr.Verdict)
	}
	got := sharesOf(t, tr)
	for _, n := range []string{"n1", "n2"} {
		ns := got[n]
		if ns.Source != report.ShareProgrammed || shareString(ns) != "10.244.1.5:8080=50% 10.244.2.7:8080=50%" {
			t.Errorf("%s: %+v", n, ns)
		}
		if len(ns.Why) != 1 || !strings.Contains(ns.Why[0], "Cluster policy") || !strings.Contains(ns.Balancer, "statistic") {
			t.Errorf("%s why %v balancer %q", n, ns.Why, ns.Balancer)
		}
		if ns.Endpoints[0].Node != "n1" || ns.Endpoints[1].Node != "n2" {
			t.Errorf("endpoint nodes %+v", ns.Endpoints)
		}
	}
}

func TestShareTableReasons(t *testing.T) {
	t.Run("unequal shares are shown as programmed", func(t *testing.T) {
		ipt := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
			jump("KUBE-SEP-1", "10.244.1.5:8080", 0.8), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.2))}}
		tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, ipt, nil)})
		if s := shareString(sharesOf(t, tr)["n1"]); s != "10.244.1.5:8080=80% 10.244.2.7:8080=20%" {
			t.Errorf("shares %s", s)
		}
	})
	t.Run("internalTrafficPolicy Local and affinity", func(t *testing.T) {
		in := nodeInput(func(s *corev1.Service) {
			s.Spec.InternalTrafficPolicy = ptr(corev1.ServiceInternalTrafficPolicyLocal)
		})
		b := iptRules(collectorapi.IPTablesBackendNFTables, 10800, jump("KUBE-SEP-1", "10.244.1.5:8080", 1))
		b.Ports[0].Local, b.Ports[0].Service = b.Ports[0].Service, nil
		b.Ports[0].Local.Name = "KUBE-SVL-X"
		b.Ports[0].Entry[0].Jump = "KUBE-SVL-X"
		tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{b}}, nil)})
		ns := sharesOf(t, tr)["n1"]
		why := strings.Join(ns.Why, "; ")
		if !strings.Contains(why, "internalTrafficPolicy Local") || !strings.Contains(why, "ClientIP session affinity (10800 s)") {
			t.Errorf("why %q", why)
		}
		if shareString(ns) != "10.244.1.5:8080=100%" {
			t.Errorf("shares %s", shareString(ns))
		}
	})
	t.Run("terminating fallback", func(t *testing.T) {
		in := nodeInput()
		in.Slices[0] = *slice("web-abc", "web", "http", 8080, ep{ip: "10.244.1.5", pod: "web-1", node: "n1", terminating: true})
		ipt := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
			jump("KUBE-SEP-1", "10.244.1.5:8080", 1))}}
		tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, ipt, nil)})
		if why := strings.Join(sharesOf(t, tr)["n1"].Why, "; "); !strings.Contains(why, "falls back to serving terminating") {
			t.Errorf("why %q", why)
		}
	})
	t.Run("IPVS weights", func(t *testing.T) {
		obs := ipvsObservation(t, collectorapi.IPVSRealServer{Address: "10.244.1.5", Port: 8080, Weight: 1}, collectorapi.IPVSRealServer{Address: "10.244.2.7", Port: 8080, Weight: 1})
		tr := judgeViews(t, nodeInput(nodePortWeb), plan.NodeView{Node: "n1", Observation: obs})
		ns := sharesOf(t, tr)["n1"]
		if shareString(ns) != "10.244.1.5:8080=50%/w1 10.244.2.7:8080=50%/w1" || !strings.Contains(ns.Balancer, "IPVS scheduler rr") {
			t.Errorf("IPVS %+v (%s)", ns, shareString(ns))
		}
	})
	t.Run("Cilium Maglev entries", func(t *testing.T) {
		tr := judgeViews(t, hashInput(), plan.NodeView{Node: "n1", Observation: ebpfObservation(t, ciliumFixture(t, "default/hash"), nil)})
		ns := sharesOf(t, tr)["n1"]
		if !strings.HasPrefix(ns.Balancer, "Maglev (16381 table entries)") || len(ns.Endpoints) != 3 {
			t.Fatalf("Cilium %+v", ns)
		}
		total := 0
		for _, e := range ns.Endpoints {
			if e.Weight == nil || *e.Weight < 5460 || *e.Weight > 5461 {
				t.Errorf("Maglev entries %+v", e)
			} else {
				total += *e.Weight
			}
		}
		if total != 16381 {
			t.Errorf("entries sum %d", total)
		}
	})
	t.Run("collector failed: kube-proxy's expectation", func(t *testing.T) {
		tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n2", Failure: "image pull back-off"})
		ns := sharesOf(t, tr)["n2"]
		if ns.Source != report.ShareExpected || ns.Reason != "image pull back-off" || shareString(ns) != "10.244.1.5:8080=50% 10.244.2.7:8080=50%" {
			t.Errorf("expected row %+v", ns)
		}
	})
	t.Run("no node inspected: no table", func(t *testing.T) {
		tr := Assemble(nodeInput(), nil, Options{Now: fixedNow})
		if tr.Shares != nil {
			t.Errorf("shares without nodes: %+v", tr.Shares)
		}
	})
}

// TestShareTableFoldsLargePorts: past maxMatrixCells endpoint shares, nodes
// with an identical split name the first such node instead of repeating it.
func TestShareTableFoldsLargePorts(t *testing.T) {
	defer func(v int) { maxMatrixCells = v }(maxMatrixCells)
	maxMatrixCells = 3
	unequal := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{iptRules(collectorapi.IPTablesBackendNFTables, 0,
		jump("KUBE-SEP-1", "10.244.1.5:8080", 0.8), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.2))}}
	in := nodeInput()
	in.Nodes["n3"] = node("n3", true)
	tr := judgeViews(t, in,
		plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)},
		plan.NodeView{Node: "n2", Observation: observation(t, collectorapi.ModeIPTables, healthyIPT(), nil)},
		plan.NodeView{Node: "n3", Observation: observation(t, collectorapi.ModeIPTables, unequal, nil)})
	got := sharesOf(t, tr)
	if got["n1"].SameAs != "" || len(got["n1"].Endpoints) != 2 {
		t.Errorf("first row %+v", got["n1"])
	}
	if got["n2"].SameAs != "n1" || len(got["n2"].Endpoints) != 0 {
		t.Errorf("identical row %+v", got["n2"])
	}
	if got["n3"].SameAs != "" || shareString(got["n3"]) != "10.244.1.5:8080=80% 10.244.2.7:8080=20%" {
		t.Errorf("different row %+v", got["n3"])
	}
}
