package trace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// ipvsRecordedDir holds what the collector observed of the real kube-proxy
// v1.37.2 in IPVS mode inside user-mode Linux (test/testbed/uml/ipvsrecord;
// see collectors/testdata/PROVENANCE.md), one Service per file, and the API
// objects kube-proxy was fed.
const ipvsRecordedDir = "../collectors/testdata/observations/ipvs-uml"

// ipvsRecorded is the Input for one recorded Service and its observation.
func ipvsRecorded(t *testing.T, name string) (*input.Input, *collectorapi.Observation) {
	t.Helper()
	var api struct {
		Node           string                      `json:"node"`
		Services       []corev1.Service            `json:"services"`
		EndpointSlices []discoveryv1.EndpointSlice `json:"endpointSlices"`
	}
	b, err := os.ReadFile(filepath.Join(ipvsRecordedDir, "api.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &api); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile(filepath.Join(ipvsRecordedDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var obs collectorapi.Observation
	if err := json.Unmarshal(b, &obs); err != nil {
		t.Fatal(err)
	}
	in := nodeInput()
	in.Name = name
	in.Service = nil
	for i := range api.Services {
		if api.Services[i].Name == name {
			in.Service = &api.Services[i]
		}
	}
	if in.Service == nil {
		t.Fatalf("no Service %s in api.json", name)
	}
	in.Slices = nil
	for _, s := range api.EndpointSlices {
		if s.Labels[discoveryv1.LabelServiceName] == name {
			in.Slices = append(in.Slices, s)
		}
	}
	in.Pods = nil
	in.Nodes = map[string]*corev1.Node{api.Node: node(api.Node, true), "other-node": node("other-node", true)}
	if obs.NodeName != api.Node {
		t.Fatalf("observation of node %q, API node %q", obs.NodeName, api.Node)
	}
	return in, &obs
}

// TestJudgeRealIPVS judges each recorded Service as the real kube-proxy
// programmed it (and, for the fault-* Services, as it was broken by hand
// afterwards with ipvsadm, ip, ipset and sysctl).
func TestJudgeRealIPVS(t *testing.T) {
	healthyBad := []string{report.CodeDPNoRules, report.CodeDPMissingEndpoints, report.CodeDPStaleEndpoints, report.CodeDPUnequalShares, report.CodeDPNodePortMissing,
		report.CodeDPIPVSNotOnDummy, report.CodeDPIPVSSetReject, report.CodeDPIPVSSetMissing, report.CodeDPIPVSSysctl, report.CodeDPIPVSExternalRealServers,
		report.CodeDPETPLocalNoLocal, report.CodeDPSectionError}
	for _, tt := range []struct {
		name string
		want []string // codes that must be there (on the recorded node)
		bad  []string // codes that must not
		fail bool     // the datapath layer fails
	}{
		{name: "web", want: []string{report.CodeDPRulesMatch, report.CodeDPOwner, report.CodeDPIPVSDeprecated}, bad: healthyBad},
		// One virtual server per node IP (10.250.0.1 and 10.251.0.1): no DP020.
		{name: "np", want: []string{report.CodeDPRulesMatch}, bad: healthyBad},
		{name: "sticky", want: []string{report.CodeDPRulesMatch, report.CodeDPAffinityOK}, bad: append(healthyBad, report.CodeDPAffinityMissing, report.CodeDPAffinityTimeout)},
		// ETP Local: the NodePort virtual servers hold only the local endpoint.
		{name: "etp-local", want: []string{report.CodeDPRulesMatch}, bad: healthyBad},
		// ETP Local without a local endpoint: IPVS falls back to the cluster
		// endpoint (no drop, unlike iptables and nftables).
		{name: "etp-local-none", want: []string{report.CodeDPIPVSETPLocalFallback, report.CodeDPRulesMatch}, bad: healthyBad},
		{name: "ext", want: []string{report.CodeDPRulesMatch}, bad: healthyBad},
		{name: "lb", want: []string{report.CodeDPRulesMatch}, bad: healthyBad},
		{name: "empty", bad: healthyBad},
		// internalTrafficPolicy Local on a NodePort Service, no local
		// endpoint: the ClusterIP virtual server holds the cluster endpoint
		// (syncEndpoint), not a drop and not a stale real server.
		{name: "itp-local-np-none", want: []string{report.CodeDPIPVSITPLocalFallback, report.CodeDPRulesMatch}, bad: append(healthyBad, report.CodeDPDroppedByDesign)},
		// An externalIP that is the node's own address: not on kube-ipvs0.
		{name: "ext-node-ip", want: []string{report.CodeDPRulesMatch}, bad: healthyBad},
		{name: "fault-rs-deleted", want: []string{report.CodeDPMissingEndpoints}, fail: true},
		{name: "fault-no-kube-ipvs0", want: []string{report.CodeDPIPVSNotOnDummy}, bad: []string{report.CodeDPRulesMatch}, fail: true},
		{name: "fault-weight0", want: []string{report.CodeDPIPVSDraining, report.CodeDPMissingEndpoints}, fail: true},
		{name: "fault-persistence", want: []string{report.CodeDPAffinityTimeout}, bad: []string{report.CodeDPAffinityOK}},
		{name: "fault-no-ipset", want: []string{report.CodeDPIPVSSetReject}, bad: []string{report.CodeDPRulesMatch}, fail: true},
		{name: "fault-sysctls", want: []string{report.CodeDPIPVSSysctl, report.CodeDPRulesMatch}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, obs := ipvsRecorded(t, tt.name)
			tr := judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: obs})
			got := nodeCodes(tr, report.LayerDatapath, obs.NodeName)
			for _, c := range tt.want {
				requireNodeCheck(t, tr, report.LayerDatapath, c, obs.NodeName)
			}
			for _, c := range tt.bad {
				if chk, ok := got[c]; ok {
					t.Errorf("unexpected %s: %s", c, chk.Message)
				}
			}
			if failed := tr.Layer(report.LayerDatapath).Status == report.StatusFail; failed != tt.fail {
				var all []string
				for _, c := range tr.Layer(report.LayerDatapath).Checks {
					all = append(all, c.Code+" "+c.Message)
				}
				t.Errorf("datapath %s, want fail=%v:\n%s", tr.Layer(report.LayerDatapath).Status, tt.fail, strings.Join(all, "\n"))
			}
		})
	}
}

