package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestWaitIdlesUntilStopped: --wait prints nothing, does not read its stdin,
// and returns 0 only once its context (SIGTERM) ends.
func TestWaitIdlesUntilStopped(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	stdin := strings.NewReader(`{"kind":"CollectRequest"}`)
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"--wait"}, stdin, &out, &errOut) }()
	select {
	case code := <-done:
		t.Fatalf("--wait returned %d before being stopped", code)
	case <-time.After(100 * time.Millisecond):
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
	if out.Len()+errOut.Len() != 0 || stdin.Len() == 0 {
		t.Errorf("--wait wrote %q/%q or read its stdin", out.String(), errOut.String())
	}
}
