package trace_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/svctrace/kubectl-svctrace/bundle"
	"github.com/svctrace/kubectl-svctrace/cmd/cli"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// savedWeb writes, into a temporary directory, the bundle --save would
// write for default/web: one Pod, ready or not, traced with --no-node or,
// with nodes given, judged with that node report as the node side would
// have returned it. It goes through the same calls as the command
// (Collect, Assemble, bundle.New, Write), on a fake API server.
func savedWeb(t *testing.T, ready bool, nodes ...plan.NodeView) (string, *report.ServiceTrace) {
	t.Helper()
	cond := corev1.ConditionFalse
	if ready {
		cond = corev1.ConditionTrue
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.1.5", PodIPs: []corev1.PodIP{{IP: "10.244.1.5"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: cond}}}}
	http, port, tcp := "http", int32(8080), corev1.ProtocolTCP
	node := "node-a"
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default",
		Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &http, Port: &port, Protocol: &tcp}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.244.1.5"}, NodeName: &node,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web-1"}}}}
	client := fake.NewClientset(svc, pod, slice,
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	opts := trace.Options{Now: func() time.Time { return at }, Version: "v-test", ClusterDomain: "cluster.local", NoNode: len(nodes) == 0}
	in, nr, err := trace.Collect(context.Background(), client, "default", "web", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) > 0 {
		nr = &plan.NodeReport{Nodes: nodes}
	}
	live := trace.Assemble(in, nr, opts)
	b, err := bundle.New(in, nr, opts, live)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "web")
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir, live
}

// TestScenarioSummaryFollowsTheJudge: the summary of a saved trace states
// the verdict and exit code the command gave when it was taken, and one
// line for every check of the live result.
func TestScenarioSummaryFollowsTheJudge(t *testing.T) {
	for _, tt := range []struct {
		name     string
		ready    bool
		wantExit int
	}{
		{name: "healthy", ready: true, wantExit: cli.ExitOK},
		{name: "no ready endpoint", ready: false, wantExit: cli.ExitLayerFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir, live := savedWeb(t, tt.ready)
			got, err := judgeScenario(dir)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"service default/web (recorded by svctrace v-test, judged then: " + strings.TrimSpace(string(live.Verdict.Status)+" "+live.Verdict.Code) + ")\n",
				"\nverdict " + string(live.Verdict.Status) + " code=" + orDash(live.Verdict.Code) + " ",
				fmt.Sprintf("\nexit %d\n", tt.wantExit),
			}
			for _, l := range live.Layers {
				want = append(want, "\nlayer "+string(l.Name)+" "+string(l.Status)+"\n")
				for _, c := range l.Checks {
					want = append(want, "\n"+string(l.Name)+" "+orDash(c.Node)+" "+string(c.Status)+" "+string(c.Severity)+" "+c.Code)
				}
			}
			for _, w := range want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
			if tt.ready == (live.Verdict.Status == report.StatusFail) {
				t.Errorf("the fixture's live verdict is %s: it does not show the case %q", live.Verdict.Status, tt.name)
			}
		})
	}
}

