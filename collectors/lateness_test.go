package collectors

import (
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves: after hands back a channel the test
// fires, so the heartbeat's lateness is what the test says, not what the
// machine did.
type fakeClock struct {
	mu    sync.Mutex
	t     time.Time
	waits chan chan time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) after(time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.waits <- ch
	return ch
}

// fire moves the clock by d and wakes the heartbeat's pending wait.
func (c *fakeClock) fire(d time.Duration) {
	ch := <-c.waits
	c.mu.Lock()
	c.t = c.t.Add(d)
	t := c.t
	c.mu.Unlock()
	ch <- t
}

// TestLatenessIsTheLongestDelay: each beat's lateness is how far past its
// due time it ran; the longest is kept, and a beat on time adds nothing.
func TestLatenessIsTheLongestDelay(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0), waits: make(chan chan time.Time)}
	l := startLateness(c.now, c.after, 20*time.Millisecond)
	c.fire(20 * time.Millisecond)  // on time
	c.fire(320 * time.Millisecond) // 300 ms late: kept off the CPU
	c.fire(70 * time.Millisecond)  // 50 ms late
	c.fire(20 * time.Millisecond)
	<-c.waits // the heartbeat waits again: every beat above is counted
	if got, want := l.Max(), 300*time.Millisecond; got != want {
		t.Errorf("Max = %s, want %s", got, want)
	}
	go func() {
		for range c.waits {
		}
	}()
	if got := l.Stop(); got != 300*time.Millisecond {
		t.Errorf("Stop = %s, want 300ms", got)
	}
	close(c.waits)
}

// TestLatenessOnTimeIsZero: a heartbeat that always runs when due records
// no lateness.
func TestLatenessOnTimeIsZero(t *testing.T) {
	c := &fakeClock{t: time.Unix(1000, 0), waits: make(chan chan time.Time)}
	l := startLateness(c.now, c.after, 20*time.Millisecond)
	for range 5 {
		c.fire(20 * time.Millisecond)
	}
	<-c.waits
	if got := l.Max(); got != 0 {
		t.Errorf("Max = %s, want 0", got)
	}
	go func() {
		for range c.waits {
		}
	}()
	l.Stop()
	close(c.waits)
}
