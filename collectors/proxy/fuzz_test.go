package proxy

import (
	"strings"
	"testing"
)

// FuzzParseMetrics: any exposition text must parse or fail cleanly, never panic.
func FuzzParseMetrics(f *testing.F) {
	f.Add(metricsRecorded)
	f.Add(`kubeproxy_proxy_healthz_total{code="200",x="a\\"b"} 1 1700000000`)
	f.Add(`kubeproxy_sync_proxy_rules_last_timestamp_seconds +Inf`)
	f.Add(`kubeproxy_proxy_healthz_total{`)
	f.Fuzz(func(t *testing.T, text string) {
		samples, _ := ParseMetrics(strings.NewReader(text), func(string) bool { return true })
		for _, s := range samples {
			if s.Name == "" {
				t.Fatalf("sample without a name from %q", text)
			}
		}
	})
}