// TestScenarioRunnerCatchesARenamedField: a bundle whose input.json holds a
// field under a name this build does not read fails the lossless check,
// naming the field; a zero value under an unknown name does not.
func TestScenarioRunnerCatchesARenamedField(t *testing.T) {
	dir, _ := savedWeb(t, true)
	path := filepath.Join(dir, bundle.InputFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"endpointSlices":`) {
		t.Fatalf("input.json has no endpointSlices: the test proves nothing\n%s", data)
	}
	renamed := strings.Replace(string(data), `"endpointSlices":`, `"slices":`, 1)
	renamed = strings.Replace(renamed, `"namespace": "default",`, `"namespace": "default", "zeroUnderANewName": "",`, 1)
	if err := os.WriteFile(path, []byte(renamed), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = judgeScenario(dir)
	if err == nil {
		t.Fatal("a renamed field passed the lossless check")
	}
	if !strings.Contains(err.Error(), "input.json: $.slices: recorded") {
		t.Errorf("the error does not name the field:\n%v", err)
	}
	if strings.Contains(err.Error(), "zeroUnderANewName") {
		t.Errorf("a zero value reported as lost:\n%v", err)
	}
}

// TestScenarioRunnerReadsRecordedObservationsWhole: the lossless check
// passes on the collector's recorded observations of the real kube-proxy
// (every section it writes, as nodes.json holds them), so that a
// complaint about a real bundle means a field was really lost.
func TestScenarioRunnerReadsRecordedObservationsWhole(t *testing.T) {
	var views []plan.NodeView
	for _, mode := range []string{"iptables", "nftables"} {
		data, err := os.ReadFile("../collectors/testdata/observations/real-kube-proxy-" + mode + "-netns.json")
		if err != nil {
			t.Fatal(err)
		}
		var obs collectorapi.Observation
		if err := json.Unmarshal(data, &obs); err != nil {
			t.Fatal(err)
		}
		obs.NodeName += "-" + mode
		views = append(views, plan.NodeView{Node: obs.NodeName, Roles: []string{plan.RoleSelected}, Observation: &obs})
	}
	dir, live := savedWeb(t, true, views...)
	nodes, err := os.ReadFile(filepath.Join(dir, bundle.NodesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, section := range []string{`"proxy"`, `"iptables"`, `"nftables"`, `"conntrack"`, `"route"`, `"probe"`} {
		if !strings.Contains(string(nodes), section) {
			t.Errorf("nodes.json lacks the %s section: the test covers less than it says", section)
		}
	}
	got, err := judgeScenario(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range views {
		if !strings.Contains(got, "\ndatapath "+v.Node+" ") {
			t.Errorf("no datapath finding for %s in the summary:\n%s", v.Node, got)
		}
	}
	if live.Layer(report.LayerDatapath).Status == report.StatusSkipped {
		t.Error("the datapath was not judged: the observations were not used")
	}
}

// TestFrozenScenarioMustStayAsRecorded: a frozen scenario's files are
// checked against the digests in its scenario.yaml.
func TestFrozenScenarioMustStayAsRecorded(t *testing.T) {
	dir, _ := savedWeb(t, true)
	data, err := os.ReadFile(filepath.Join(dir, bundle.InputFile))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	write := func(digest string) {
		t.Helper()
		yaml := "recorded: by the test\nproves: nothing\nfrozen: true\nsha256:\n  input.json: " + digest + "\n"
		if err := os.WriteFile(filepath.Join(dir, scenarioFile), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(hex.EncodeToString(sum[:]))
	if _, err := readScenario(dir); err != nil {
		t.Fatalf("the files as recorded: %v", err)
	}
	write(strings.Repeat("0", 64))
	if _, err := readScenario(dir); err == nil || !strings.Contains(err.Error(), "must stay as recorded") {
		t.Errorf("a changed file passed: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, scenarioFile), []byte("recorded: here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readScenario(dir); err == nil {
		t.Error("a scenario.yaml without proves passed")
	}
}

func TestLineDiff(t *testing.T) {
	for _, tt := range []struct {
		name, want, got, diff string
	}{
		{name: "equal", want: "a\nb\n", got: "a\nb\n", diff: ""},
		{name: "changed line", want: "a\nb\nc\n", got: "a\nB\nc\n", diff: "  a\n- b\n+ B\n  c\n"},
		{name: "added at end", want: "a\n", got: "a\nb\n", diff: "  a\n+ b\n"},
		{name: "no final newline", want: "a\nb\n", got: "a\nb", diff: "  a\n- b\n+ b (no newline at the end)\n"},
		{name: "far apart", want: "1\n2\n3\n4\n5\n6\n7\n8\n", got: "x\n2\n3\n4\n5\n6\n7\ny\n",
			diff: "- 1\n+ x\n  2\n  3\n  ...\n  6\n  7\n- 8\n+ y\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d := lineDiff(tt.want, tt.got); d != tt.diff {
				t.Errorf("lineDiff =\n%s\nwant\n%s", d, tt.diff)
			}
		})
	}
}
