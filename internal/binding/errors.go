package binding

import "fmt"

// Kind classifies why a binding request is refused; the broker answers
// each with its OSB status.
type Kind int

// Kinds of refusal.
const (
	// KindInvalid: bad parameters or a plan that is not bindable (400).
	KindInvalid Kind = iota + 1
	// KindLimit: the instance has its most live bindings (400).
	KindLimit
	// KindConflict: the binding ID exists with other attributes (409).
	KindConflict
	// KindNotBindable: the instance cannot be bound in its state (422).
	KindNotBindable
	// KindConcurrent: the same binding is being created (422 ConcurrencyError).
	KindConcurrent
	// KindInstanceNotFound: no such instance (404 on bind).
	KindInstanceNotFound
	// KindNotFound: no such binding, or not ready or expired (404).
	KindNotFound
	// KindGone: unbinding an unknown binding (410).
	KindGone
	// KindUnavailable: the runtime's API server did not do its part (503).
	KindUnavailable
)

// Error is a refused binding request; Error() is the description for the
// platform user (never a secret, never a driver's text).
type Error struct {
	Kind    Kind
	Message string
}

func (e *Error) Error() string { return e.Message }

func refuse(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}
