package runrec

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrunner/agentrunner/store"
)

// Causes a run is refused or stopped with. The runner exports them under
// the same names; the record's code of each is decided here (Fail, Stop).
var (
	// ErrRunInProgress: the session has a run in progress.
	ErrRunInProgress = errors.New("a run is already in progress on this session")
	// ErrCancelled: CancelRun. It wraps context.Canceled, as every cause
	// of a cancellation does, so that callers see one.
	ErrCancelled = fmt.Errorf("cancelled by request: %w", context.Canceled)
	// ErrDisconnected: the reader that started the run went away.
	ErrDisconnected = fmt.Errorf("cancelled: the caller went away: %w", context.Canceled)
	// ErrShuttingDown: the server is shutting down; the run is
	// interrupted and can be resumed.
	ErrShuttingDown = errors.New("the server is shutting down")
	// ErrNotResumable: ResumeRun on a run that is not interrupted or
	// waiting on input.
	ErrNotResumable = errors.New("run cannot be resumed")
	// ErrTaken: another replica started (or ended) the run meanwhile.
	ErrTaken = errors.New("another replica took the run")
	// ErrLeaseLost is the cause a run is stopped with when another writer
	// took its session's lease: the run must store nothing more.
	ErrLeaseLost = fmt.Errorf("another replica took the session over: %w", store.ErrFenced)
)

// InterruptedBy is the cause a run is cancelled with when another run
// interrupts it (MULTITASK_STRATEGY_INTERRUPT).
func InterruptedBy(runID string) error {
	return fmt.Errorf("cancelled: interrupted by run %s: %w", runID, context.Canceled)
}

// Fenced reports whether err says the run's session was taken over.
func Fenced(err error) bool { return errors.Is(err, store.ErrFenced) }
