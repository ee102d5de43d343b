package collectors

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// ClassifyNetError maps a dial/read error to its error class (refused,
// timeout, unreachable, reset or other), so that the judge can reason about
// the class without parsing messages.
func ClassifyNetError(err error) string {
	if err == nil {
		return ""
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return collectorapi.ErrClassRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return collectorapi.ErrClassReset
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.EHOSTDOWN), errors.Is(err, syscall.ENETDOWN),
		errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		// EACCES/EPERM: a netfilter REJECT with admin-prohibited or a DROP on output.
		return collectorapi.ErrClassUnreachable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return collectorapi.ErrClassTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return collectorapi.ErrClassTimeout
	}
	return collectorapi.ErrClassOther
}
