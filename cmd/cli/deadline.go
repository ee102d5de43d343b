package cli

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/svctrace/kubectl-svctrace/trace/plan"
)

// PerNodeTimeout is what each node a trace inspects adds to the default
// --timeout: collectors run --max-parallel at a time under the client's
// request rate (two requests a node through collector Pods), so a fixed
// minute that suits ten nodes cuts a thousand-node --all-nodes short. A
// --timeout given on the command line is kept as given.
const PerNodeTimeout = 100 * time.Millisecond

// errTimedOut is the cause of a trace context whose time ran out.
var errTimedOut = errors.New("the trace's time ran out")

// traceDeadline cancels a trace's context when its time runs out; extend
// moves that time later, once the node plan says how many nodes there are.
type traceDeadline struct {
	mu    sync.Mutex
	timer *time.Timer
	end   time.Time
	total time.Duration
}

// withTraceDeadline is context.WithTimeout whose deadline can grow; the
// context's cause is errTimedOut when it ran out.
func withTraceDeadline(parent context.Context, timeout time.Duration) (context.Context, context.CancelFunc, *traceDeadline) {
	ctx, cancel := context.WithCancelCause(parent)
	d := &traceDeadline{end: time.Now().Add(timeout), total: timeout}
	d.timer = time.AfterFunc(timeout, func() { cancel(errTimedOut) })
	return ctx, func() { d.timer.Stop(); cancel(context.Canceled) }, d
}

// extend adds by to the time left.
func (d *traceDeadline) extend(by time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if by <= 0 {
		return
	}
	d.end = d.end.Add(by)
	d.total += by
	// A timer that already fired has canceled the trace: Reset then
	// arms it again for nothing, which is harmless.
	d.timer.Reset(time.Until(d.end))
}

// nodesBy is when the node inspection must end: the trace's end less
// what judging and rendering need (plan.JudgeReserve of its whole time),
// so a node that does not answer costs that node, not the result.
func (d *traceDeadline) nodesBy() time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.end.Add(-plan.JudgeReserve(d.total))
}

// String is the trace's whole time, for the "timed out after" message.
func (d *traceDeadline) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.total.String()
}

// timedOut is the error of a trace whose time ran out, nil otherwise.
func timedOut(ctx context.Context, namespace, name string, d *traceDeadline, grows bool) error {
	if !errors.Is(context.Cause(ctx), errTimedOut) {
		return nil
	}
	how := "--timeout"
	if grows {
		how = fmt.Sprintf("--timeout %s, plus %s per inspected node", DefaultTimeout, PerNodeTimeout)
	}
	return fmt.Errorf("trace of %s/%s timed out after %s (%s)", namespace, name, d, how)
}
