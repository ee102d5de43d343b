package programmed

import (
	"encoding/json"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/expect"
)

// TestFromIPVSFrontends: the recorded NodePort Service's virtual servers
// (kube-proxy v1.37.2, one per node address) become one Frontend each,
// without a policy of their own.
func TestFromIPVSFrontends(t *testing.T) {
	raw, err := os.ReadFile("../../collectors/testdata/observations/ipvs-uml/np.json")
	if err != nil {
		t.Fatal(err)
	}
	var obs collectorapi.Observation
	if err := json.Unmarshal(raw, &obs); err != nil {
		t.Fatal(err)
	}
	ports := FromIPVS(&obs)
	if len(ports) != 1 {
		t.Fatalf("%d ports", len(ports))
	}
	fs := ports[0].Frontends
	if len(fs) != 2 {
		t.Fatalf("%+v", fs)
	}
	for _, f := range fs {
		if f.Kind != FrontendNodePort || !f.Found || f.PolicyLocal != nil || len(f.Endpoints) != 2 || f.Port != 30080 {
			t.Errorf("%+v", f)
		}
	}
	if fs[0].Name != "nodePort 10.250.0.1:30080" {
		t.Errorf("name %q", fs[0].Name)
	}
}

// TestFromCiliumFrontends: what Cilium v1.20.2's own map types hold for a
// dual-stack LoadBalancer under externalTrafficPolicy Local: every external
// frontend carries Local and two scopes, its external scope the node's own
// backend, its internal scope the cluster's selectable ones; the ClusterIP
// frontend's backends past its count are inactive, and the one in
// maintenance is withheld.
func TestFromCiliumFrontends(t *testing.T) {
	raw, err := os.ReadFile("../testdata/ebpf/cilium-v1.20.2-observations.json")
	if err != nil {
		t.Fatal(err)
	}
	var all map[string]*collectorapi.CiliumObservation
	if err := json.Unmarshal(raw, &all); err != nil {
		t.Fatal(err)
	}
	pe := expect.PortExpectation{PortName: "http", Protocol: "TCP", Port: 80, NodePort: 30080, Family: corev1.IPv4Protocol}
	pp := FromCilium(all["default/web"], pe)
	if pp == nil || !pp.Captured || !pp.NodePortFound || pp.EBPF == nil {
		t.Fatalf("%+v", pp)
	}
	if len(pp.Frontends) != 3 {
		t.Fatalf("%d frontends, want externalIP, loadBalancerIP, nodePort", len(pp.Frontends))
	}
	for _, f := range pp.Frontends {
		if !f.Found || f.PolicyLocal == nil || !*f.PolicyLocal || !f.TwoScopes || f.Internal == nil {
			t.Errorf("%s: %+v", f.Name, f)
			continue
		}
		if len(f.Endpoints) != 1 || f.Endpoints[0].Endpoint != "10.244.1.5:8080" || len(f.Internal.Endpoints) != 2 {
			t.Errorf("%s: external %v, internal %v", f.Name, f.Endpoints, f.Internal.Endpoints)
		}
	}
	if len(pp.EBPF.Inactive) != 2 || !pp.EBPF.Quarantined["10.244.3.9:8080"] || !pp.EBPF.Maintenance["10.244.3.10:8080"] {
		t.Errorf("inactive %v, quarantined %v, maintenance %v", pp.EBPF.Inactive, pp.EBPF.Quarantined, pp.EBPF.Maintenance)
	}
}

// TestFromCalicoFrontends: every NodePort entry is a Frontend of its own,
// with the policy flag it carries and the ordinals it selects.
func TestFromCalicoFrontends(t *testing.T) {
	bes := []collectorapi.CalicoBackend{{Ordinal: 0, Found: true, Address: "10.244.1.5", Port: 8080}, {Ordinal: 1, Address: ""}}
	fe := func(kind, addr string, flags uint32) collectorapi.CalicoFrontend {
		return collectorapi.CalicoFrontend{Frontend: kind, Address: addr, Port: 30080, Protocol: "TCP", SourceCIDR: "0.0.0.0/0", Found: true,
			ID: 1, Count: 2, LocalCount: 1, Flags: flags, Backends: bes}
	}
	cip := fe("clusterIP", "10.96.0.20", 0)
	cip.Port = 80
	c := &collectorapi.CalicoObservation{Detected: true, Frontends: []collectorapi.CalicoFrontend{cip,
		fe("nodePort", "10.0.0.11", 0x1), fe("nodePort", "255.255.255.255", 0)}}
	pp := FromCalico(c, expect.PortExpectation{PortName: "http", Protocol: "TCP", Port: 80, NodePort: 30080, Family: corev1.IPv4Protocol})
	if pp == nil || len(pp.Frontends) != 2 || !pp.NodePortFound {
		t.Fatalf("%+v", pp)
	}
	local, cluster := pp.Frontends[0], pp.Frontends[1]
	if !*local.PolicyLocal || len(local.Endpoints) != 1 || len(local.Broken) != 0 {
		t.Errorf("Local entry selects the first LocalCount ordinal only: %+v", local)
	}
	if *cluster.PolicyLocal || len(cluster.Broken) != 1 || len(pp.EBPF.ClusterIP.Broken) != 1 {
		t.Errorf("Cluster entries select every ordinal, one without a backend: %+v, ClusterIP %v", cluster, pp.EBPF.ClusterIP.Broken)
	}
}
