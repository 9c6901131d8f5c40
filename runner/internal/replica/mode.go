package replica

import (
	"context"
	"log/slog"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/store"
)

// DefaultLeaseTTL is how long a session lease lasts without a heartbeat
// when Config.LeaseTTL is zero: how long a dead replica's sessions stay
// closed to the others.
const DefaultLeaseTTL = 30 * time.Second

// Store is what the replicas read of the runner's store. A store that is
// also a store.SessionLeaser (and a store.RunQueue and store.RunNotifier)
// is shared by replicas.
type Store interface {
	live.EventLister
	GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error)
	GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error)
	ListRuns(ctx context.Context, k store.SessionKey, page store.Page) ([]*agentrunnerv1.Run, string, error)
}

// Config configures a Mode.
type Config struct {
	AppName string
	Store   Store
	// Replica names this process among the replicas; empty means a random
	// name.
	Replica string
	// LeaseTTL and LeaseHeartbeat are as in runner.Config.
	LeaseTTL, LeaseHeartbeat time.Duration
	Logger                   *slog.Logger
	// Now is the runner's clock, for the records the replicas end.
	Now func() time.Time
}

// Host is what the replicas need of the runner whose runs they share.
type Host interface {
	// Lookup returns the run with the id live in this process, or nil.
	Lookup(id string) *live.Run
	// SessionFree reports whether the runner admits runs and session k
	// has no run in this process.
	SessionFree(k store.SessionKey) bool
	// StartClaimed makes a run taken from the store's queue, whose
	// session's lease this process holds, the session's run here and
	// launches it. started gets its live run before it executes, under
	// the lock of the runner's registry. False when the runner is
	// draining: the run did not start.
	StartClaimed(rec *agentrunnerv1.Run, started func(*live.Run)) bool
	// CancelLocal cancels run id, live in this process, with cause, as
	// CancelRun would.
	CancelLocal(id string, cause error)
	// MarkInterrupted stores the end of a run a dead replica left
	// RUNNING; ctx carries the session's lease.
	MarkInterrupted(ctx context.Context, rec *agentrunnerv1.Run) error
}

// Expect is what the stored record of a run about to start must still
// say, on a shared store, once the session's lease is held.
type Expect struct {
	// Stored: the record was stored before the run started (a queued or
	// resumed run). A fresh run's is not, and is not checked.
	Stored bool
	// Resumed: ResumeRun continues the run from status From at event Seq;
	// else it must still be PENDING.
	Resumed bool
	From    agentrunnerv1.RunStatus
	Seq     uint64
}

// Mode is how this process's runs share the store. Every method is safe
// for concurrent use.
type Mode interface {
	// Start starts the mode's own work (the sweeper of the store's queue),
	// once the host is ready.
	Start()
	// Stop stops it, for Shutdown and Close.
	Stop()

	// Take takes session k for an execution of run id that is about to
	// start, before it reads or writes anything: its lease, unless the run
	// holds it already (taken from the store's queue with it), and then
	// the check that the run's stored record still says what want says
	// (no replica started the run meanwhile).
	Take(ctx context.Context, k store.SessionKey, id string, want Expect) error
	// With returns ctx carrying run id's lease, if it holds one: the
	// store refuses its appends once another writer took the session.
	With(ctx context.Context, id string) context.Context
	// Release ends run id's hold on session k once it has ended:
	// unregister removes it from the runner's registry (and may start the
	// session's next run there), the lease is given up or handed on, in
	// the order the mode needs, and then finish tells the run's readers.
	Release(k store.SessionKey, id string, unregister, finish func())
	// RunElsewhere reports, for a queued run that could not start with
	// err, whether its record is another replica's to write. requeued:
	// Recover found the run pending and queued it here.
	RunElsewhere(ctx context.Context, id string, requeued bool, err error) bool

	// QueuesInStore reports whether a run that waits for its session
	// waits in the store's queue, where any replica may start it.
	QueuesInStore() bool
	// QueuesElsewhere reports whether a fresh run that could not start
	// with err goes to the store's queue: its session runs on another
	// replica and it asked to wait or to interrupt.
	QueuesElsewhere(strategy agentrunnerv1.MultitaskStrategy, err error) bool
	// Enqueue puts a pending record in the store's queue (first when
	// front).
	Enqueue(ctx context.Context, rec *agentrunnerv1.Run, front bool) error
	// InterruptHolder cancels the run that holds session k's lease,
	// wherever it runs, for run id that goes first.
	InterruptHolder(ctx context.Context, k store.SessionKey, id string)
	// QueuedAhead reports whether session k has runs in the store's queue.
	QueuedAhead(ctx context.Context, k store.SessionKey) (bool, error)

	// Follow streams a run that is not live in this process: the record
	// rec, its stored events after `after`, and its end.
	Follow(ctx context.Context, rec *agentrunnerv1.Run, after uint64, yield func(live.Update, error) bool) live.Followed
	// StreamQueued streams a run this request queued in the store to the
	// reader that sent it; a reader that stops first cancels it (unless
	// policy says to go on).
	StreamQueued(ctx context.Context, rec *agentrunnerv1.Run, policy agentrunnerv1.OnDisconnect, yield func(live.Update, error) bool)
	// Cancel cancels a run that is not live in this process and returns
	// its record once its stored record has ended.
	Cancel(ctx context.Context, rec *agentrunnerv1.Run) (*agentrunnerv1.Run, error)

	// RecoverRunning marks a RUNNING run INTERRUPTED (through the host)
	// when no replica runs it, and reports whether it did.
	RecoverRunning(ctx context.Context, rec *agentrunnerv1.Run) (bool, error)
	// RecoverPending reports whether a PENDING run found at start is to
	// be queued in this process; one that waits in the store's queue is
	// put back there instead.
	RecoverPending(ctx context.Context, rec *agentrunnerv1.Run) (bool, error)
	// Sweep takes the next queued run of every free session of the app,
	// and returns how many it started here.
	Sweep(ctx context.Context) (int, error)
	// SetClaimGate and Reserve: see ClaimGate.
	SetClaimGate(g ClaimGate)
	Reserve(done <-chan struct{})
}

// New returns the mode of cfg's store: shared when it leases sessions,
// with the run queue when it also queues runs and notifies; alone
// otherwise.
func New(cfg Config, host Host) Mode {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l, ok := cfg.Store.(store.SessionLeaser)
	if !ok {
		return &alone{store: cfg.Store, host: host}
	}
	return newShared(cfg, l, host)
}
