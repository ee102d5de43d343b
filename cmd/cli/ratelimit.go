package cli

import "k8s.io/client-go/rest"

// Client-side rate limit of a trace. client-go's default (5 requests a
// second, bursts of 10) turns --all-nodes on 1,000 nodes (a create and a
// log read per node, then one DeleteCollection) into seven minutes of
// waiting on the plugin's own limiter. kubectl's own discovery client runs
// at 50 a second in bursts of 300; a trace does the same. The API server's
// priority and fairness is what protects it, and its 429s carry
// Retry-After, which client-go already honours (up to 10 retries per
// request). A kubeconfig or caller that sets its own limits keeps them.
const (
	fleetQPS   = 50
	fleetBurst = 300
)

func withFleetRateLimit(cfg *rest.Config) {
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = fleetQPS, fleetBurst
	}
}
