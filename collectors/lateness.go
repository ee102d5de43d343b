package collectors

import (
	"sync"
	"time"
)

// LatenessInterval is how often the lateness heartbeat asks to run. Short
// enough that a few hundred milliseconds off the CPU show during a
// one-second probe, long enough to cost nothing measurable.
const LatenessInterval = 20 * time.Millisecond

// Lateness measures how late the collector runs on its node: a heartbeat
// asks to run every LatenessInterval and records how long after it was due
// it got to. On a healthy node that is a few milliseconds; on a starved one
// (a kubelet-busy user-mode Linux guest, a node at its CPU limit) it is the
// time a runnable collector was kept off the CPU, which is also time its
// probes and DNS queries could not see their answers in. The judge reads
// it to tell a slow node from a broken datapath.
type Lateness struct {
	mu   sync.Mutex
	max  time.Duration
	stop chan struct{}
	done chan struct{}
}

// StartLateness starts the heartbeat on the real clock.
func StartLateness() *Lateness {
	return startLateness(time.Now, time.After, LatenessInterval)
}

// startLateness runs the heartbeat with the given clock: now reads it, after
// waits on it.
func startLateness(now func() time.Time, after func(time.Duration) <-chan time.Time, interval time.Duration) *Lateness {
	l := &Lateness{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			due := now().Add(interval)
			select {
			case <-l.stop:
				return
			case <-after(interval):
			}
			if late := now().Sub(due); late > 0 {
				l.mu.Lock()
				l.max = max(l.max, late)
				l.mu.Unlock()
			}
		}
	}()
	return l
}

// Max is the longest the heartbeat has run late so far.
func (l *Lateness) Max() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.max
}

// Stop ends the heartbeat and returns the longest it ran late.
func (l *Lateness) Stop() time.Duration {
	close(l.stop)
	<-l.done
	return l.Max()
}
