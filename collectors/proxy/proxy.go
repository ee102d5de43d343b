// Package proxy finds out who owns the node's Service datapath and how
// kube-proxy is doing: /proxyMode and /metrics on the metrics port (default
// 127.0.0.1:10249), /healthz on the health port (10256), and, whether or not
// those answer, the fingerprints every datapath leaves behind (iptables
// KUBE-PROXY-CANARY chains in either backend, nftables "kube-proxy" tables,
// the kube-ipvs0 link, Cilium and Calico pinned BPF maps). Every fingerprint
// found is reported; which one is a leftover is for the judge to decide.
package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/svctrace/kubectl-svctrace/collectors"
	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// Options says where kube-proxy listens and where bpffs is.
type Options struct {
	MetricsAddress string // host:port of /proxyMode and /metrics
	HealthzAddress string // host:port of /healthz
	BPFFSRoot      string
	HTTPTimeout    time.Duration
	// Fingerprints probes node state; nil means the real node (NodeFingerprints).
	Fingerprints func(ctx context.Context) []collectorapi.Fingerprint
	// NetfilterTables lists the nf_tables tables; nil means the real node's
	// (NodeNetfilterTables) when Fingerprints is nil too, none otherwise.
	NetfilterTables func() ([]string, error)
}

// metricsAttempts bounds how often /metrics is asked when it times out.
const metricsAttempts = 3

// Read asks kube-proxy and collects fingerprints.
func Read(ctx context.Context, opts Options) (*collectorapi.ProxyObservation, error) {
	if opts.HTTPTimeout == 0 {
		opts.HTTPTimeout = time.Second
	}
	client := &http.Client{Timeout: opts.HTTPTimeout}
	obs := &collectorapi.ProxyObservation{}

	// The three endpoints are asked concurrently: a filtered port costs one
	// timeout, not three.
	var wg sync.WaitGroup
	wg.Go(func() {
		var body []byte
		url := "http://" + opts.MetricsAddress + "/proxyMode"
		obs.ProxyMode, body = fetch(ctx, client, url, 256)
		if obs.ProxyMode.ErrorClass == collectorapi.ErrClassTimeout && ctx.Err() == nil {
			// A busy node (or kube-proxy in the middle of a full sync)
			// answers late; without its mode the owner falls back to
			// fingerprints, which cannot tell iptables mode from IPVS mode
			// on a node holding both. Ask once more, with twice the time.
			first := obs.ProxyMode.Error
			obs.ProxyMode, body = fetch(ctx, &http.Client{Timeout: 2 * opts.HTTPTimeout}, url, 256)
			obs.ProxyMode.Attempts, obs.ProxyMode.FirstError = 2, first
		}
		if obs.ProxyMode.Error == "" && obs.ProxyMode.StatusCode == http.StatusOK {
			obs.Mode = collectorapi.DatapathMode(strings.TrimSpace(string(body)))
		}
	})
	wg.Go(func() {
		hz := &collectorapi.KubeProxyHealth{}
		var body []byte
		hz.Fetch, body = fetch(ctx, client, "http://"+opts.HealthzAddress+"/healthz", 4096)
		if hz.Fetch.Error == "" && len(body) > 0 {
			if err := ParseHealthz(body, hz); err != nil {
				hz.Fetch.Error = err.Error()
			}
		}
		obs.Healthz = hz
	})
	wg.Go(func() {
		url := "http://" + opts.MetricsAddress + "/metrics"
		obs.Metrics = readMetrics(ctx, client, url)
		// Without the sync metrics the judge cannot tell rules kube-proxy
		// has not updated yet from stale ones, and a busy node answers
		// /metrics later than /proxyMode (kube-proxy in the middle of a
		// sync on a starved node took more than 2 s): ask again with twice
		// the time, then four times. The fingerprints below run meanwhile,
		// so the retries rarely lengthen the section.
		first := obs.Metrics.Fetch.Error
		for attempt, timeout := 2, 2*opts.HTTPTimeout; attempt <= metricsAttempts; attempt, timeout = attempt+1, 2*timeout {
			if obs.Metrics.Fetch.ErrorClass != collectorapi.ErrClassTimeout || ctx.Err() != nil {
				break
			}
			obs.Metrics = readMetrics(ctx, &http.Client{Timeout: timeout}, url)
			obs.Metrics.Fetch.Attempts, obs.Metrics.Fetch.FirstError = attempt, first
		}
	})

	fp := opts.Fingerprints
	if fp == nil {
		fp = func(ctx context.Context) []collectorapi.Fingerprint { return NodeFingerprints(ctx, opts.BPFFSRoot) }
	}
	obs.Fingerprints = fp(ctx)
	tables := opts.NetfilterTables
	if tables == nil && opts.Fingerprints == nil {
		tables = NodeNetfilterTables
	}
	if tables != nil {
		// A listing error leaves the field nil: "not listed", never "none".
		obs.NetfilterTables, _ = tables()
	}
	wg.Wait()
	return obs, nil
}

