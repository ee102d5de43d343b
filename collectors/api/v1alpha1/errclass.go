package v1alpha1

// Error classes of the probe, DNS and HTTP evidence (their errorClass
// fields), so that the judge can reason about a failure without parsing
// its message.
const (
	ErrClassRefused     = "refused"
	ErrClassTimeout     = "timeout"
	ErrClassUnreachable = "unreachable"
	ErrClassReset       = "reset"
	ErrClassOther       = "other"
)
