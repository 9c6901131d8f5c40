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

// Config configures the capabilities New chooses.
type Config struct {
	AppName string
	Store   Store
	// Replica names this process among the replicas; empty means a random
	// name.
	Replica string
	// LeaseTTL and LeaseHeartbeat are as in runner.Config.
	LeaseTTL, LeaseHeartbeat time.Duration
	// RecoverEvery is the period of the recovery loop on a store that
	// leases sessions: zero means the lease's lifetime, negative none.
	RecoverEvery time.Duration
	Logger       *slog.Logger
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

// Leases is the capability of a store that several replicas share and
// that leases sessions (store.SessionLeaser): every execution of a run
// holds its session's lease, and the store refuses the appends of a run
// whose lease another writer took.
type Leases interface {
	// Take takes session k for an execution of run id that is about to
	// start, before it reads or writes anything: its lease, unless the run
	// holds it already (taken from the store's queue with it), and then
	// the check that the run's stored record still says what want says
	// (no replica started the run meanwhile).
	Take(ctx context.Context, k store.SessionKey, id string, want Expect) error
	// With returns ctx carrying run id's lease, if it holds one.
	With(ctx context.Context, id string) context.Context
	// Release ends run id's hold on session k once it has ended:
	// unregister removes it from the runner's registry (and may start the
	// session's next run there), the lease is given up or handed on, in
	// the order the store's queue needs, and then finish tells the run's
	// readers.
	Release(k store.SessionKey, id string, unregister, finish func())
	// RunElsewhere reports, for a queued run that could not start with
	// err, whether its record is another replica's to write. requeued:
	// Recover found the run pending and queued it here.
	RunElsewhere(ctx context.Context, id string, requeued bool, err error) bool
}

// Queue is the capability of a store that also keeps the replicas' run
// queue and notifies them (store.RunQueue, store.RunNotifier): a run that
// waits for its session waits there, where any replica may start it.
type Queue interface {
	// Accepts reports whether a fresh run that could not start with err
	// goes to the queue: its session runs on another replica and it asked
	// to wait or to interrupt.
	Accepts(strategy agentrunnerv1.MultitaskStrategy, err error) bool
	// Enqueue puts a pending record in the queue (first when front).
	Enqueue(ctx context.Context, rec *agentrunnerv1.Run, front bool) error
	// InterruptHolder cancels the run that holds session k's lease,
	// wherever it runs, for run id that goes first.
	InterruptHolder(ctx context.Context, k store.SessionKey, id string)
	// QueuedAhead reports whether session k has runs in the queue.
	QueuedAhead(ctx context.Context, k store.SessionKey) (bool, error)
	// StreamQueued streams a run this request queued to the reader that
	// sent it; a reader that stops first cancels it (unless policy says
	// to go on).
	StreamQueued(ctx context.Context, rec *agentrunnerv1.Run, policy agentrunnerv1.OnDisconnect, yield func(live.Update, error) bool)
	// Sweep takes the next queued run of every free session of the app,
	// and returns how many it started here.
	Sweep(ctx context.Context) (int, error)
}

// Elsewhere is how a process reaches a run that is not live in it.
type Elsewhere interface {
	// Follow streams the run from the store: the record rec, its stored
	// events after `after`, and its end.
	Follow(ctx context.Context, rec *agentrunnerv1.Run, after uint64, yield func(live.Update, error) bool) live.Followed
	// Cancel cancels the run and returns its record once its stored
	// record has ended.
	Cancel(ctx context.Context, rec *agentrunnerv1.Run) (*agentrunnerv1.Run, error)
}

// Recovery is what becomes of the unfinished runs Recover finds.
type Recovery interface {
	// RecoverRunning marks a RUNNING run INTERRUPTED (through the host)
	// when no process runs it, and reports whether it did.
	RecoverRunning(ctx context.Context, rec *agentrunnerv1.Run) (bool, error)
	// RecoverPending reports whether a PENDING run is to be queued in
	// this process; one that waits in the store's queue is put back there
	// instead.
	RecoverPending(ctx context.Context, rec *agentrunnerv1.Run) (bool, error)
}

// Set is what this process can do with its store among replicas, chosen
// once, by New, from what the store can do. A capability a store does not
// have is nil, and its absence means:
//
//   - no Leases: one process owns the store; its registry of live runs is
//     the only rule of who writes to a session, so a run takes, carries
//     and gives up nothing more;
//   - no Queue: a run that waits for its session waits in the process
//     that admitted it; nothing is queued in the store, swept or streamed
//     from there.
//
// Elsewhere, Recovery and Claims are always there.
type Set struct {
	Leases    Leases
	Queue     Queue
	Elsewhere Elsewhere
	Recovery  Recovery
	Claims    *Claims

	// daemons is the background work the Set starts and stops: the
	// queue's sweeper and reaper, the recovery loop; none alone.
	daemons []daemon
}

// daemon is background work of a Set.
type daemon interface {
	start()
	stop()
}

// RecoverFunc is the runner's Recover, which the recovery loop calls.
type RecoverFunc func(ctx context.Context) (interrupted, requeued int, err error)

// New returns the capabilities of cfg's store: Leases when it leases
// sessions, and Queue when it also queues runs and notifies; a store of
// one process has neither. recoverRuns is what the recovery loop of a store
// that leases sessions calls.
func New(cfg Config, host Host, recoverRuns RecoverFunc) Set {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	claims := &Claims{}
	l, ok := cfg.Store.(store.SessionLeaser)
	if !ok {
		return Set{Elsewhere: stored{cfg.Store}, Recovery: alone{host}, Claims: claims}
	}
	s := newShared(cfg, l, host, claims)
	set := Set{Leases: s, Elsewhere: stored{cfg.Store}, Recovery: s, Claims: claims}
	if s.queue != nil {
		set.Queue, set.Elsewhere = s, s
		set.daemons = append(set.daemons, s)
	}
	if every := recoverEvery(cfg.RecoverEvery, s.ttl); every > 0 {
		set.daemons = append(set.daemons, newRecoverLoop(cfg.AppName, every, recoverRuns, cfg.Logger))
	}
	return set
}

// Start starts the Set's background work, once the host is ready.
func (s Set) Start() {
	for _, d := range s.daemons {
		d.start()
	}
}

// Stop stops it and waits for it to end, for Shutdown and Close. It may
// be called more than once.
func (s Set) Stop() {
	for _, d := range s.daemons {
		d.stop()
	}
}
