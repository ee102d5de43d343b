package trace

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
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
			c := SliceChange{Slice: s.Name, Type: ev.Type, Family: sliceFamily(s.AddressType)}
			if i, ok := seen[s.Name]; ok {
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

// changedDuringRead says why family's rules on a kube-proxy datapath may
// disagree with the API only because the Service's EndpointSlices changed
// while the nodes were read, "" when none of family's did.
func changedDuringRead(changes []SliceChange, mode collectorapi.DatapathMode, family corev1.IPFamily) string {
	if !kubeProxyMode(mode) {
		return ""
	}
	var names []string
	for _, c := range changes {
		if c.Family == "" || family == "" || c.Family == family {
			names = append(names, fmt.Sprintf("%s %s", c.Slice, strings.ToLower(string(c.Type))))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("the Service's EndpointSlices changed while the nodes were read (%s), so the rules may already hold a newer state than the one the API gave", listNames(names))
}
