package collectors

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// UnavailableError says a facility does not exist on this node (a kernel
// without IPVS, no bpffs). Readers return it so the section is reported as
// "unavailable" with the reason instead of as a failure.
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return e.Reason }

// Unavailable builds an UnavailableError.
func Unavailable(format string, args ...any) error {
	return &UnavailableError{Reason: fmt.Sprintf(format, args...)}
}

// RunSection runs one reader, times it, turns a panic into the section's
// error, and classifies the error. A reader may return data together with an
// error (a partial result); both are kept.
func RunSection[T any](ctx context.Context, read func(context.Context) (*T, error)) (s *collectorapi.Section[T]) {
	s = &collectorapi.Section[T]{}
	start := time.Now()
	defer func() {
		if r := recover(); r != nil {
			s.Status = collectorapi.StatusError
			s.Error = fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
		}
		s.DurationMillis = Millis(time.Since(start))
	}()
	data, err := read(ctx)
	s.Data = data
	var unavailable *UnavailableError
	switch {
	case err == nil:
		s.Status = collectorapi.StatusOK
	case errors.As(err, &unavailable):
		s.Status = collectorapi.StatusUnavailable
		s.Error = err.Error()
	default:
		s.Status = collectorapi.StatusError
		s.Error = err.Error()
	}
	return s
}

// Millis is a duration in milliseconds with microsecond resolution, the unit
// every latency and duration in an Observation uses.
func Millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}