// fetch GETs url and returns the evidence and up to keep bytes of the body
// (the evidence's Body holds them too).
func fetch(ctx context.Context, client *http.Client, url string, keep int64) (collectorapi.HTTPFetch, []byte) {
	f := collectorapi.HTTPFetch{URL: url}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		f.Error = err.Error()
		return f, nil
	}
	resp, err := client.Do(req)
	if err != nil {
		f.LatencyMillis = collectors.Millis(time.Since(start))
		f.Error = err.Error()
		f.ErrorClass = collectors.ClassifyNetError(err)
		return f, nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, keep))
	f.LatencyMillis = collectors.Millis(time.Since(start))
	f.StatusCode = resp.StatusCode
	f.Body = strings.TrimSpace(string(body))
	if err != nil {
		f.Error = err.Error()
		f.ErrorClass = collectors.ClassifyNetError(err)
	}
	return f, body
}

// ParseHealthz decodes kube-proxy's /healthz JSON (200 or 503 both carry it).
func ParseHealthz(body []byte, into *collectorapi.KubeProxyHealth) error {
	var raw struct {
		LastUpdated  string `json:"lastUpdated"`
		CurrentTime  string `json:"currentTime"`
		NodeEligible *bool  `json:"nodeEligible"`
		Healthy      *bool  `json:"healthy"`
		Status       map[string]struct {
			LastUpdated string `json:"lastUpdated"`
			Healthy     bool   `json:"healthy"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return fmt.Errorf("healthz is not kube-proxy's JSON: %w", err)
	}
	into.LastUpdated, into.CurrentTime = raw.LastUpdated, raw.CurrentTime
	into.NodeEligible, into.Healthy = raw.NodeEligible, raw.Healthy
	if len(raw.Status) > 0 {
		into.Families = map[string]collectorapi.FamilyHealth{}
		for fam, s := range raw.Status {
			into.Families[fam] = collectorapi.FamilyHealth{LastUpdated: s.LastUpdated, Healthy: s.Healthy}
		}
	}
	return nil
}

// PickedMetrics are the kube-proxy metric families the collector keeps
// (names from pkg/proxy/metrics/metrics.go, v1.37). Histograms keep _count
// and _sum.
var PickedMetrics = []string{
	"kubeproxy_sync_proxy_rules_last_timestamp_seconds",
	"kubeproxy_sync_proxy_rules_last_queued_timestamp_seconds",
	"kubeproxy_sync_proxy_rules_duration_seconds",
	"kubeproxy_sync_full_proxy_rules_duration_seconds",
	"kubeproxy_sync_partial_proxy_rules_duration_seconds",
	"kubeproxy_sync_proxy_rules_iptables_restore_failures_total",
	"kubeproxy_sync_proxy_rules_iptables_partial_restore_failures_total",
	"kubeproxy_sync_proxy_rules_iptables_total",
	"kubeproxy_sync_proxy_rules_nftables_sync_failures_total",
	"kubeproxy_sync_proxy_rules_nftables_cleanup_failures_total",
	"kubeproxy_sync_proxy_rules_endpoint_changes_pending",
	"kubeproxy_sync_proxy_rules_service_changes_pending",
	"kubeproxy_sync_proxy_rules_no_local_endpoints_total",
	"kubeproxy_iptables_ct_state_invalid_dropped_packets_total",
	"kubeproxy_proxy_healthz_total",
	"kubeproxy_conntrack_reconciler_deleted_entries_total",
}

func picked(name string) bool {
	for _, p := range PickedMetrics {
		if name == p {
			return true
		}
		if rest, ok := strings.CutPrefix(name, p); ok && (rest == "_count" || rest == "_sum") {
			return true
		}
	}
	return false
}

func readMetrics(ctx context.Context, client *http.Client, url string) *collectorapi.ProxyMetrics {
	m := &collectorapi.ProxyMetrics{Fetch: collectorapi.HTTPFetch{URL: url}}
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		m.Fetch.Error = err.Error()
		return m
	}
	resp, err := client.Do(req)
	if err != nil {
		m.Fetch.LatencyMillis = collectors.Millis(time.Since(start))
		m.Fetch.Error = err.Error()
		m.Fetch.ErrorClass = collectors.ClassifyNetError(err)
		return m
	}
	defer resp.Body.Close()
	m.Fetch.StatusCode = resp.StatusCode
	m.Samples, err = ParseMetrics(io.LimitReader(resp.Body, 32<<20), picked)
	m.Fetch.LatencyMillis = collectors.Millis(time.Since(start))
	if err != nil {
		m.Fetch.Error = err.Error()
	}
	return m
}

// ParseMetrics streams Prometheus text exposition and keeps the samples whose
// name keep accepts. It understands what kube-proxy emits: comments,
// "name value", "name{l="v",…} value [timestamp]", escaped label values.
func ParseMetrics(r io.Reader, keep func(name string) bool) ([]collectorapi.MetricSample, error) {
	var out []collectorapi.MetricSample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' {
			continue
		}
		nameEnd := strings.IndexAny(text, "{ \t")
		if nameEnd <= 0 {
			return out, fmt.Errorf("metrics line %d: no value", line)
		}
		name := text[:nameEnd]
		if !keep(name) {
			continue
		}
		s := collectorapi.MetricSample{Name: name}
		rest := text[nameEnd:]
		if rest[0] == '{' {
			labels, after, err := parseLabels(rest[1:])
			if err != nil {
				return out, fmt.Errorf("metrics line %d: %w", line, err)
			}
			s.Labels, rest = labels, after
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return out, fmt.Errorf("metrics line %d: no value", line)
		}
		v, err := parseFloat(fields[0])
		if err != nil {
			return out, fmt.Errorf("metrics line %d: %w", line, err)
		}
		s.Value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// parseLabels reads `a="x",b="y"}` and returns what follows the brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ,")
		if s == "" {
			return nil, "", errors.New("unterminated labels")
		}
		if s[0] == '}' {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || len(s) < eq+2 || s[eq+1] != '"' {
			return nil, "", fmt.Errorf("bad label near %q", s)
		}
		key := strings.TrimSpace(s[:eq])
		s = s[eq+2:]
		var val strings.Builder
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					val.WriteByte('\n')
				default:
					val.WriteByte(s[i])
				}
				continue
			}
			if c == '"' {
				break
			}
			val.WriteByte(c)
		}
		if i >= len(s) {
			return nil, "", errors.New("unterminated label value")
		}
		labels[key] = val.String()
		s = s[i+1:]
	}
}

func parseFloat(s string) (float64, error) {
	switch s {
	case "+Inf":
		return inf(1), nil
	case "-Inf":
		return inf(-1), nil
	}
	var v float64
	_, err := fmt.Sscan(s, &v)
	if err != nil {
		return 0, fmt.Errorf("value %q: %w", s, err)
	}
	return v, nil
}
