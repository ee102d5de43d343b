package plan

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/input"
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
		in := fleetInput(n)
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

// fleetInput is a NodePort Service (externalTrafficPolicy Local, a named
// target port) with n ready endpoints spread over 50 ready nodes, 100 per
// EndpointSlice, and their Pods.
func fleetInput(n int) *input.Input {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: "10.96.0.20", ClusterIPs: []string{"10.96.0.20"},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}, Selector: map[string]string{"app": "web"},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyLocal,
			Ports:                 []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromString("http")}}}}
	in := &input.Input{Namespace: "default", Name: "web", Service: svc, Nodes: map[string]*corev1.Node{}, NodesListed: true}
	for i := 0; i < 50; i++ {
		name := fmt.Sprintf("node-%02d", i)
		in.Nodes[name] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	}
	var sl *discoveryv1.EndpointSlice
	for i := 0; i < n; i++ {
		if i%100 == 0 {
			if sl != nil {
				in.Slices = append(in.Slices, *sl)
			}
			sl = &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("web-%04d", i/100), Namespace: "default",
				Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
				AddressType: discoveryv1.AddressTypeIPv4,
				Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}}}
		}
		ip := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256)
		podName, nodeName := fmt.Sprintf("web-%05d", i), fmt.Sprintf("node-%02d", i%50)
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, NodeName: ptr.To(nodeName),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}})
		in.Pods = append(in.Pods, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: "default", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "app",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}})
	}
	in.Slices = append(in.Slices, *sl)
	return in
}
