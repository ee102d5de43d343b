package nodes

import (
	"fmt"
	"time"

	"github.com/svctrace/kubectl-svctrace/trace/plan"
)

// MaxStartTimeout caps the derived --collector-start-timeout: a node that
// has not started a 15 MB image's container in a minute is not going to.
const MaxStartTimeout = 60 * time.Second

// The flags that raise each limit, named in the messages of a node that
// hit one.
const (
	flagNodeTimeout  = "--node-timeout"
	flagStartTimeout = "--collector-start-timeout"
	flagTimeout      = "--timeout"
)

// ResolveTimeouts fits the node limits inside a trace whose time is
// traceTimeout, so that none defeats another: a collector that starts at
// the start limit still has time to collect before the node limit, and a
// node that answers at the node limit still leaves the trace
// plan.JudgeReserve to judge and render. A limit the user did not give
// (zero) is derived: --node-timeout is three quarters of the trace's time
// (at most what the reserve leaves), --collector-start-timeout two thirds
// of that (at most MaxStartTimeout). A given one that does not fit is an
// error naming the flag to change.
func (f *Flags) ResolveTimeouts(traceTimeout time.Duration) error {
	if f.NodeTimeout < 0 {
		return fmt.Errorf("invalid %s %s: must be positive", flagNodeTimeout, f.NodeTimeout)
	}
	if f.StartTimeout < 0 {
		return fmt.Errorf("invalid %s %s: must be positive", flagStartTimeout, f.StartTimeout)
	}
	most := traceTimeout - plan.JudgeReserve(traceTimeout)
	nodeGiven := f.NodeTimeout > 0
	if !nodeGiven {
		f.NodeTimeout = min(traceTimeout*3/4, most)
	} else if f.NodeTimeout > most {
		return fmt.Errorf("%s %s does not fit in %s %s, which keeps %s after the nodes to judge and render: give at most %s, or raise %s",
			flagNodeTimeout, f.NodeTimeout, flagTimeout, traceTimeout, plan.JudgeReserve(traceTimeout), most, flagTimeout)
	}
	if f.StartTimeout == 0 {
		f.StartTimeout = min(f.NodeTimeout*2/3, MaxStartTimeout)
		return nil
	}
	if f.StartTimeout >= f.NodeTimeout {
		within := fmt.Sprintf("%s %s", flagNodeTimeout, f.NodeTimeout)
		raise := flagNodeTimeout
		if !nodeGiven {
			within = fmt.Sprintf("%s %s (derived from %s %s)", flagNodeTimeout, f.NodeTimeout, flagTimeout, traceTimeout)
			raise = flagTimeout + " or " + flagNodeTimeout
		}
		return fmt.Errorf("%s %s must be shorter than %s: a collector that starts at its limit has no time left to collect; lower it, or raise %s",
			flagStartTimeout, f.StartTimeout, within, raise)
	}
	return nil
}
