package collectors

import (
	"context"
	"errors"
	"net"
	"os"
	"syscall"
)

// Error classes shared by the probe, DNS and HTTP evidence.
const (
	ErrClassRefused     = "refused"
	ErrClassTimeout     = "timeout"
	ErrClassUnreachable = "unreachable"
	ErrClassReset       = "reset"
	ErrClassOther       = "other"
)

// ClassifyNetError maps a dial/read error to refused, timeout, unreachable,
// reset or other, so that the judge can reason about the class without
// parsing messages.
func ClassifyNetError(err error) string {
	if err == nil {
		return ""
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrClassRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return ErrClassReset
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH),
		errors.Is(err, syscall.EHOSTDOWN), errors.Is(err, syscall.ENETDOWN),
		errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		// EACCES/EPERM: a netfilter REJECT with admin-prohibited or a DROP on output.
		return ErrClassUnreachable
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, syscall.ETIMEDOUT):
		return ErrClassTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ErrClassTimeout
	}
	return ErrClassOther
}
