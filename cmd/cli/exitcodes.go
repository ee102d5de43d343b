package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// Exit codes of kubectl-svctrace. kubectl execs the plugin, so these are the
// user's exit codes; --help and the README document them.
const (
	// ExitOK: the trace ran, no layer failed and every layer asked for was
	// judged (warnings and skipped layers allowed).
	ExitOK = 0
	// ExitError: the trace could not run (no cluster, Service unreadable, timeout).
	ExitError = 1
	// ExitUsage: bad arguments or flags.
	ExitUsage = 2
	// ExitLayerFailed: the trace ran and at least one layer failed.
	ExitLayerFailed = 3
	// ExitNotJudged: the trace ran and no layer failed, but at least one layer
	// it was asked to judge is unknown (verdict status unknown): a collector
	// that could not run or did not answer in time on some node, a timeout
	// on a node too slow to tell, a forbidden list. A skipped layer (--no-node, the
	// datapath of a headless Service) does not count. Without it a bot cannot
	// tell "healthy" from "could not look". A failed layer still exits 3.
	ExitNotJudged = 4
)

// exitCodesHelp is the exit-code section of --help.
const exitCodesHelp = `Exit codes:
  0  no layer failed and every layer asked for was judged (warnings and skipped layers allowed)
  1  the trace could not run (cluster unreachable, Service unreadable, timeout)
  2  usage error (bad arguments or flags)
  3  at least one layer failed, including "Service not found" (the result is still printed)
  4  no layer failed, but at least one could not be judged: verdict "unknown", such as a
     collector that could not run or did not answer in time on some node, a timeout on a
     node too slow to tell, or a forbidden list (the result is still printed; 3 wins over 4;
     layers skipped by --no-node or not applying do not count)`

// UsageError is a problem with what the user typed; it exits 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, a ...any) error { return &UsageError{Err: fmt.Errorf(format, a...)} }

// LayerFailedError says the trace ran and a layer failed. The result was
// already printed, so main prints nothing more; it exits 3.
type LayerFailedError struct{ Layer report.LayerName }

func (e *LayerFailedError) Error() string { return fmt.Sprintf("the %s layer failed", e.Layer) }

// NotJudgedError says the trace ran, no layer failed, and some layers could
// not be judged. The result was already printed; it exits 4.
type NotJudgedError struct{ Layers []report.LayerName }

func (e *NotJudgedError) Error() string {
	names := make([]string, len(e.Layers))
	for i, l := range e.Layers {
		names[i] = string(l)
	}
	return "could not judge the " + strings.Join(names, ", ") + " layer(s)"
}

// ExitCode maps an error returned by the command to the process exit code.
func ExitCode(err error) int {
	var usage *UsageError
	var failed *LayerFailedError
	var notJudged *NotJudgedError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &failed):
		return ExitLayerFailed
	case errors.As(err, &notJudged):
		return ExitNotJudged
	case errors.As(err, &usage):
		return ExitUsage
	}
	return ExitError
}

// VerdictExitCode is the exit code of a trace or an analyze that printed t.
// Exported so that a re-judgement outside the command (the judge's scenario
// goldens) states the code the user would get, from the same mapping.
func VerdictExitCode(t *report.ServiceTrace) int { return ExitCode(verdictError(t)) }

// Silent reports whether main should print nothing for err (the result
// already says everything).
func Silent(err error) bool {
	var failed *LayerFailedError
	var notJudged *NotJudgedError
	return errors.As(err, &failed) || errors.As(err, &notJudged)
}
