package input

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestChangedAddresses: which addresses a slice change touches.
func TestChangedAddresses(t *testing.T) {
	all := map[string]bool{"10.0.0.1": true, "10.0.0.2": true, "10.0.0.3": true, "10.0.0.4": true}
	was := testSlice(8080, all, "10.0.0.1", "10.0.0.2", "10.0.0.3")
	now := testSlice(8080, map[string]bool{"10.0.0.1": true, "10.0.0.4": true}, "10.0.0.1", "10.0.0.2", "10.0.0.4")
	other := testSlice(9090, all, "10.0.0.1")
	for _, tc := range []struct {
		name     string
		was, now *discoveryv1.EndpointSlice
		want     []string
	}{
		{"modified", was, now, []string{"10.0.0.2", "10.0.0.3", "10.0.0.4"}},
		{"added", nil, now, []string{"10.0.0.1", "10.0.0.2", "10.0.0.4"}},
		{"deleted", was, nil, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
		{"ports changed", was, other, []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}},
		{"unchanged", was, was, nil},
	} {
		if got := changedAddresses(tc.was, tc.now); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// testSlice is an IPv4 EndpointSlice with one TCP port and an endpoint per
// address; ready maps an address to its Ready condition.
func testSlice(port int32, ready map[string]bool, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "default"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(port), Protocol: ptr.To(corev1.ProtocolTCP)}}}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{a},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready[a]), Serving: ptr.To(ready[a]), Terminating: ptr.To(false)}})
	}
	return s
}
