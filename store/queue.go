package store

import (
	"context"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// RunQueue is implemented by stores that several replicas share
// (store/pgstore): a run that waits for its session waits in the store,
// so that whichever replica frees the session runs it, and it survives
// the replica that queued it.
type RunQueue interface {
	// EnqueueRun writes run, which must be RUN_STATUS_PENDING, and puts
	// it last in its session's queue (first when front), in one
	// transaction; replicas that watch the store hear of it (NoticeQueued).
	// A run already queued keeps its place; a stored run that is no longer
	// pending is ErrAlreadyExists. A missing session is ErrNotFound.
	EnqueueRun(ctx context.Context, run *agentrunnerv1.Run, front bool) error
	// ClaimQueuedRun takes the first run of session k's queue that no
	// other taker holds and, in the same transaction, removes it from the
	// queue and takes the session's lease for holder(run id), for ttl,
	// when the lease is free, expired, or prev (a run that ends hands its
	// session over; prev may be the zero Lease). With nothing queued, prev
	// (if it is still the session's lease) is released and the result is
	// ErrNotFound. Another holder's live lease is ErrAlreadyExists.
	ClaimQueuedRun(ctx context.Context, k SessionKey, prev Lease, holder func(runID string) string, ttl time.Duration) (*agentrunnerv1.Run, Lease, error)
	// CancelQueuedRun removes a run from its session's queue and stores
	// end(record) as its record, in one transaction, and returns what it
	// stored. A run that is not queued (it started, or never queued) is
	// ErrNotFound.
	CancelQueuedRun(ctx context.Context, runID string, end func(*agentrunnerv1.Run) *agentrunnerv1.Run) (*agentrunnerv1.Run, error)
	// HasQueuedRuns reports whether session k has queued runs.
	HasQueuedRuns(ctx context.Context, k SessionKey) (bool, error)
	// QueuedSessions returns the sessions of app that have queued runs.
	QueuedSessions(ctx context.Context, app string) ([]SessionKey, error)
	// SessionLease returns session k's live lease; ErrNotFound when it has
	// none.
	SessionLease(ctx context.Context, k SessionKey) (Lease, error)
	// RunningRuns returns app's runs whose record is RUN_STATUS_RUNNING,
	// each with its session's live lease, so that a replica can tell the
	// runs of a replica that died (whose lease expired) without locking
	// any session.
	RunningRuns(ctx context.Context, app string) ([]RunningRun, error)
}

// RunningRun is a RUNNING run and its session's lease when
// RunQueue.RunningRuns read it.
type RunningRun struct {
	Run *agentrunnerv1.Run
	// Lease is the session's live lease; its Holder is empty when the
	// session has none (free, released or expired).
	Lease Lease
	// Left is how long Lease had to run, by the store's clock.
	Left time.Duration
}

// NoticeKind says what a Notice reports.
type NoticeKind int

const (
	// NoticeResync: the store's listener (re)connected; notices may have
	// been lost before, so a subscriber re-reads what it follows.
	NoticeResync NoticeKind = iota
	// NoticeRun: an event of run RunID (with Sequence), or its record,
	// was stored.
	NoticeRun
	// NoticeQueued: run RunID was queued in session Key (EnqueueRun). An
	// empty Key means any session may have queued runs.
	NoticeQueued
	// NoticeCancel: a replica asks for run RunID to be cancelled, with
	// Cause (see RunNotifier.NotifyCancel).
	NoticeCancel
)

// Notice is one change a RunNotifier reports.
type Notice struct {
	Kind     NoticeKind
	Key      SessionKey
	RunID    string
	Sequence uint64
	Cause    string
}

// RunNotifier is implemented by stores that tell every process sharing
// them of changes as they commit (store/pgstore, with LISTEN/NOTIFY).
// Notices are hints, sent only once the change is committed: a notice can
// be lost (the listener reconnects; a NoticeResync follows), so a
// subscriber reads the store for what it follows, never the notice alone.
type RunNotifier interface {
	// Subscribe calls fn with every notice from now on, until unsubscribe
	// is called, on the store's listening goroutine: fn must not block.
	// The first notice after the listener connects is NoticeResync.
	Subscribe(fn func(Notice)) (unsubscribe func())
	// NotifyCancel asks every process's subscribers to cancel run runID
	// with cause (a short word the runner gives a meaning).
	NotifyCancel(ctx context.Context, runID, cause string) error
	// NotifyQueued tells every process's subscribers that session k may
	// have queued runs (NoticeQueued with no run id): its lease was given
	// up without being handed on.
	NotifyQueued(ctx context.Context, k SessionKey) error
}
