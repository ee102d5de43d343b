package probe

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// TestTimedOutProbesAreTriedAgain: on a slow node the ClusterIP gets the
// same second, longer try as the endpoint behind it; what answers then is
// recorded as answered on the second attempt, what still times out keeps
// both errors, and refusals (answers) are not retried.
func TestTimedOutProbesAreTriedAgain(t *testing.T) {
	targets := []Target{
		{Kind: "clusterIP", PortName: "http", Addr: netip.MustParseAddrPort("10.96.0.20:80"), Protocol: "TCP"},
		{Kind: "endpoint", PortName: "http", Addr: netip.MustParseAddrPort("10.244.1.5:8080"), Protocol: "TCP"},
		{Kind: "endpoint", PortName: "http", Addr: netip.MustParseAddrPort("10.244.2.7:8080"), Protocol: "TCP"},
		{Kind: "clusterIP", PortName: "admin", Addr: netip.MustParseAddrPort("10.96.0.20:9000"), Protocol: "TCP"},
	}
	// What each target does on its first and second try: the ClusterIP and
	// one endpoint answer only when given twice the time; the other
	// endpoint never answers; the admin port refuses.
	script := map[string][2]string{
		"10.96.0.20:80":   {"timeout", "connected"},
		"10.244.1.5:8080": {"timeout", "connected"},
		"10.244.2.7:8080": {"timeout", "timeout"},
		"10.96.0.20:9000": {"refused", "connected"},
	}
	var mu sync.Mutex
	tries := map[string][]time.Duration{}
	fake := func(_ context.Context, tg Target, timeout time.Duration) collectorapi.Probe {
		mu.Lock()
		n := len(tries[tg.Addr.String()])
		tries[tg.Addr.String()] = append(tries[tg.Addr.String()], timeout)
		mu.Unlock()
		p := collectorapi.Probe{Target: tg.Kind, PortName: tg.PortName, Address: tg.Addr.String(), Protocol: tg.Protocol, Outcome: OutcomeConnected}
		switch script[tg.Addr.String()][n] {
		case "timeout":
			p.Outcome, p.ErrorClass, p.Error = OutcomeFailed, collectorapi.ErrClassTimeout, "dial tcp "+tg.Addr.String()+": i/o timeout"
		case "refused":
			p.Outcome, p.ErrorClass, p.Error = OutcomeFailed, collectorapi.ErrClassRefused, "connection refused"
		}
		return p
	}
	out := make([]collectorapi.Probe, len(targets))
	probeTargets(context.Background(), targets, out, time.Second, 2, fake)

	want := []struct {
		outcome  string
		attempts int
		tries    []time.Duration
	}{
		{OutcomeConnected, 2, []time.Duration{time.Second, 2 * time.Second}},
		{OutcomeConnected, 2, []time.Duration{time.Second, 2 * time.Second}},
		{OutcomeFailed, 2, []time.Duration{time.Second, 2 * time.Second}},
		{OutcomeFailed, 0, []time.Duration{time.Second}},
	}
	for i, w := range want {
		p := out[i]
		got := tries[p.Address]
		if p.Outcome != w.outcome || p.Attempts != w.attempts || len(got) != len(w.tries) {
			t.Errorf("%s %s: outcome %s attempts %d tries %v, want %s %d %v", p.Target, p.Address, p.Outcome, p.Attempts, got, w.outcome, w.attempts, w.tries)
			continue
		}
		for j := range got {
			if got[j] != w.tries[j] {
				t.Errorf("%s try %d had %s, want %s", p.Address, j+1, got[j], w.tries[j])
			}
		}
		if w.attempts == 2 && p.FirstError == "" {
			t.Errorf("%s: the first try's error is lost", p.Address)
		}
	}
}
