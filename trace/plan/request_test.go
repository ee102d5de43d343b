package plan

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/trace/input"
)

// TestNodePortAddressesInTheServiceFamilies: on dual-stack nodes a NodePort
// is probed at the node addresses of the Service's own families only; the
// proxier of the other family does not serve it.
func TestNodePortAddressesInTheServiceFamilies(t *testing.T) {
	node := func(name string, ips ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		return n
	}
	nodes := map[string]*corev1.Node{
		"n1": node("n1", "10.0.0.11", "fd00:10::11"),
		"n2": node("n2", "10.0.0.12", "fd00:10::12"),
	}
	for _, tc := range []struct {
		name       string
		clusterIPs []string
		want       []string
	}{
		{"IPv4 only", []string{"10.96.0.20"}, []string{"10.0.0.11", "10.0.0.12"}},
		{"IPv6 only", []string{"fd00:10:96::20"}, []string{"fd00:10::11", "fd00:10::12"}},
		{"dual-stack", []string{"fd00:10:96::20", "10.96.0.20"}, []string{"10.0.0.11", "fd00:10::11", "10.0.0.12", "fd00:10::12"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
				Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, ClusterIP: tc.clusterIPs[0], ClusterIPs: tc.clusterIPs,
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080, Protocol: corev1.ProtocolTCP}}}}
			in := &input.Input{Namespace: "default", Name: "web", Service: svc, Nodes: nodes}
			var got []string
			for _, a := range CollectRequest(in, "n1", "").NodeAddresses {
				got = append(got, a.IP)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("node addresses %v, want %v", got, tc.want)
			}
		})
	}
}
