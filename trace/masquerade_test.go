package trace

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

func TestMasqueradeJudged(t *testing.T) {
	nodePort := func(etp corev1.ServiceExternalTrafficPolicy) func(*corev1.Service) {
		return func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
			s.Spec.ExternalTrafficPolicy = etp
		}
	}
	// clusterExt is KUBE-EXT under externalTrafficPolicy Cluster as kube-proxy
	// v1.37 writes it (proxier.go: "masquerade traffic for … external destinations").
	clusterExt := func(masq bool) *collectorapi.IPTablesObservation {
		o := healthyIPT()
		p := &o.Backends[0].Ports[0]
		p.NodePort = 30080
		ext := &collectorapi.IPTablesChain{Name: "KUBE-EXT-X", Exists: true}
		if masq {
			ext.Rules = append(ext.Rules, collectorapi.IPTablesRule{Raw: `-A KUBE-EXT-X -m comment --comment "masquerade traffic for default/web:http external destinations" -j KUBE-MARK-MASQ`, Jump: "KUBE-MARK-MASQ"})
		}
		ext.Rules = append(ext.Rules, collectorapi.IPTablesRule{Raw: "-A KUBE-EXT-X -j KUBE-SVC-X", Jump: "KUBE-SVC-X"})
		p.External = ext
		return o
	}
	noMark := clusterExt(true)
	noMark.Backends[0].MarkMasq, noMark.Backends[0].MasqMark = nil, ""
	for _, tt := range []struct {
		name string
		svc  func(*corev1.Service)
		ipt  *collectorapi.IPTablesObservation
		want string
		not  []string
	}{
		{"ClusterIP only: nothing to say", nil, healthyIPT(), "", []string{report.CodeDPSourceLost, report.CodeDPSourceKept, report.CodeDPMasqExternal, report.CodeDPMasqMissing}},
		{"ETP Cluster masquerades", nodePort(corev1.ServiceExternalTrafficPolicyCluster), clusterExt(true), report.CodeDPSourceLost, []string{report.CodeDPMasqExternal}},
		{"ETP Cluster without the mark rule", nodePort(corev1.ServiceExternalTrafficPolicyCluster), clusterExt(false), report.CodeDPMasqExternal, []string{report.CodeDPSourceLost}},
		{"ETP Local keeps the source", nodePort(corev1.ServiceExternalTrafficPolicyLocal), etpLocalIPT("KUBE-SVL-X", jump("KUBE-SEP-1", "10.244.1.5:8080", 1)), report.CodeDPSourceKept, []string{report.CodeDPMasqMissing}},
		{"KUBE-MARK-MASQ sets no mark", nodePort(corev1.ServiceExternalTrafficPolicyCluster), noMark, report.CodeDPMasqMissing, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var in *input.Input
			if tt.svc != nil {
				in = nodeInput(tt.svc)
			} else {
				in = nodeInput()
			}
			tr := judgeViews(t, in, plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, tt.ipt, nil)})
			assertNoCode(t, tr, report.LayerDatapath, "n1", tt.not...)
			if tt.want != "" {
				wantCode(t, tr, report.LayerDatapath, "n1", tt.want)
			}
		})
	}
}

// TestMasqueradeJudgedNFTables: kube-proxy's nftables proxier writes, under
// externalTrafficPolicy Cluster, "mark set mark or 0x4000" commented
// "masquerade" first in the external chain (pkg/proxy/nftables/proxier.go;
// collectors/testdata/nftables/kubeproxy-overall.json, external-4AT6LBPK).
func TestMasqueradeJudgedNFTables(t *testing.T) {
	nodePort := func(s *corev1.Service) {
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports[0].NodePort = 30080
	}
	mk := func(masq bool) *collectorapi.NFTablesObservation {
		o := nftObservation("10.244.1.5:8080", "10.244.2.7:8080")
		p := &o.Tables[0].Ports[0]
		p.NodePort = 30080
		p.ServiceNodePorts = []collectorapi.NFTablesElement{{Map: "service-nodeports", Key: "tcp . 30080", Found: true, Verdict: "goto external-X", Target: "external-X"}}
		ext := &collectorapi.NFTablesChain{Name: "external-X", Exists: true}
		if masq {
			ext.Rules = append(ext.Rules, collectorapi.NFTablesRule{Text: "meta mark set meta mark | 0x00004000", Comment: "masquerade", Mark: "0x00004000"})
		}
		ext.Rules = append(ext.Rules, collectorapi.NFTablesRule{Text: "goto service-X", Verdict: "goto", Target: "service-X"})
		p.External = ext
		return o
	}
	tr := judgeViews(t, nodeInput(nodePort), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeNFTables, nil, mk(true))})
	c := wantCode(t, tr, report.LayerDatapath, "n1", report.CodeDPSourceLost, "nftables (ip")
	if evidence(c, "rule") != "meta mark set meta mark | 0x00004000" {
		t.Errorf("evidence %+v", c.Evidence)
	}
	tr = judgeViews(t, nodeInput(nodePort), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeNFTables, nil, mk(false))})
	wantCode(t, tr, report.LayerDatapath, "n1", report.CodeDPMasqExternal, "external-X")
}

// TestMasqueradePathOnlyOnLiveBackend: with kube-proxy's chains in both
// iptables backends, the masquerade path is judged on the one capturing the
// Service (kube-proxy writes it); the other's missing KUBE-POSTROUTING is a
// leftover's, which nothing goes through.
func TestMasqueradePathOnlyOnLiveBackend(t *testing.T) {
	healthy := &collectorapi.IPTablesPostrouting{Exists: true,
		Jumps: []collectorapi.IPTablesRule{{Raw: `-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING`, Jump: "KUBE-POSTROUTING",
			Options: []collectorapi.IPTablesOption{{Name: "-m", Args: []string{"comment"}}, {Name: "--comment", Args: []string{"kubernetes postrouting rules"}}, {Name: "-j", Args: []string{"KUBE-POSTROUTING"}}}}},
		Rules: []collectorapi.IPTablesRule{{Raw: "-A KUBE-POSTROUTING -j MASQUERADE --random-fully", Jump: "MASQUERADE",
			Options: []collectorapi.IPTablesOption{{Name: "-j", Args: []string{"MASQUERADE"}}, {Name: "--random-fully"}}}}}
	live := iptRules(collectorapi.IPTablesBackendNFTables, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 0.5), jump("KUBE-SEP-2", "10.244.2.7:8080", 0.5))
	live.Ports[0].Endpoints[0].Hairpin = "10.244.1.5/32"
	live.Postrouting = healthy
	leftover := iptRules(collectorapi.IPTablesBackendLegacy, 0, jump("KUBE-SEP-1", "10.244.1.5:8080", 1))
	leftover.Ports[0].Endpoints[0].Hairpin = "10.244.1.5/32"
	leftover.Ports[0].Entry = nil
	leftover.Postrouting = &collectorapi.IPTablesPostrouting{}
	obs := &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{live, leftover}}
	tr := judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, obs, nil)})
	assertNoCode(t, tr, report.LayerDatapath, "n1", report.CodeDPMasqNoRule, report.CodeDPMasqNoJump)

	// The same leftover as the only backend holding the Service is judged.
	obs = &collectorapi.IPTablesObservation{Backends: []collectorapi.IPTablesBackendObservation{leftover}}
	tr = judgeViews(t, nodeInput(), plan.NodeView{Node: "n1", Observation: observation(t, collectorapi.ModeIPTables, obs, nil)})
	wantCode(t, tr, report.LayerDatapath, "n1", report.CodeDPMasqNoRule, "KUBE-POSTROUTING does not exist")
}
