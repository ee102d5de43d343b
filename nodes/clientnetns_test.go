package nodes

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
)

func TestProfileNetnsCapabilities(t *testing.T) {
	got := ProfileNetns.Capabilities()
	want := []string{"NET_ADMIN", "NET_RAW", "SYS_ADMIN", "SYS_PTRACE"}
	if len(got) != len(want) {
		t.Fatalf("capabilities %v, want %v", got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Fatalf("capabilities %v, want %v", got, want)
		}
	}
	pod, err := NewPod("n1", []byte(`{}`), PodSpecOptions{Image: "img", Profile: ProfileNetns})
	if err != nil {
		t.Fatal(err)
	}
	sc := pod.Spec.Containers[0].SecurityContext
	if sc.Privileged != nil && *sc.Privileged || !slices.Contains(sc.Capabilities.Drop, "ALL") || len(sc.Capabilities.Add) != 4 {
		t.Fatalf("security context %+v", sc)
	}
}

// Only the client's node's collector gets the netns profile, and only with
// --client-netns; the request tells that collector it may enter the Pod.
func TestClientNetnsProfileOnlyOnTheClientsNode(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		var mu sync.Mutex
		profiles := map[string]Profile{}
		enter := map[string]bool{}
		flags := *NewFlags("img")
		flags.ClientNetns = enabled
		in := &Inspector{Client: fake.NewClientset(privilegedNS()), Flags: flags,
			runner: func(r *Runner, _ context.Context, node string, req []byte) (*Output, error) {
				mu.Lock()
				defer mu.Unlock()
				profiles[node] = r.Options.Profile
				enter[node] = strings.Contains(string(req), `"enterNetns":true`)
				return nil, &Failure{Message: "test"}
			}}
		np := plan.NodePlan{Service: "default/web", Nodes: []plan.PlannedNode{
			{Name: "n1", Roles: []string{plan.RoleClient}, Request: &collectorapi.Request{Client: &collectorapi.ClientPod{Namespace: "default", Name: "frontend", UID: "u1"}}},
			{Name: "n2", Roles: []string{plan.RoleEndpoints}, Request: &collectorapi.Request{}},
		}}
		nr, err := in.Inspect(context.Background(), np)
		if err != nil {
			t.Fatal(err)
		}
		wantN1 := ProfileNetAdmin
		if enabled {
			wantN1 = ProfileNetns
		}
		if profiles["n1"] != wantN1 || profiles["n2"] != ProfileNetAdmin || enter["n1"] != enabled || enter["n2"] {
			t.Errorf("--client-netns=%v: profiles %v, enterNetns %v", enabled, profiles, enter)
		}
		var n1 string
		for _, n := range nr.Collector.Nodes {
			if n.Node == "n1" {
				n1 = n.Profile
			}
		}
		if enabled && n1 != string(ProfileNetns) {
			t.Errorf("the report does not name n1's profile: %+v", nr.Collector.Nodes)
		}
	}
}

func TestClientNetnsNeedsAPodClient(t *testing.T) {
	f := NewFlags("img")
	f.ClientNetns = true
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), "--from pod/NAME") {
		t.Fatalf("Validate = %v", err)
	}
	f.From = "node/n1"
	if err := f.Validate(); err == nil {
		t.Fatal("a node client has no Pod namespace to enter")
	}
	f.From = "pod/frontend"
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
}
