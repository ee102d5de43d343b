package framework

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/svctrace/kubectl-svctrace/collectors/proxy"
)

// WaitKubeProxySynced waits until the node's kube-proxy has completed a
// sync after since and holds no change it has not applied: its metrics
// (127.0.0.1:10249 in the node's namespace) show no pending endpoint or
// Service change, no sync queued after the last completed one, and a last
// completed sync later than since (EndpointsChangedAt). A scenario then
// traces rules that include its endpoints. The testbed's nodes share the
// host's clock. A node whose kube-proxy does not answer is not
// waited for (a datapath without kube-proxy, or one a test stopped).
func (tb *Testbed) WaitKubeProxySynced(t testing.TB, node string, since time.Time) {
	t.Helper()
	client := HTTPClientInNode(node)
	var last error
	err := Eventually(Context(t, time.Minute), 45*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		last = kubeProxySynced(ctx, client, since)
		if errors.Is(last, errUnreachableMetrics) {
			return nil
		}
		return last
	})
	if err != nil {
		t.Fatalf("kube-proxy on %s has not synced since %s: %v", node, since.Format(time.RFC3339Nano), last)
	}
}

func kubeProxySynced(ctx context.Context, client *http.Client, since time.Time) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://127.0.0.1:10249/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnreachableMetrics, err)
	}
	defer resp.Body.Close()
	samples, err := proxy.ParseMetrics(resp.Body, func(name string) bool {
		switch name {
		case "kubeproxy_sync_proxy_rules_last_timestamp_seconds", "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
			"kubeproxy_sync_proxy_rules_endpoint_changes_pending", "kubeproxy_sync_proxy_rules_service_changes_pending":
			return true
		}
		return false
	})
	if err != nil {
		return err
	}
	var lastSync, queued, pending float64
	for _, s := range samples {
		switch s.Name {
		case "kubeproxy_sync_proxy_rules_last_timestamp_seconds":
			lastSync = max(lastSync, s.Value)
		case "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds":
			queued = max(queued, s.Value)
		default:
			pending += s.Value
		}
	}
	sinceSec := float64(since.UnixNano()) / 1e9
	switch {
	case pending > 0:
		return fmt.Errorf("%v change(s) pending", pending)
	case queued > lastSync:
		return fmt.Errorf("a sync queued at %.3f, last completed at %.3f", queued, lastSync)
	case lastSync < sinceSec:
		return fmt.Errorf("last sync completed at %.3f, before %.3f", lastSync, sinceSec)
	}
	return nil
}

var errUnreachableMetrics = errors.New("kube-proxy metrics unreachable")

// EndpointsChangedAt is when the Service's EndpointSlices last changed: the
// newest of the EndpointSlice controller's last-change-trigger-time
// annotations (the Pod change it acted on) and the slices' creation times.
func (tb *Testbed) EndpointsChangedAt(t testing.TB, ns, service string) time.Time {
	t.Helper()
	l, err := tb.Client.DiscoveryV1().EndpointSlices(ns).List(Context(t, 30*time.Second), metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		t.Fatalf("list EndpointSlices of %s/%s: %v", ns, service, err)
	}
	var newest time.Time
	for _, s := range l.Items {
		if c := s.CreationTimestamp.Time; c.After(newest) {
			newest = c
		}
		if v := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; v != "" {
			if at, err := time.Parse(time.RFC3339Nano, v); err == nil && at.After(newest) {
				newest = at
			}
		}
	}
	return newest
}
