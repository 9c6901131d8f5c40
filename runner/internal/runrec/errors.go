package runrec

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrunner/agentrunner/store"
)

// Causes a run is refused or stopped with. The runner has its own
// errors of the same names (runner.ErrRunInProgress and the like), which
// an embedder checks; each of these is that error and that error is each
// of these, by errors.Is (see Cause). The record's code of each is
// decided here (Fail, Stop).
var (
	// ErrRunInProgress: the session has a run in progress.
	ErrRunInProgress = &Cause{Name: "run-in-progress", Msg: "a run is already in progress on this session"}
	// ErrCancelled: CancelRun. It wraps context.Canceled, as every cause
	// of a cancellation does, so that callers see one.
	ErrCancelled = &Cause{Name: "cancelled", Msg: "cancelled by request", Wrapped: context.Canceled}
	// ErrDisconnected: the reader that started the run went away.
	ErrDisconnected = fmt.Errorf("cancelled: the caller went away: %w", context.Canceled)
	// ErrShuttingDown: the server is shutting down; the run is
	// interrupted and can be resumed.
	ErrShuttingDown = &Cause{Name: "shutting-down", Msg: "the server is shutting down"}
	// ErrNotResumable: ResumeRun on a run that is not interrupted or
	// waiting on input.
	ErrNotResumable = &Cause{Name: "not-resumable", Msg: "run cannot be resumed"}
	// ErrTaken: another replica started (or ended) the run meanwhile.
	ErrTaken = errors.New("another replica took the run")
	// ErrLeaseLost is the cause a run is stopped with when another writer
	// took its session's lease: the run must store nothing more.
	ErrLeaseLost = fmt.Errorf("another replica took the session over: %w", store.ErrFenced)
)

// Cause is a cause a run is refused or stopped with that the runner
// names in its own package too. Two causes of the same name are one
// (errors.Is, either way round): an error made here is the runner's, and
// the runner's, made there, is the one the rules here look for; neither
// package imports the other. os.ErrNotExist and syscall.ENOENT are tied
// the same way.
type Cause struct {
	Name, Msg string
	Wrapped   error // a cancellation's context.Canceled; nil for others
}

func (c *Cause) Error() string {
	if c.Wrapped != nil {
		return c.Msg + ": " + c.Wrapped.Error()
	}
	return c.Msg
}

// Unwrap returns the error the cause wraps (context.Canceled), if any.
func (c *Cause) Unwrap() error { return c.Wrapped }

// RunCause is the name both packages know the cause by.
func (c *Cause) RunCause() string { return c.Name }

// Is reports whether target is a cause of the same name.
func (c *Cause) Is(target error) bool {
	t, ok := target.(interface{ RunCause() string })
	return ok && t.RunCause() == c.Name
}

// InterruptedBy is the cause a run is cancelled with when another run
// interrupts it (MULTITASK_STRATEGY_INTERRUPT).
func InterruptedBy(runID string) error {
	return fmt.Errorf("cancelled: interrupted by run %s: %w", runID, context.Canceled)
}

// Fenced reports whether err says the run's session was taken over.
func Fenced(err error) bool { return errors.Is(err, store.ErrFenced) }
