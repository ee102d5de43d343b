package nodes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Stage is where a collector Pod is in its short life; progress lines and
// failure messages name it.
type Stage string

const (
	StageCreating   Stage = "creating"
	StageScheduling Stage = "scheduling"
	StagePulling    Stage = "pulling"
	StageCollecting Stage = "collecting"
	StageReading    Stage = "reading"
	StageDone       Stage = "done"
	StageFailed     Stage = "failed"
	StageDeleted    Stage = "deleted"
)

// FailureKind classifies why a collector Pod gave no observation, so the
// report can say something specific instead of "pod failed".
type FailureKind string

const (
	FailCreate      FailureKind = "CreateFailed"
	FailForbidden   FailureKind = "Forbidden"
	FailNotStarted  FailureKind = "NotStarted" // node never ran it (NotReady, rejected)
	FailImage       FailureKind = "ImagePull"
	FailContainer   FailureKind = "ContainerConfig"
	FailOOM         FailureKind = "OOMKilled"
	FailCrash       FailureKind = "Crashed"
	FailDeadline    FailureKind = "DeadlineExceeded"
	FailRejected    FailureKind = "Rejected" // kubelet admission (e.g. NodeAffinity, OutOfcpu)
	FailLogs        FailureKind = "Logs"
	FailCanceled    FailureKind = "Canceled"
	FailBadOutput   FailureKind = "BadOutput"
	FailTimeout     FailureKind = "Timeout"
	FailUnreachable FailureKind = "Unreachable"
)

// Failure is a collector Pod that produced no observation.
type Failure struct {
	Kind    FailureKind
	Stage   Stage
	Node    string
	Pod     string
	Message string
	Err     error
}

func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "collector on node %s", f.Node)
	if f.Pod != "" {
		fmt.Fprintf(&b, " (pod %s)", f.Pod)
	}
	fmt.Fprintf(&b, " %s: %s", failureVerb(f.Kind), f.Message)
	return b.String()
}

func (f *Failure) Unwrap() error { return f.Err }

func failureVerb(k FailureKind) string {
	switch k {
	case FailImage:
		return "could not pull its image"
	case FailNotStarted:
		return "was not started by the node"
	case FailOOM:
		return "ran out of memory"
	case FailDeadline:
		return "hit its deadline"
	case FailCanceled:
		return "was canceled"
	case FailTimeout:
		return "timed out"
	case FailForbidden:
		return "was forbidden"
	default:
		return "failed"
	}
}

// ProgressFunc receives stage changes; it must be safe for concurrent use.
type ProgressFunc func(node string, stage Stage, detail string)

// Runner runs collector Pods. The zero value is not usable: Client and
// Options.Namespace/Image are required.
type Runner struct {
	Client  kubernetes.Interface
	Options PodSpecOptions
	// StartTimeout bounds the time from creation until the container starts
	// (scheduling, pulling). A NotReady node never starts it: this turns that
	// into a message instead of a hang.
	StartTimeout time.Duration
	// PollInterval is how often the Pod status is read when it cannot be
	// watched (a role without watch on pods), and how often the start
	// timeout is checked while watching.
	PollInterval time.Duration
	Progress     ProgressFunc
	// CleanupTimeout bounds the delete that runs after the context is gone.
	CleanupTimeout time.Duration
	// ReadLog overrides how the Pod log is fetched (tests; the fake clientset
	// returns a fixed body). Nil means the pods/log subresource.
	ReadLog func(ctx context.Context, namespace, pod string) ([]byte, error)

	// watch, when set, is the run's shared watch: Run follows its Pod there
	// instead of opening a watch of its own.
	watch *runWatch
	// sweptByCaller: Run leaves its Pod to the caller, which deletes all
	// of the run's Pods with one DeleteCollection when the run ends or is
	// interrupted: a thousand deletes would be a third of a thousand-node
	// run's requests, and after a Ctrl-C would outlast the user's patience.
	// created, when set, is told each Pod Run created, for a caller that
	// must delete them one by one (no deletecollection permission).
	sweptByCaller bool
	created       func(pod string)
}

// Output is what one collector Pod returned.
type Output struct {
	Node     string
	Pod      string
	Log      []byte // the observation JSON
	Duration time.Duration
}

