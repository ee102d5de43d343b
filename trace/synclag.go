package trace

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/programmed"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// syncLagLimit bounds how long after the Service's last change rules that
// disagree with the API are put down to kube-proxy not having synced yet.
// kube-proxy applies a change within its minSyncPeriod (1 s by default) plus
// one sync; a change older than this that is still not programmed is a
// fault (and DP005 says so when changes stay queued).
const syncLagLimit = 60 * time.Second

// syncSlack is the least time between the Service's change and a completed
// sync after which the sync is taken to include the change.
const syncSlack = 2 * time.Second

// proxySync is kube-proxy's own account of its rule syncs for one IP
// family, from its metrics (k8s.io/kubernetes/pkg/proxy/metrics): when it
// last completed a sync and when it last queued one (both per family, Unix
// seconds, 0 when not reported), and the changes its trackers hold that no
// sync has taken yet (those two gauges are not per family).
type proxySync struct {
	last, queued                    float64
	endpointChanges, serviceChanges float64
	// syncs and syncSeconds are the count and sum of its sync duration
	// histogram.
	syncs, syncSeconds float64
}

// proxySyncOf picks family's samples from kube-proxy's metrics; a sample
// without an ip_family label (kube-proxy before 1.28) counts for every
// family. ok is false when kube-proxy's metrics were not read.
func proxySyncOf(obs *collectorapi.Observation, family corev1.IPFamily) (ps proxySync, ok bool) {
	s := obs.Sections.Proxy
	if s == nil || s.Data == nil || s.Data.Metrics == nil || len(s.Data.Metrics.Samples) == 0 {
		return ps, false
	}
	for _, smp := range s.Data.Metrics.Samples {
		if f, labelled := smp.Labels["ip_family"]; labelled && family != "" && f != string(family) {
			continue
		}
		switch smp.Name {
		case "kubeproxy_sync_proxy_rules_last_timestamp_seconds":
			ps.last = max(ps.last, smp.Value)
		case "kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds":
			ps.queued = max(ps.queued, smp.Value)
		case "kubeproxy_sync_proxy_rules_endpoint_changes_pending":
			ps.endpointChanges = smp.Value
		case "kubeproxy_sync_proxy_rules_service_changes_pending":
			ps.serviceChanges = smp.Value
		case "kubeproxy_sync_proxy_rules_duration_seconds_count":
			ps.syncs += smp.Value
		case "kubeproxy_sync_proxy_rules_duration_seconds_sum":
			ps.syncSeconds += smp.Value
		}
	}
	return ps, true
}

// metricsTimedOut is the error of kube-proxy's /metrics when every try
// timed out while kube-proxy answered /proxyMode or /healthz in the same
// read, "" otherwise.
func metricsTimedOut(obs *collectorapi.Observation) string {
	s := obs.Sections.Proxy
	if s == nil || s.Data == nil || s.Data.Metrics == nil {
		return ""
	}
	f := s.Data.Metrics.Fetch
	if f.ErrorClass != collectorapi.ErrClassTimeout {
		return ""
	}
	// Busy, not stopped: kube-proxy answered something else during the
	// same read. A stopped (or frozen) kube-proxy's sockets still accept
	// and never answer, so timeouts alone cannot tell it from a busy one,
	// and a stopped kube-proxy is the fault, not an excuse.
	pm := s.Data.ProxyMode
	hz := s.Data.Healthz
	if pm.Error != "" || pm.StatusCode == 0 {
		if hz == nil || hz.Fetch.Error != "" || hz.Fetch.StatusCode == 0 {
			return ""
		}
	}
	if f.Attempts > 1 {
		return fmt.Sprintf("%d tries, the last after %.1f s", f.Attempts, f.LatencyMillis/1000)
	}
	return fmt.Sprintf("after %.1f s", f.LatencyMillis/1000)
}

// serviceChangedAt is when the Service or one of its EndpointSlices last
// changed, as far as the API tells: the EndpointSlice controller's
// last-change-trigger-time annotation (the Pod or Service change it acted
// on), and the objects' creation and managed-field times. All of them are
// whole seconds, rounded down (the annotation is taken from Pod conditions
// and object timestamps, which the API serializes in seconds), so the change
// happened in the second that starts there. Zero when unknown.
func (nj *nodeJudge) serviceChangedAt() time.Time {
	if nj.changedAtDone {
		return nj.changedAt
	}
	nj.changedAtDone = true
	var newest time.Time
	seen := func(m *metav1.ObjectMeta) {
		if t := m.CreationTimestamp.Time; t.After(newest) {
			newest = t
		}
		for _, f := range m.ManagedFields {
			if f.Time != nil && f.Time.After(newest) {
				newest = f.Time.Time
			}
		}
	}
	if svc := nj.in.Service; svc != nil {
		seen(&svc.ObjectMeta)
	}
	for i := range nj.in.Slices {
		s := &nj.in.Slices[i]
		seen(&s.ObjectMeta)
		if v := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; v != "" {
			if t, err := time.Parse(time.RFC3339Nano, v); err == nil && t.After(newest) {
				newest = t
			}
		}
	}
	nj.changedAt = newest
	return newest
}

