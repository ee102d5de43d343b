package trace

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	utilptr "k8s.io/utils/ptr"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
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

// watchSlices watches the Service's EndpointSlices from the version Fetch
// listed them at (from now if the list gave none) until stop is called, and
// stop returns the slices that changed meanwhile. The nodes are read
// seconds after the API: during a rollout kube-proxy may apply a change made
// in between, and rules that then disagree with Slices are newer than them,
// not wrong. A watch carries no payload unless a slice changes. stop returns
// nil when there is nothing to compare with (no Service, an ExternalName,
// the list failed) or the watch was refused.
func watchSlices(ctx context.Context, client kubernetes.Interface, in *Input) (stop func() []SliceChange) {
	none := func() []SliceChange { return nil }
	if in.Service == nil || in.Service.Spec.Type == corev1.ServiceTypeExternalName || in.hasGap(report.LayerEndpoints, resEndpointSlices) {
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
			c := SliceChange{Slice: s.Name, Type: ev.Type, Family: sliceFamily(s.AddressType), Addresses: changedAddresses(read[s.Name], now)}
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

func sliceFamily(t discoveryv1.AddressType) corev1.IPFamily {
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

// readChange is what changed in the Service's EndpointSlices while the
// nodes were read, for one IP family on one datapath.
type readChange struct {
	addresses map[string]bool
	why       string
}

// readChanges is the change of family's slices during the read that can
// explain mode's datapath disagreeing with the API read; the zero value
// when there was none or mode's programmer is unknown.
func (nj *nodeJudge) readChanges(mode collectorapi.DatapathMode, family corev1.IPFamily) readChange {
	var rc readChange
	if !programmed.SlicesDriven(mode) {
		return rc
	}
	var names []string
	for _, c := range nj.in.SlicesChangedDuringRead {
		if c.Family != "" && family != "" && c.Family != family {
			continue
		}
		names = append(names, fmt.Sprintf("%s %s", c.Slice, strings.ToLower(string(c.Type))))
		for _, a := range c.Addresses {
			if rc.addresses == nil {
				rc.addresses = map[string]bool{}
			}
			rc.addresses[a] = true
		}
	}
	if len(rc.addresses) > 0 {
		rc.why = fmt.Sprintf("EndpointSlice %s while the nodes were read, so the datapath may already hold a newer state for these endpoints than the API read", listNames(names))
	}
	return rc
}

// split divides the endpoints ("ip:port") that disagree with the API read
// into the ones explained without a fault, with why, and the rest: every
// one while kube-proxy may not have applied the Service's latest change
// (pending, from syncPending), otherwise those whose address changed
// during the read.
func (rc readChange) split(endpoints []string, pending string) (excused, faulty []string, why string) {
	if pending != "" {
		excused, why = endpoints, pending
		if rc.why != "" {
			for _, ep := range endpoints {
				if rc.addresses[endpointHost(ep)] {
					why += "; " + rc.why
					break
				}
			}
		}
		return excused, nil, why
	}
	for _, ep := range endpoints {
		if rc.addresses[endpointHost(ep)] {
			excused = append(excused, ep)
		} else {
			faulty = append(faulty, ep)
		}
	}
	if len(excused) > 0 {
		why = rc.why
	}
	return excused, faulty, why
}

// endpointHost is the address of an "ip:port" endpoint, unmapped.
func endpointHost(ep string) string {
	h, _, _ := net.SplitHostPort(probeKey(ep))
	return h
}