func (r *Runner) progress(node string, s Stage, detail string) {
	if r.Progress != nil {
		r.Progress(node, s, detail)
	}
}

// Run starts a collector Pod on node, waits for it to finish and returns its
// log. The Pod is deleted before Run returns, whatever happened, including a
// canceled ctx: deletion runs on a fresh context bounded by CleanupTimeout.
func (r *Runner) Run(ctx context.Context, node string, requestJSON []byte) (out *Output, err error) {
	start := time.Now()
	pods := r.Client.CoreV1().Pods(r.Options.Namespace)
	fail := func(kind FailureKind, stage Stage, pod, msg string, cause error) error {
		return &Failure{Kind: kind, Stage: stage, Node: node, Pod: pod, Message: msg, Err: cause}
	}

	r.progress(node, StageCreating, "")
	pod, err := NewPod(node, requestJSON, r.Options)
	if err != nil {
		return nil, fail(FailCreate, StageCreating, "", err.Error()+"; trace one port with --port to shrink it", err)
	}
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if ctx.Err() != nil {
			// The create may have reached the server before the
			// cancellation: sweep this run's Pod on this node.
			if !r.sweptByCaller {
				r.sweep(node)
			}
			return nil, fail(FailCanceled, StageCreating, "", "interrupted before the Pod was created", ctx.Err())
		}
		if apierrors.IsForbidden(err) {
			return nil, fail(FailForbidden, StageCreating, "", err.Error(), err)
		}
		return nil, fail(FailCreate, StageCreating, "", err.Error(), err)
	}
	if r.created != nil {
		r.created(created.Name)
	}
	defer func() {
		if r.sweptByCaller {
			return
		}
		if derr := r.delete(created.Name); derr != nil && err == nil {
			err = fail(FailCreate, StageDeleted, created.Name, "could not delete collector Pod: "+derr.Error()+"; run `kubectl svctrace cleanup`", derr)
		}
		r.progress(node, StageDeleted, created.Name)
	}()

	startTimeout := r.StartTimeout
	if startTimeout <= 0 {
		startTimeout = 60 * time.Second
	}
	interval := r.PollInterval
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	startBy := time.Now().Add(startTimeout)
	stage := StageScheduling
	detail := ""
	r.progress(node, stage, created.Name)
	// Follow the Pod with a watch when the role allows it: every change
	// arrives at once, over one stream instead of a GET per interval. The
	// ticker then only bounds the start; without a watch (or once the
	// stream ends) it drives polling with get.
	var events <-chan watch.Event
	if r.watch != nil {
		ch, unsubscribe := r.watch.subscribe(created.Name)
		defer unsubscribe()
		events = ch
	} else if w, werr := pods.Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", created.Name).String(),
		ResourceVersion: created.ResourceVersion,
	}); werr == nil {
		defer w.Stop()
		events = w.ResultChan()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		var p *corev1.Pod
		select {
		case <-ctx.Done():
			kind := FailCanceled
			msg := fmt.Sprintf("interrupted while %s", stage)
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				kind, msg = FailTimeout, fmt.Sprintf("timed out while %s", stage)
			}
			return nil, fail(kind, stage, created.Name, msg, ctx.Err())
		case ev, ok := <-events:
			if !ok || ev.Type == watch.Error {
				events = nil // the stream ended: poll from here on
				continue
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			if !isPod || pod.Name != created.Name {
				continue
			}
			if ev.Type == watch.Deleted {
				return nil, fail(FailCrash, stage, created.Name, "the Pod disappeared (deleted by someone else or evicted)", nil)
			}
			p = pod
		case <-tick.C:
			if events == nil {
				var gerr error
				p, gerr = pods.Get(ctx, created.Name, metav1.GetOptions{})
				if gerr != nil {
					if ctx.Err() != nil {
						continue // reported by the select above
					}
					if apierrors.IsNotFound(gerr) {
						return nil, fail(FailCrash, stage, created.Name, "the Pod disappeared (deleted by someone else or evicted)", gerr)
					}
					return nil, fail(FailUnreachable, stage, created.Name, gerr.Error(), gerr)
				}
			}
		}
		if p != nil {
			st := Classify(p)
			if st.Failure != nil {
				st.Failure.Node, st.Failure.Pod = node, created.Name
				r.progress(node, StageFailed, st.Failure.Message)
				return nil, st.Failure
			}
			detail = st.Detail
			if st.Stage != stage {
				stage = st.Stage
				r.progress(node, stage, st.Detail)
			}
			if st.Finished {
				break
			}
		}
		if (stage == StageScheduling || stage == StagePulling) && time.Now().After(startBy) {
			msg := fmt.Sprintf("not started after %s (%s); %s raises the limit", startTimeout, detail, flagStartTimeout)
			return nil, fail(FailNotStarted, stage, created.Name, msg, nil)
		}
	}

	r.progress(node, StageReading, created.Name)
	log, lerr := r.readLog(ctx, created.Name)
	if lerr != nil {
		return nil, fail(FailLogs, StageReading, created.Name, "reading the Pod log: "+lerr.Error(), lerr)
	}
	obs, perr := ExtractJSON(log)
	if perr != nil {
		return nil, fail(FailBadOutput, StageReading, created.Name, perr.Error(), perr)
	}
	r.progress(node, StageDone, created.Name)
	return &Output{Node: node, Pod: created.Name, Log: obs, Duration: time.Since(start)}, nil
}

