package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// fleetBenchInput is the fleet bench's Service (test/bench/fleet/gen.sh):
// web, ClusterIP 10.96.0.50, its endpoints in slices of 100 spread over
// 1,000 node names, and nodes Ready nodes fleet-0000….
func fleetBenchInput(nodes, endpoints int) *input.Input {
	in := &input.Input{Namespace: "default", Name: "web", Nodes: map[string]*corev1.Node{}, NodesListed: true}
	in.Service = &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.50", ClusterIPs: []string{"10.96.0.50"}, Type: corev1.ServiceTypeClusterIP,
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}}}
	for i := range nodes {
		name := fmt.Sprintf("fleet-%04d", i)
		in.Nodes[name] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	for s := 0; s*100 < endpoints; s++ {
		sl := discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%03d", s), Namespace: "default",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web"}}, AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(8080)), Protocol: ptr(corev1.ProtocolTCP)}}}
		for e := s * 100; e < (s+1)*100 && e < endpoints; e++ {
			sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.%d.%d.%d", 244+e/65536, e/256%256, e%256)},
				NodeName: ptr(fmt.Sprintf("fleet-%04d", e%1000)), Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}})
		}
		in.Slices = append(in.Slices, sl)
	}
	return in
}

// fleetBenchJSON is the JSON of a trace of the fleet bench's Service on
// nodes nodes, each observed as the recorded real observation the bench
// serves (a kube-proxy that programs none of these endpoints: the worst
// case for evidence).
func fleetBenchJSON(t *testing.T, nodes, endpoints int) []byte {
	t.Helper()
	raw, err := os.ReadFile("../collectors/testdata/observations/real-kube-proxy-iptables-netns.json")
	if err != nil {
		t.Fatal(err)
	}
	in := fleetBenchInput(nodes, endpoints)
	var views []plan.NodeView
	for name := range in.Nodes {
		var o collectorapi.Observation
		if err := json.Unmarshal(raw, &o); err != nil {
			t.Fatal(err)
		}
		views = append(views, plan.NodeView{Node: name, Observation: &o})
	}
	var out bytes.Buffer
	if err := Print(&out, trace.Assemble(in, &plan.NodeReport{Nodes: views}, trace.Options{}), FormatJSON, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestFleetTraceGrowsWithNodesPlusEndpoints: 1,000 nodes that each miss
// all of a Service's endpoints give a result that grows with nodes plus
// endpoints. Doubling the endpoints adds what the endpoints themselves
// take (their summary, one shared set), not a copy per node, and the JSON
// still holds every node's result in every node layer, the grid and the
// share table.
func TestFleetTraceGrowsWithNodesPlusEndpoints(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 nodes")
	}
	small, large := fleetBenchJSON(t, 1000, 2500), fleetBenchJSON(t, 1000, 5000)
	perEndpoint := float64(len(large)-len(small)) / 2500
	t.Logf("1,000 nodes: %d KiB of JSON at 2,500 endpoints, %d KiB at 5,000: %.0f bytes per added endpoint", len(small)>>10, len(large)>>10, perEndpoint)
	// An endpoint's summary is about 200 bytes of indented JSON; each
	// node repeating it, even as a bare "ip:port", would add 20,000.
	if perEndpoint > 1000 {
		t.Errorf("%.0f bytes of JSON per added endpoint on 1,000 nodes: per-node evidence still lists the endpoints", perEndpoint)
	}
	var tr report.ServiceTrace
	if err := json.Unmarshal(large, &tr); err != nil {
		t.Fatal(err)
	}
	for _, name := range report.NodeLayers {
		if n := len(tr.Layer(name).Nodes); n != 1000 {
			t.Errorf("layer %s has %d node results, want 1000", name, n)
		}
	}
	if tr.Matrix == nil || len(tr.Matrix.Ports) != 1 || len(tr.Matrix.Ports[0].Nodes) != 1000 {
		t.Fatalf("the grid does not hold 1,000 rows: %+v", tr.Matrix)
	}
	first := tr.Matrix.Ports[0].Nodes[0]
	for _, r := range tr.Matrix.Ports[0].Nodes[1:] {
		if r.SameAs != first.Node || r.Expected != 5000 || r.Programmed != 0 || r.Status != report.StatusFail {
			t.Fatalf("row %s: sameAs %q, %d/%d %s; want the cells of %s, 0/5000 fail", r.Node, r.SameAs, r.Programmed, r.Expected, r.Status, first.Node)
		}
	}
	if tr.Shares == nil || len(tr.Shares.Ports[0].Nodes) != 1000 {
		t.Fatal("the share table does not hold 1,000 nodes")
	}
	// Every node's missing endpoints are the shared set, all 5,000.
	sets := map[string]int{}
	for _, s := range tr.EndpointSets {
		sets[s.ID] = len(s.Endpoints)
	}
	missing := 0
	for _, c := range tr.Layer(report.LayerDatapath).Checks {
		if c.Code != report.CodeDPMissingEndpoints {
			continue
		}
		missing++
		f := c.Evidence.Fields[0]
		if f.Key != "missing" || sets[f.Set] != 5000 || len(f.Items) != 0 || len(f.Except) != 0 {
			t.Fatalf("node %s: missing field %+v, want all of a shared set of 5,000", c.Node, f)
		}
	}
	if missing != 1000 {
		t.Errorf("%d nodes report missing endpoints, want 1000", missing)
	}
}
