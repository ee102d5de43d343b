package trace

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// decodeRequest reads an encoded request as the collector does.
func decodeRequest(t *testing.T, b []byte) *collectorapi.Request {
	t.Helper()
	if collectorapi.IsGzip(b) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	var req collectorapi.Request
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		t.Fatalf("%v in %.300s", err, b)
	}
	return &req
}

// TestEncodedRequestIsTheNodesRequest: the request encoded from shared
// parts is, for every node, exactly the request built for it (its Pod
// UIDs, node addresses and client included), gzipped when large and plain
// JSON when small.
func TestEncodedRequestIsTheNodesRequest(t *testing.T) {
	for _, n := range []int{5000, 3} {
		in := bigInput(n)
		in.Service.Spec.Ports[0].NodePort = 30080
		for i := range in.Pods {
			in.Pods[i].UID = types.UID(fmt.Sprintf("uid-%d", i))
		}
		// targetRefs name the Pods, so each node's endpoints get UIDs.
		for s := range in.Slices {
			for e := range in.Slices[s].Endpoints {
				ep := &in.Slices[s].Endpoints[e]
				ep.TargetRef = &corev1.ObjectReference{Kind: "Pod", Name: in.Pods[s*100+e].Name}
			}
		}
		client := &testClientPod
		plan := PlanNodes(in, NodeSelection{AllNodes: true}, nil, "")
		if len(plan.Nodes) != 50 {
			t.Fatalf("%d planned nodes", len(plan.Nodes))
		}
		for i, pn := range plan.Nodes {
			if i == 7 {
				pn.Client = client
			}
			b, err := pn.EncodedRequest()
			if err != nil {
				t.Fatal(err)
			}
			if gz := collectorapi.IsGzip(b); gz != (n > 100) {
				t.Fatalf("%d endpoints: gzipped %t", n, gz)
			}
			got, want := decodeRequest(t, b), pn.CollectRequest()
			if !reflect.DeepEqual(got, want) {
				gj, _ := json.Marshal(got)
				wj, _ := json.Marshal(want)
				t.Fatalf("%d endpoints, node %s: encoded request differs\n got %.400s\nwant %.400s", n, pn.Name, gj, wj)
			}
			uids := 0
			for _, ep := range got.Endpoints {
				if ep.PodUID != "" {
					uids++
					if ep.NodeName != pn.Name {
						t.Fatalf("node %s carries the Pod UID of %s's endpoint %s", pn.Name, ep.NodeName, ep.IP)
					}
				}
			}
			if n == 5000 && uids != 100 {
				t.Fatalf("node %s: %d Pod UIDs, want its 100 endpoints'", pn.Name, uids)
			}
		}
	}
}

var testClientPod = collectorapi.ClientPod{Namespace: "default", Name: "client", UID: "c", IPs: []string{"10.9.9.9"}, Hairpin: true}