func (r *Runner) readLog(ctx context.Context, pod string) ([]byte, error) {
	if r.ReadLog != nil {
		return r.ReadLog(ctx, r.Options.Namespace, pod)
	}
	limit := int64(32 << 20)
	rc, err := r.Client.CoreV1().Pods(r.Options.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: ContainerName, LimitBytes: &limit}).Stream(ctx)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

func (r *Runner) cleanupCtx() (context.Context, context.CancelFunc) {
	d := r.CleanupTimeout
	if d <= 0 {
		d = 20 * time.Second
	}
	return context.WithTimeout(context.Background(), d)
}

// delete removes one Pod immediately. It ignores the caller's context on
// purpose: cleanup must happen after a Ctrl-C too.
func (r *Runner) delete(name string) error {
	ctx, cancel := r.cleanupCtx()
	defer cancel()
	err := r.Client.CoreV1().Pods(r.Options.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// sweep deletes this run's Pods on node; used when a create was interrupted
// and its outcome is unknown.
func (r *Runner) sweep(node string) {
	ctx, cancel := r.cleanupCtx()
	defer cancel()
	sel := LabelRun + "=" + labelValue(r.Options.RunID) + "," + LabelNode + "=" + labelValue(node)
	_ = r.Client.CoreV1().Pods(r.Options.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{LabelSelector: sel})
}

// ExtractJSON returns the last line of a collector log that is a JSON
// object. The collector prints one JSON document on stdout; anything else in
// the log (stderr of a library) is ignored.
func ExtractJSON(log []byte) ([]byte, error) {
	lines := bytes.Split(bytes.TrimSpace(log), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		l := bytes.TrimSpace(lines[i])
		if len(l) > 1 && l[0] == '{' && l[len(l)-1] == '}' {
			return l, nil
		}
	}
	// A pretty-printed document: take from the first line starting with '{'.
	if i := bytes.Index(log, []byte("\n{")); i >= 0 || bytes.HasPrefix(log, []byte("{")) {
		if i < 0 {
			i = -1
		}
		return bytes.TrimSpace(log[i+1:]), nil
	}
	snippet := string(bytes.TrimSpace(log))
	if len(snippet) > 300 {
		snippet = snippet[len(snippet)-300:]
	}
	if snippet == "" {
		return nil, errors.New("the collector printed nothing")
	}
	return nil, fmt.Errorf("the collector printed no observation; its output ends with: %q", snippet)
}

// Cleanup deletes every collector Pod in namespace (all runs) and returns the
// names it deleted. It is what `kubectl svctrace cleanup` runs.
func Cleanup(ctx context.Context, c kubernetes.Interface, namespace string) ([]string, error) {
	list, err := c.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
	if err != nil {
		return nil, err
	}
	var deleted []string
	var errs []error
	for _, p := range list.Items {
		err := c.CoreV1().Pods(namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("delete %s: %w", describe(&p), err))
			continue
		}
		deleted = append(deleted, p.Name)
	}
	return deleted, errors.Join(errs...)
}
