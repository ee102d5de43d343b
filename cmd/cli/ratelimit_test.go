package cli

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

func TestFleetRateLimitOnlyWhenUnset(t *testing.T) {
	cfg := &rest.Config{}
	withFleetRateLimit(cfg)
	if cfg.QPS != fleetQPS || cfg.Burst != fleetBurst {
		t.Errorf("unset limits became %v/%d, want %v/%d", cfg.QPS, cfg.Burst, fleetQPS, fleetBurst)
	}
	own := &rest.Config{QPS: 7, Burst: 9}
	withFleetRateLimit(own)
	if own.QPS != 7 || own.Burst != 9 {
		t.Errorf("the caller's limits were replaced: %v/%d", own.QPS, own.Burst)
	}
	rl := &rest.Config{RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter()}
	withFleetRateLimit(rl)
	if rl.QPS != 0 {
		t.Errorf("a config with its own rate limiter got QPS %v", rl.QPS)
	}
}
