package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/svctrace/kubectl-svctrace/render"
	"github.com/svctrace/kubectl-svctrace/trace"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// DefaultReinspectInterval bounds how often --watch re-inspects the nodes.
const DefaultReinspectInterval = 30 * time.Second

// watchSettle is how long a watch waits after a change for the ones that
// come with it (a rollout updates a Pod, then its EndpointSlice) before it
// traces again.
const watchSettle = 300 * time.Millisecond

// watchRetry is the pause before a watch that failed or ended is opened again.
const watchRetry = 2 * time.Second

// traceWatch re-traces a Service whenever its Service object, its
// EndpointSlices or its Pods change, and prints only what changed. API
// input is read again and printed on every change, judged against the
// last node report; the nodes are inspected again at most once per
// interval, in the background, and their result joins when it arrives
// (a node read takes seconds, and a rollout's API changes must not wait
// for it), so the rules catching up with an endpoint still show.
type traceWatch struct {
	o        *TraceOptions
	interval time.Duration
	settle   time.Duration
	clock    func() time.Time

	report      *plan.NodeReport
	inspected   bool
	inspectedAt time.Time
	// stale: the last trace judged the nodes' report of inspectedAt
	// against a newer API state.
	stale bool
}

// inspection is the result of one background node read: the API input
// read with it and what the nodes reported.
type inspection struct {
	in    *input.Input
	nodes *plan.NodeReport
	err   error
}

// runWatch is Run for --watch: the first trace printed in full, then one
// block of changes per re-trace that changed something, until ctx ends
// (Ctrl-C), which is not an error.
func (o *TraceOptions) runWatch(ctx context.Context) error {
	w := &traceWatch{o: o, interval: o.ReinspectInterval, settle: watchSettle, clock: time.Now}
	if w.settle <= 0 {
		w.settle = watchSettle
	}
	return w.run(ctx)
}

func (w *traceWatch) run(ctx context.Context) error {
	o := w.o
	in, nr, err := w.collect(ctx, true)
	if err != nil {
		return err
	}
	w.joined(nr)
	last := trace.Assemble(in, w.report, o.Trace)
	if err := render.Print(o.Out, last, o.Output, o.Text); err != nil {
		return err
	}
	fmt.Fprintf(o.ErrOut, "watching %s/%s for changes (Ctrl-C to stop)\n", o.Namespace, o.ServiceName)

	changes := make(chan struct{}, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	for _, src := range w.sources(last) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.follow(wctx, src, changes)
		}()
	}

	reinspect := time.NewTimer(time.Hour)
	reinspect.Stop()
	var pending chan inspection // the node read under way, nil when none
	changedSince := false       // an API change was printed while it ran
	startInspection := func() {
		if pending != nil || !w.reads() {
			return
		}
		ch := make(chan inspection, 1)
		pending, changedSince = ch, false
		wg.Add(1)
		go func() {
			defer wg.Done()
			in, nr, err := w.collect(wctx, true)
			ch <- inspection{in: in, nodes: nr, err: err}
		}()
	}
	for {
		var t *report.ServiceTrace
		select {
		case <-ctx.Done():
			return nil
		case <-changes:
			if !sleepCtx(ctx, w.settle) {
				return nil
			}
			select { // changes that came while settling are in this trace
			case <-changes:
			default:
			}
			in, _, err := w.collect(ctx, false)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				w.failed(err)
				continue
			}
			w.stale = w.inspected
			changedSince = pending != nil
			t = trace.Assemble(in, w.report, o.Trace)
			if w.reads() && pending == nil {
				// Judged against an earlier node report: look again when allowed.
				if wait := time.Until(w.inspectedAt.Add(w.interval)); wait > 0 {
					reinspect.Reset(wait)
				} else {
					startInspection()
				}
			}
		case <-reinspect.C:
			startInspection()
			continue
		case r := <-pending:
			pending = nil
			if ctx.Err() != nil {
				return nil
			}
			if r.err != nil {
				w.failed(r.err)
				continue
			}
			w.joined(r.nodes)
			in := r.in
			w.stale = false
			if changedSince {
				// The API moved on while the nodes were read, and that
				// newer state was printed: judge the nodes against it, not
				// against the older read, keeping what changed during it.
				fresh, _, err := w.collect(ctx, false)
				if ctx.Err() != nil {
					return nil
				}
				if err == nil {
					fresh.SlicesChangedDuringRead = in.SlicesChangedDuringRead
					in, w.stale = fresh, true
				}
			}
			t = trace.Assemble(in, w.report, o.Trace)
		}
		if err := w.print(last, t); err != nil {
			return err
		}
		last = t
	}
}

// reads reports whether the watch reads the nodes at all.
func (w *traceWatch) reads() bool {
	return w.o.Trace.Inspector != nil && !w.o.Trace.NoNode
}

