package runner

import (
	"context"
	"fmt"
	"time"
)

// ErrRunInProgress is returned (wrapped, naming the invocation) when a run
// is requested on a session that already has one in progress.
var ErrRunInProgress error = &runCause{name: "run-in-progress", msg: "a run is already in progress on this session"}

// Causes a run's context is cancelled with. Each wraps context.Canceled,
// so that callers see a cancellation.
var (
	// ErrCancelled: CancelRun.
	ErrCancelled error = &runCause{name: "cancelled", msg: "cancelled by request", wrapped: context.Canceled}
	// ErrShuttingDown: the server is shutting down; the run is
	// interrupted and can be resumed.
	ErrShuttingDown error = &runCause{name: "shutting-down", msg: "the server is shutting down"}
	// ErrNotResumable: ResumeRun on a run that is not interrupted or
	// waiting on input.
	ErrNotResumable error = &runCause{name: "not-resumable", msg: "run cannot be resumed"}
)

// runCause is an error of the runner's that the rooms under it make too:
// a cause of the same name made there is this one, and this one is
// theirs, by errors.Is either way round (the rooms must not import the
// runner; os.ErrNotExist and syscall.ENOENT are tied the same way).
type runCause struct {
	name, msg string
	wrapped   error
}

func (c *runCause) Error() string {
	if c.wrapped != nil {
		return c.msg + ": " + c.wrapped.Error()
	}
	return c.msg
}

func (c *runCause) Unwrap() error { return c.wrapped }

// RunCause is the name the runner and its rooms know the cause by.
func (c *runCause) RunCause() string { return c.name }

// Is reports whether target is a cause of the same name.
func (c *runCause) Is(target error) bool {
	t, ok := target.(interface{ RunCause() string })
	return ok && t.RunCause() == c.name
}

// SessionLeasedError is the error of a run refused because another
// replica holds its session's lease, on a store several replicas share:
// it is ErrRunInProgress, and its RetryAt says when the lease runs out,
// when a caller may try again (the server gives it as RetryInfo). A
// holder that died renews nothing, and its session takes runs again from
// then; a live holder's run may end sooner.
type SessionLeasedError struct {
	Session string
	Holder  string // the lease's holder: a run id "@" a replica
	// RetryAt is by the runner's clock (the store's, which the lease's
	// expiry is by, may differ).
	RetryAt time.Time
}

func (e *SessionLeasedError) Error() string {
	// "leased to <holder> " is what callers and tests look for to tell
	// the holder; the time is the one RetryInfo gives.
	return fmt.Sprintf("session %s is leased to %s until %s (its run is on another replica): %v; retry then, or sooner if that run ends",
		e.Session, e.Holder, e.RetryAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), ErrRunInProgress)
}

// Unwrap makes errors.Is(err, ErrRunInProgress) hold.
func (e *SessionLeasedError) Unwrap() error { return ErrRunInProgress }
