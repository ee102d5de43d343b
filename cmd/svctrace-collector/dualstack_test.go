package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakeapi"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// TestCollectorAgainstRealKubeProxyDualStack runs the real kube-proxy v1.37
// for a RequireDualStack Service (IPv4 first) on a dual-stack node, in
// iptables mode (one proxier per family: iptables for IPv4, ip6tables for
// IPv6) and in nftables mode (tables ip and ip6 kube-proxy), and checks
// that the collector reads both families' rules and that both ClusterIPs
// connect through them. With SVCTRACE_DUMP_DIR set it writes the
// observation and the API objects there
// (real-kube-proxy-<mode>-dualstack-netns.json and dualstack/api.json, the
// fixtures in collectors/testdata/observations).
func TestCollectorAgainstRealKubeProxyDualStack(t *testing.T) {
	kp := kubeProxyBinary(t)
	bin := buildCollector(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"iptables", "nftables"} {
		t.Run(mode, func(t *testing.T) {
			s := netns.NewPlainScenario(t)
			s.EnableIPv6(t)
			cluster := fakeapi.Cluster{NodeName: "svct-node", NodeIP: s.NodeIP, SecondaryNodeIP: netns.NodeIP6,
				Services: []fakeapi.Service{{Namespace: "default", Name: "web", ClusterIP: s.ClusterIP, SecondaryClusterIP: netns.ClusterIP6,
					PortName: "http", Port: int32(s.ServicePort), TargetPort: int32(s.BackendPort),
					Endpoints: []string{s.PodIP}, SecondaryEndpoints: []string{netns.PodIP6}, EndpointNode: "svct-node"}}}
			_, log := startKubeProxy(t, s, self, kp, mode, cluster, s.NodeIP, "10.244.0.0/16,fd00:10:244::/56")
			waitProgrammed(t, s.Node, mode, "IPv4", s.ClusterIP, log)
			waitProgrammed(t, s.Node, mode, "IPv6", netns.ClusterIP6, log)
			v4 := fmt.Sprintf("%s:%d", s.ClusterIP, s.ServicePort)
			v6 := fmt.Sprintf("[%s]:%d", netns.ClusterIP6, s.ServicePort)
			s.Connect(t, v4)
			s.Connect(t, v6)

			port := map[string]int32{"http": int32(s.BackendPort)}
			req := collectorapi.Request{APIVersion: collectorapi.RequestAPIVersion, Kind: collectorapi.RequestKind, NodeName: "svct-node",
				Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", Type: "ClusterIP", ClusterIPs: []string{s.ClusterIP, netns.ClusterIP6},
					Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: int32(s.ServicePort), TargetPort: fmt.Sprint(s.BackendPort)}}},
				Endpoints: []collectorapi.Endpoint{{IP: s.PodIP, Ports: port, Ready: true, Serving: true, NodeName: "svct-node"},
					{IP: netns.PodIP6, Ports: port, Ready: true, Serving: true, NodeName: "svct-node"}},
				PodIPs:   []string{s.PodIP, netns.PodIP6},
				Sections: []string{"proxy", "iptables", "nftables", "probe"}}
			dump := os.Getenv("SVCTRACE_DUMP_DIR")
			if dump != "" {
				t.Setenv("SVCTRACE_DUMP_OBSERVATION", filepath.Join(dump, "real-kube-proxy-"+mode+"-dualstack-netns.json"))
				nodes, svcs, slices := cluster.Objects()
				b, err := json.MarshalIndent(map[string]any{"nodes": nodes, "services": svcs, "endpointSlices": slices}, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(dump, "dualstack"), 0o755); err != nil {
					t.Fatal(err)
				}
				writeFile(t, filepath.Join(dump, "dualstack", "api.json"), string(b)+"\n")
			}
			obs := runIn(t, s.Node, bin, req)

			for _, addr := range []string{v4, v6} {
				if !connected(obs, addr) {
					t.Errorf("ClusterIP %s probe through kube-proxy's rules: %+v", addr, obs.Sections.Probe.Data.Probes)
				}
			}
			families := map[string]bool{}
			switch mode {
			case "iptables":
				for _, b := range obs.Sections.IPTables.Data.Backends {
					if b.KubeProxyChains && len(b.Ports) == 1 && b.Ports[0].Service != nil && b.Ports[0].Service.Exists {
						families[b.Family] = true
					}
				}
			case "nftables":
				for _, tb := range obs.Sections.NFTables.Data.Tables {
					if tb.Present && len(tb.Ports) == 1 {
						families[tb.Family] = true
					}
				}
			}
			if len(families) != 2 {
				t.Errorf("%s: the Service's rules were read in %d families (%v), want both", mode, len(families), families)
			}
		})
	}
}
