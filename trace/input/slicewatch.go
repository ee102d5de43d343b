package input

import (
	"context"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	utilptr "k8s.io/utils/ptr"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// SliceChange is one EndpointSlice of the Service that changed while the
// nodes were read.
type SliceChange struct {
	Slice string `json:"slice"`
	// Type is the last watch event seen for it: ADDED, MODIFIED or DELETED.
	Type watch.EventType `json:"type"`
	// Family is the slice's address family ("" for an FQDN slice).
	Family corev1.IPFamily `json:"family,omitempty"`
	// Addresses are the endpoint addresses the change added, removed or
	// changed the node name or conditions of, against the slice as read
	// (every address when the ports changed), sorted.
	Addresses []string `json:"addresses,omitempty"`
}

// WatchSlices watches the Service's EndpointSlices from the version Fetch
// listed them at (from now if the list gave none) until stop is called, and
// stop returns the slices that changed meanwhile. The nodes are read
// seconds after the API: during a rollout kube-proxy may apply a change made
// in between, and rules that then disagree with Slices are newer than them,
// not wrong. A watch carries no payload unless a slice changes. stop returns
// nil when there is nothing to compare with (no Service, an ExternalName,
// the list failed) or the watch was refused.
func WatchSlices(ctx context.Context, client kubernetes.Interface, in *Input) (stop func() []SliceChange) {
	none := func() []SliceChange { return nil }
	if in.Service == nil || in.Service.Spec.Type == corev1.ServiceTypeExternalName || in.HasGap(report.LayerEndpoints, ResourceEndpointSlices) {
		return none
	}
	w, err := client.DiscoveryV1().EndpointSlices(in.Namespace).Watch(ctx, metav1.ListOptions{
		LabelSelector:   discoveryv1.LabelServiceName + "=" + in.Name,
		ResourceVersion: in.slicesVersion,
	})
	if err != nil {
		return none
	}
	read := make(map[string]*discoveryv1.EndpointSlice, len(in.Slices))
	for i := range in.Slices {
		read[in.Slices[i].Name] = &in.Slices[i]
	}
	var changes []SliceChange
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]int{}
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				// An error event (the listed version already compacted
				// away, say): what changed is not known, nothing is claimed.
				continue
			}
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
			default:
				continue
			}
			now := s
			if ev.Type == watch.Deleted {
				now = nil
			}
			c := SliceChange{Slice: s.Name, Type: ev.Type, Family: SliceFamily(s.AddressType), Addresses: changedAddresses(read[s.Name], now)}
			if i, ok := seen[s.Name]; ok {
				// Against the slice as read, so the union keeps every
				// address any of its versions changed.
				c.Addresses = mergeSorted(changes[i].Addresses, c.Addresses)
				changes[i] = c
				continue
			}
			seen[s.Name] = len(changes)
			changes = append(changes, c)
		}
	}()
	return func() []SliceChange {
		w.Stop()
		<-done
		return changes
	}
}

// SliceFamily is the IP family of an EndpointSlice's address type, "" for
// FQDN.
func SliceFamily(t discoveryv1.AddressType) corev1.IPFamily {
	switch t {
	case discoveryv1.AddressTypeIPv4:
		return corev1.IPv4Protocol
	case discoveryv1.AddressTypeIPv6:
		return corev1.IPv6Protocol
	}
	return ""
}

// changedAddresses lists the endpoint addresses that differ between a
// slice as read and a later version (nil: the slice does not exist then):
// listed in one only, or listed in both with another node or other
// conditions. A change of the slice's ports changes every address.
func changedAddresses(was, now *discoveryv1.EndpointSlice) []string {
	type state struct {
		node                        string
		ready, serving, terminating bool
	}
	index := func(s *discoveryv1.EndpointSlice) map[string]state {
		m := map[string]state{}
		if s == nil {
			return m
		}
		for _, e := range s.Endpoints {
			c := e.Conditions
			st := state{node: utilptr.Deref(e.NodeName, ""), ready: utilptr.Deref(c.Ready, true), serving: utilptr.Deref(c.Serving, utilptr.Deref(c.Ready, true)), terminating: utilptr.Deref(c.Terminating, false)}
			for _, a := range e.Addresses {
				m[a] = st
			}
		}
		return m
	}
	before, after := index(was), index(now)
	portsChanged := was != nil && now != nil && !equality.Semantic.DeepEqual(was.Ports, now.Ports)
	var out []string
	for a, st := range before {
		if st2, ok := after[a]; !ok || st2 != st || portsChanged {
			out = append(out, a)
		}
	}
	for a := range after {
		if _, ok := before[a]; !ok {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// mergeSorted is the sorted union of two sorted lists.
func mergeSorted(a, b []string) []string {
	out := append(slices.Clone(a), b...)
	sort.Strings(out)
	return slices.Compact(out)
}
