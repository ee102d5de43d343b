package nodes

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// runWatch follows every collector Pod of one run over a single watch
// (label svctrace.dev/run), so a thousand collectors cost one stream, not a
// thousand watches or a thousand poll loops, and hands each Pod's events to
// the Run waiting for it.
type runWatch struct {
	mu     sync.Mutex
	subs   map[string]chan watch.Event
	early  map[string]watch.Event // the last event of a Pod whose Run has not subscribed yet
	closed bool
	stop   func()
}

// startRunWatch opens the run's watch. It returns nil when the role cannot
// watch Pods: each Run then polls its Pod.
func startRunWatch(ctx context.Context, c kubernetes.Interface, namespace, runID string) *runWatch {
	w, err := c.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: LabelRun + "=" + labelValue(runID)})
	if err != nil {
		return nil
	}
	rw := &runWatch{subs: map[string]chan watch.Event{}, early: map[string]watch.Event{}, stop: w.Stop}
	go rw.dispatch(w.ResultChan())
	return rw
}

func (rw *runWatch) dispatch(events <-chan watch.Event) {
	for ev := range events {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Error {
			break
		}
		rw.mu.Lock()
		if ch := rw.subs[p.Name]; ch != nil {
			// Only the latest state matters to a Run: drop a queued older
			// one rather than block every other collector behind it.
			select {
			case ch <- ev:
			default:
				select {
				case <-ch:
				default:
				}
				ch <- ev
			}
		} else {
			rw.early[p.Name] = ev
		}
		rw.mu.Unlock()
	}
	rw.mu.Lock()
	defer rw.mu.Unlock()
	rw.closed = true
	for name, ch := range rw.subs {
		close(ch)
		delete(rw.subs, name)
	}
}

// subscribe returns the channel of pod's events, closed when the run's
// watch ends (the Run then polls), and the function that unsubscribes.
func (rw *runWatch) subscribe(pod string) (<-chan watch.Event, func()) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	ch := make(chan watch.Event, 1)
	if rw.closed {
		close(ch)
		return ch, func() {}
	}
	if ev, ok := rw.early[pod]; ok {
		ch <- ev
		delete(rw.early, pod)
	}
	rw.subs[pod] = ch
	return ch, func() {
		rw.mu.Lock()
		defer rw.mu.Unlock()
		if rw.subs[pod] == ch {
			delete(rw.subs, pod)
		}
		delete(rw.early, pod)
	}
}

func (rw *runWatch) close() { rw.stop() }