// TestJudgeRealIPVSMessages pins what the IPVS-only checks say, on the
// recorded faults.
func TestJudgeRealIPVSMessages(t *testing.T) {
	for _, tt := range []struct {
		name, code string
		says       []string
	}{
		{"fault-no-kube-ipvs0", report.CodeDPIPVSNotOnDummy, []string{"10.96.0.61", "kube-ipvs0"}},
		{"fault-no-ipset", report.CodeDPIPVSSetReject, []string{"10.96.0.64,tcp:80 in KUBE-CLUSTER-IP", "KUBE-IPVS-FILTER"}},
		{"fault-weight0", report.CodeDPIPVSDraining, []string{"10.244.2.7:8080"}},
		{"fault-sysctls", report.CodeDPIPVSSysctl, []string{"net.ipv4.vs.expire_nodest_conn=0"}},
		{"fault-persistence", report.CodeDPAffinityTimeout, []string{"60s", "600s"}},
		{"etp-local-none", report.CodeDPIPVSETPLocalFallback, []string{"30082"}},
	} {
		in, obs := ipvsRecorded(t, tt.name)
		tr := judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: obs})
		c, ok := nodeCodes(tr, report.LayerDatapath, obs.NodeName)[tt.code]
		if !ok {
			t.Errorf("%s: no %s", tt.name, tt.code)
			continue
		}
		for _, s := range tt.says {
			if !strings.Contains(c.Message, s) {
				t.Errorf("%s %s: %q does not say %q", tt.name, tt.code, c.Message, s)
			}
		}
	}
}

// TestJudgeRealIPVSNodePortGone: the recorded NodePort Service with its
// virtual servers on both node IPs gone is DP020.
func TestJudgeRealIPVSNodePortGone(t *testing.T) {
	in, obs := ipvsRecorded(t, "np")
	vss := obs.Sections.IPVS.Data.VirtualServers
	for i := range vss {
		if vss[i].Frontend == "nodePort" {
			vss[i].Found, vss[i].RealServers = false, nil
		}
	}
	tr := judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: obs})
	requireNodeCheck(t, tr, report.LayerDatapath, report.CodeDPNodePortMissing, obs.NodeName)
}

func TestKernelBefore(t *testing.T) {
	for rel, want := range map[string]bool{"6.1.176": false, "5.4.0-150-generic": true, "5.9.0": false, "4.19.0+": true, "": false, "x": false} {
		if got := kernelBefore(rel, 5, 9); got != want {
			t.Errorf("%q: %v", rel, got)
		}
	}
}

// TestJudgeRealIPVSNodePortSets: the recorded NodePort Services with one
// entry taken out of kube-proxy's KUBE-NODE-PORT sets. Under
// externalTrafficPolicy Cluster a port missing from KUBE-NODE-PORT-TCP is
// never marked for masquerade, as an iptables external chain without the
// mark: DP050, an error. Under Local the KUBE-NODE-PORT-LOCAL-TCP set
// RETURNs first, so missing from KUBE-NODE-PORT-TCP changes nothing, and
// missing from the Local set only loses the client's address (DP035).
func TestJudgeRealIPVSNodePortSets(t *testing.T) {
	for _, tt := range []struct {
		name, service, set string
		want               string
		bad                []string
		fail               bool
	}{
		{"cluster, masquerade set", "np", "KUBE-NODE-PORT-TCP", report.CodeDPMasqExternal, []string{report.CodeDPIPVSSetMissing}, true},
		{"local, masquerade set", "etp-local", "KUBE-NODE-PORT-TCP", "", []string{report.CodeDPMasqExternal, report.CodeDPIPVSSetMissing}, false},
		{"local, local set", "etp-local", "KUBE-NODE-PORT-LOCAL-TCP", report.CodeDPIPVSSetMissing, []string{report.CodeDPMasqExternal}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, obs := ipvsRecorded(t, tt.service)
			removed := false
			for i, m := range obs.Sections.IPVS.Data.IPSets {
				if m.Set == tt.set && m.Kind == "nodePort" {
					obs.Sections.IPVS.Data.IPSets[i].Found, removed = false, true
				}
			}
			if !removed {
				t.Fatalf("no %s entry in the recording of %s", tt.set, tt.service)
			}
			tr := judgeViews(t, in, plan.NodeView{Node: obs.NodeName, Observation: obs})
			got := nodeCodes(tr, report.LayerDatapath, obs.NodeName)
			if tt.want != "" {
				requireNodeCheck(t, tr, report.LayerDatapath, tt.want, obs.NodeName)
				if c := got[tt.want]; !strings.Contains(c.Message, tt.set) {
					t.Errorf("%s does not name %s: %q", c.Code, tt.set, c.Message)
				}
			}
			for _, c := range tt.bad {
				if chk, ok := got[c]; ok {
					t.Errorf("unexpected %s: %s", c, chk.Message)
				}
			}
			if failed := tr.Layer(report.LayerDatapath).Status == report.StatusFail; failed != tt.fail {
				t.Errorf("datapath %s, want fail=%v", tr.Layer(report.LayerDatapath).Status, tt.fail)
			}
		})
	}
}
