package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// helperAPIEnv makes the test binary serve a minimal Kubernetes API (one
// Node, one Service, one EndpointSlice; list and watch, incl. watch-list
// streaming) so that a real kube-proxy programs its rules in a test
// namespace without a cluster. Value: "listen-addr,node-name,node-ip,cluster-ip,pod-ip".
const helperAPIEnv = "SVCTRACE_TEST_FAKE_APISERVER"

func serveFakeAPI(spec string) {
	f := strings.Split(spec, ",")
	addr, nodeName, nodeIP, clusterIP, podIP := f[0], f[1], f[2], f[3], f[4]
	node := corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, ResourceVersion: "1", UID: "node-uid"},
		Spec:       corev1.NodeSpec{PodCIDR: "10.244.0.0/24", PodCIDRs: []string{"10.244.0.0/24"}},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	svc := corev1.Service{TypeMeta: metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", ResourceVersion: "1", UID: "svc-uid"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: clusterIP, ClusterIPs: []string{clusterIP},
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	ready := true
	port, proto, portName := int32(8080), corev1.ProtocolTCP, "http"
	slice := discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{Kind: "EndpointSlice", APIVersion: "discovery.k8s.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-abcde", ResourceVersion: "1", UID: "slice-uid",
			Labels: map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{podIP}, NodeName: &nodeName,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &ready}}},
		Ports: []discoveryv1.EndpointPort{{Name: &portName, Port: &port, Protocol: &proto}}}

	lists := map[string]struct {
		kind, apiVersion string
		items            []any
	}{
		"/api/v1/nodes":    {"NodeList", "v1", []any{node}},
		"/api/v1/services": {"ServiceList", "v1", []any{svc}},
		"/apis/discovery.k8s.io/v1/endpointslices": {"EndpointSliceList", "discovery.k8s.io/v1", []any{slice}},
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodGet {
			// Events and the like: accept and forget.
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{}`))
			return
		}
		l, ok := lists[r.URL.Path]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`))
			return
		}
		q := r.URL.Query()
		if q.Get("watch") != "true" && q.Get("watch") != "1" {
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": l.kind, "apiVersion": l.apiVersion,
				"metadata": map[string]any{"resourceVersion": "1"}, "items": l.items})
			return
		}
		enc := json.NewEncoder(w)
		if q.Get("sendInitialEvents") == "true" {
			for _, it := range l.items {
				_ = enc.Encode(map[string]any{"type": "ADDED", "object": it})
			}
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{
				"kind": strings.TrimSuffix(l.kind, "List"), "apiVersion": l.apiVersion,
				"metadata": map[string]any{"resourceVersion": "1", "annotations": map[string]string{"k8s.io/initial-events-end": "true"}}}})
		}
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		<-r.Context().Done()
	})
	fmt.Fprintln(os.Stderr, "fake apiserver:", http.ListenAndServe(addr, nil))
	os.Exit(1)
}