// joined records a node report that just arrived (nil: the nodes were not
// read).
func (w *traceWatch) joined(nr *plan.NodeReport) {
	if nr != nil && w.reads() {
		w.report, w.inspected, w.inspectedAt = nr, true, w.clock()
	}
}

func (w *traceWatch) failed(err error) {
	fmt.Fprintf(w.o.ErrOut, "%s trace failed, still watching: %v\n", w.clock().UTC().Format("15:04:05"), err)
}

// collect reads the API and, when nodes is true and the watch reads them,
// the nodes, within the trace's timeout.
func (w *traceWatch) collect(ctx context.Context, nodes bool) (*input.Input, *plan.NodeReport, error) {
	o := w.o
	tctx, cancel, deadline := withTraceDeadline(ctx, o.Timeout)
	defer cancel()
	opts := o.Trace
	if o.TimeoutPerNode > 0 {
		opts.Planned = func(nodes int) { deadline.extend(time.Duration(nodes) * o.TimeoutPerNode) }
	}
	opts.NodesBy = deadline.nodesBy
	if !nodes || !w.reads() {
		opts.Inspector = nil
	}
	in, nr, err := trace.Collect(tctx, o.Client, o.Namespace, o.ServiceName, opts)
	if err != nil {
		var noPort *trace.PortNotFoundError
		if errors.As(err, &noPort) {
			return nil, nil, &UsageError{Err: err}
		}
		if terr := timedOut(tctx, o.Namespace, o.ServiceName, deadline, o.TimeoutPerNode > 0); terr != nil && ctx.Err() == nil {
			return nil, nil, terr
		}
		return nil, nil, err
	}
	return in, nr, nil
}

// print writes what changed from last to t: lines for text, the whole new
// result for JSON and YAML (one document per change).
func (w *traceWatch) print(last, t *report.ServiceTrace) error {
	o := w.o
	d := report.Diff(last, t)
	eps := report.EndpointChanges(last, t)
	if d.Empty() && len(eps) == 0 {
		return nil
	}
	switch o.Output {
	case render.FormatText, render.FormatWide:
		var nodesAt time.Time
		if w.stale {
			nodesAt = w.inspectedAt
		}
		return render.WatchText(o.Out, t.Metadata.Time, nodesAt, d, eps, o.Text)
	case render.FormatYAML:
		if _, err := io.WriteString(o.Out, "---\n"); err != nil {
			return err
		}
	}
	return render.Print(o.Out, t, o.Output, o.Text)
}

// watchSource opens one watch of the objects a trace depends on.
type watchSource struct {
	what string
	open func(ctx context.Context) (watch.Interface, error)
}

// sources are the Service itself, its EndpointSlices and, when it has a
// selector, the Pods it selects (the selector as it was at the first trace).
func (w *traceWatch) sources(first *report.ServiceTrace) []watchSource {
	o := w.o
	ns, name := o.Namespace, o.ServiceName
	out := []watchSource{
		{"services", func(ctx context.Context) (watch.Interface, error) {
			return o.Client.CoreV1().Services(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		}},
		{"endpointslices.discovery.k8s.io", func(ctx context.Context) (watch.Interface, error) {
			return o.Client.DiscoveryV1().EndpointSlices(ns).Watch(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
		}},
	}
	if sel := first.Service.Selector; len(sel) > 0 {
		selector := labels.SelectorFromSet(sel).String()
		out = append(out, watchSource{"pods", func(ctx context.Context) (watch.Interface, error) {
			return o.Client.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
		}})
	}
	return out
}

// follow keeps one watch open and signals every event on changes. A watch
// that ends (the API server closes them every few minutes) or fails is
// opened again; a forbidden one is reported once and given up.
func (w *traceWatch) follow(ctx context.Context, src watchSource, changes chan<- struct{}) {
	for ctx.Err() == nil {
		wi, err := src.open(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if apierrors.IsForbidden(err) {
				fmt.Fprintf(w.o.ErrOut, "cannot watch %s in namespace %s (forbidden): their changes are not followed\n", src.what, w.o.Namespace)
				return
			}
			if !sleepCtx(ctx, watchRetry) {
				return
			}
			continue
		}
		w.drain(ctx, wi, changes)
		wi.Stop()
		if !sleepCtx(ctx, watchRetry) {
			return
		}
	}
}

// drain signals changes for the watch's events until it ends, fails or ctx
// ends (not every watch.Interface closes its channel on its own then).
func (w *traceWatch) drain(ctx context.Context, wi watch.Interface, changes chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok || ev.Type == watch.Error {
				return
			}
			if ev.Type == watch.Bookmark {
				continue
			}
			select {
			case changes <- struct{}{}:
			default: // a re-trace is already due
			}
		}
	}
}

// sleepCtx waits d, or less when ctx ends; it reports whether ctx is still live.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
