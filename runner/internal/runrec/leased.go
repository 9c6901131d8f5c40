package runrec

import (
	"fmt"
	"time"
)

// SessionLeased is the error of a run refused because another replica
// holds its session's lease. It is ErrRunInProgress (errors.Is), and it
// says when to try again: RetryAt, when the lease runs out unless its
// holder renews it. A holder that died renews nothing, and its session
// takes runs again from then; a live holder's run may end sooner.
type SessionLeased struct {
	Session string
	Holder  string // the lease's holder: a run id "@" a replica
	// RetryAt is by the runner's clock (the store's, which the lease's
	// expiry is by, may differ).
	RetryAt time.Time
}

func (e *SessionLeased) Error() string {
	// "leased to <holder> " is what callers and tests look for to tell
	// the holder; the time is the one RetryInfo gives.
	return fmt.Sprintf("session %s is leased to %s until %s (its run is on another replica): %v; retry then, or sooner if that run ends",
		e.Session, e.Holder, e.RetryAt.UTC().Format("2006-01-02T15:04:05.000Z07:00"), ErrRunInProgress)
}

// Unwrap makes errors.Is(err, ErrRunInProgress) hold.
func (e *SessionLeased) Unwrap() error { return ErrRunInProgress }
