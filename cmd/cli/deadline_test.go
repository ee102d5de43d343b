package cli

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestTraceDeadlineGrowsWithThePlan: a trace whose plan added time is not
// canceled when the base timeout passes; one without runs out with a
// timeout error that says how long it had.
func TestTraceDeadlineGrowsWithThePlan(t *testing.T) {
	ctx, cancel, d := withTraceDeadline(context.Background(), 20*time.Millisecond)
	defer cancel()
	d.extend(1000 * PerNodeTimeout) // a thousand nodes
	time.Sleep(200 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatalf("canceled (%v) after the base timeout although the plan added %s", context.Cause(ctx), 1000*PerNodeTimeout)
	}

	ctx2, cancel2, d2 := withTraceDeadline(context.Background(), 10*time.Millisecond)
	defer cancel2()
	select {
	case <-ctx2.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the trace's time never ran out")
	}
	err := timedOut(ctx2, "default", "web", d2, true)
	if err == nil || !strings.Contains(err.Error(), "timed out after 10ms (--timeout 1m0s, plus 100ms per inspected node)") {
		t.Errorf("timeout error %v", err)
	}
	if !errors.Is(context.Cause(ctx2), errTimedOut) {
		t.Errorf("cause %v", context.Cause(ctx2))
	}
	cancel()
	if timedOut(ctx, "default", "web", d, true) != nil {
		t.Error("a canceled trace reported as timed out")
	}
}
