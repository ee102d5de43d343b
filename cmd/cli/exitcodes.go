package cli

import (
	"errors"
	"fmt"

	"github.com/svctrace/kubectl-svctrace/trace"
)

// Exit codes of kubectl-svctrace. kubectl execs the plugin, so these are the
// user's exit codes; --help and the README document them.
const (
	// ExitOK: the trace ran and no layer failed (warnings and unknown layers allowed).
	ExitOK = 0
	// ExitError: the trace could not run (no cluster, Service unreadable, timeout).
	ExitError = 1
	// ExitUsage: bad arguments or flags.
	ExitUsage = 2
	// ExitLayerFailed: the trace ran and at least one layer failed.
	ExitLayerFailed = 3
)

// exitCodesHelp is the exit-code section of --help.
const exitCodesHelp = `Exit codes:
  0  no layer failed (warnings and layers that could not be judged allowed)
  1  the trace could not run (cluster unreachable, Service unreadable, timeout)
  2  usage error (bad arguments or flags)
  3  at least one layer failed, including "Service not found" (the result is still printed)`

// UsageError is a problem with what the user typed; it exits 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, a ...any) error { return &UsageError{Err: fmt.Errorf(format, a...)} }

// LayerFailedError says the trace ran and a layer failed. The result was
// already printed, so main prints nothing more; it exits 3.
type LayerFailedError struct{ Layer trace.LayerName }

func (e *LayerFailedError) Error() string { return fmt.Sprintf("the %s layer failed", e.Layer) }

// ExitCode maps an error returned by the command to the process exit code.
func ExitCode(err error) int {
	var usage *UsageError
	var failed *LayerFailedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &failed):
		return ExitLayerFailed
	case errors.As(err, &usage):
		return ExitUsage
	}
	return ExitError
}

// Silent reports whether main should print nothing for err (the result
// already says everything).
func Silent(err error) bool {
	var failed *LayerFailedError
	return errors.As(err, &failed)
}