// syncPending says why rules of family that disagree with the API may only
// be behind it, "" when nothing says so. It applies to kube-proxy's own
// datapaths, when the Service changed less than syncLagLimit before the
// collector read the node and kube-proxy's metrics show that the change may
// not be applied yet: kube-proxy's last completed sync is older than the
// change, or it holds changes no sync has taken, or it queued a sync after
// its last completed one, or it completed a sync while the collector was
// reading, so the rules read may be from either side of it, or it has not
// completed a sync since it started.
//
// A sync takes every change kube-proxy has received when it starts and
// records its timestamp when it ends, so a sync that completed later than
// the change by more than a sync's duration plus the watch's delay has
// applied it; kube-proxy's gauges are not per Service (on a busy node they
// show other Services' changes), so the last three signs count only when
// the Service's own change is not that much older than the last sync.
func syncPending(obs *collectorapi.Observation, mode collectorapi.DatapathMode, family corev1.IPFamily, changedAt time.Time) string {
	if !programmed.IsKubeProxy(mode) {
		return ""
	}
	read := obs.CollectedAt
	if changedAt.IsZero() || read.IsZero() || read.Sub(changedAt) > syncLagLimit {
		return ""
	}
	ago := func(t time.Time) string { return read.Sub(t).Round(100 * time.Millisecond).String() }
	// A watch judges an older node read against a newer API read: the
	// change may come after the read.
	whenRead := func(t time.Time) string {
		if d := read.Sub(t).Round(100 * time.Millisecond); d < 0 {
			return (-d).String() + " after the read"
		}
		return ago(t) + " before the read"
	}
	ps, ok := proxySyncOf(obs, family)
	if !ok {
		if err := metricsTimedOut(obs); err != "" {
			// kube-proxy is alive but too busy to answer (a full sync on a
			// starved node): nothing tells whether its last sync took the
			// Service's recent change, so a difference is not yet evidence
			// of a fault. A kube-proxy that refuses or is gone stays
			// unexcused: it is not syncing either.
			return fmt.Sprintf("the Service's endpoints changed %s and kube-proxy's sync metrics did not answer in time (%s), so its rules may not include the change yet", whenRead(changedAt), err)
		}
		return ""
	}
	at := func(sec float64) time.Time { return time.Unix(0, int64(sec*1e9)) }
	if ps.last == 0 {
		// kube-proxy sets the last-sync gauge at the end of its first
		// successful sync: a restarted kube-proxy that queued one and has
		// not finished it still serves the rules its predecessor wrote.
		if ps.queued == 0 {
			return ""
		}
		return fmt.Sprintf("kube-proxy has not completed a sync since it started (it queued one %s before the read)", ago(at(ps.queued)))
	}
	last := at(ps.last)
	// The watch's delay and the clocks of the control plane and the node
	// differ by well under syncSlack on a healthy cluster; twice the mean
	// sync duration covers a sync that started before the change arrived.
	slack := syncSlack
	if ps.syncs > 0 {
		slack += time.Duration(2 * ps.syncSeconds / ps.syncs * float64(time.Second))
	}
	// changedBy: the change happened before it (the API's times are whole
	// seconds), so a sync completed before it may not include the change.
	changedBy := changedAt.Add(time.Second)
	if !changedBy.After(last.Add(-slack)) {
		return ""
	}
	var why []string
	switch {
	case changedAt.After(last):
		why = append(why, fmt.Sprintf("the Service's endpoints changed %s, after kube-proxy's last completed sync (%s before)", whenRead(changedAt), ago(last)))
	case changedBy.After(last):
		why = append(why, fmt.Sprintf("the Service's endpoints changed in the same second as kube-proxy's last completed sync (%s before the read; the API's times are whole seconds), possibly after it", ago(last)))
	}
	if n := ps.endpointChanges + ps.serviceChanges; n > 0 {
		why = append(why, "kube-proxy holds "+strconv.FormatFloat(n, 'f', -1, 64)+" change(s) no sync has taken yet")
	}
	if ps.queued > ps.last {
		why = append(why, fmt.Sprintf("kube-proxy queued a sync %s before the read and has not completed one since", ago(at(ps.queued))))
	}
	if !last.Before(read) {
		why = append(why, "kube-proxy completed a sync while the collector was reading its rules")
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, "; ")
}

// syncLag is why what one node programmed for one IP family may differ from
// the API read without a fault: its programmer has not applied the
// Service's latest change yet (pending, from syncPending), or an
// EndpointSlice changed while the node was read (changes). It is computed
// in one place (lagOf) and asked by every datapath finding, whatever the
// backend: missing or stale endpoints, a wrong DNAT port, a REJECT left from
// the no-endpoint state, the external path, the health check, a virtual
// server or a map slot.
type syncLag struct {
	pending    string
	changes    readChange
	programmer string
}

// lagOf is node's syncLag for family.
func (nj *nodeJudge) lagOf(node string, obs *collectorapi.Observation, family corev1.IPFamily) syncLag {
	np := nj.programmed(node, obs)
	return syncLag{pending: np.pendingFor(family), changes: nj.readChanges(np.Mode, family), programmer: programmed.ProgrammerOf(np.Mode)}
}

// whole says why a finding about the port as a whole (not about named
// endpoints) may be lag, "" when nothing says so.
func (l syncLag) whole() string {
	if l.pending != "" {
		if l.changes.why != "" {
			return l.pending + "; " + l.changes.why
		}
		return l.pending
	}
	return l.changes.why
}

// faultOrLag emits code for a finding about the port as a whole, or, when
// l explains it, DP059 saying what is behind. It reports whether it was a
// fault.
func (nj *nodeJudge) faultOrLag(node string, l syncLag, code string, args report.Args, what string, raw []string, fields ...report.Field) bool {
	if why := l.whole(); why != "" {
		a := report.Args{}
		for k, v := range args {
			a[k] = v
		}
		a["what"], a["why"], a["programmer"] = what, why, l.programmer
		nj.EmitNode(report.CodeDPSyncPending, node, a, raw, fields...)
		return false
	}
	nj.EmitNode(code, node, args, raw, fields...)
	return true
}
