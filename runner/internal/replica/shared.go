package replica

import (
	"crypto/rand"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/store"
)

// shared is the mode of a store that several replicas share: every
// execution holds its session's lease (lease.go); with a run queue and
// notices too (queue.go, follow.go), runs wait, are followed and are
// cancelled across replicas.
type shared struct {
	app     string
	store   Store
	host    Host
	log     *slog.Logger
	replica string
	ttl     time.Duration // a lease's lifetime
	every   time.Duration // a heartbeat's period
	leaser  store.SessionLeaser
	now     func() time.Time

	claims atomic.Uint64 // numbers the holders of claimOrphan's leases

	heldMu sync.Mutex
	held   map[string]*heldLease // by run id: the leases executions hold

	// queue and notifier are nil on a store that leases sessions but
	// keeps no queue: runs then wait in the process that admitted them.
	queue    store.RunQueue
	notifier store.RunNotifier
	sweep    sweeper

	watchMu sync.Mutex
	// watchers holds, by run id, the channels (capacity 1) of the readers
	// in this process following a run through the store: when the run
	// starts here, each gets its live run before it executes, so that a
	// run that ends at once is still followed from its log.
	watchers map[string][]chan *live.Run

	// gate bounds the runs this replica takes from the queue (see
	// ClaimGate); starved reports that it turned one away since a run
	// last ended here.
	gate    *Claims
	starved atomic.Bool
}

func newShared(cfg Config, l store.SessionLeaser, host Host, claims *Claims) *shared {
	s := &shared{
		app: cfg.AppName, store: cfg.Store, host: host, log: cfg.Logger,
		replica: cfg.Replica, ttl: cfg.LeaseTTL, every: cfg.LeaseHeartbeat, leaser: l, now: cfg.Now, gate: claims,
		held: map[string]*heldLease{}, watchers: map[string][]chan *live.Run{},
	}
	if s.replica == "" {
		s.replica = rand.Text()
	}
	if s.ttl <= 0 {
		s.ttl = DefaultLeaseTTL
	}
	if s.every <= 0 {
		// Three tries before the lease expires: one slow renewal does
		// not lose the session.
		s.every = max(s.ttl/3, time.Millisecond)
	}
	q, okQ := cfg.Store.(store.RunQueue)
	n, okN := cfg.Store.(store.RunNotifier)
	if okQ && okN {
		s.queue, s.notifier = q, n
		s.sweep.init()
	}
	return s
}

// start subscribes to the store's notices and starts the sweeper and
// the reaper: a daemon of a Set with a Queue.
func (s *shared) start() {
	s.sweep.unsub = s.notifier.Subscribe(s.onNotice)
	go s.sweeper()
	go s.reaper()
}

// stop stops the sweeper, the reaper and the notices.
func (s *shared) stop() {
	s.sweep.stopOnce.Do(func() {
		if s.sweep.unsub != nil {
			s.sweep.unsub()
		}
		s.sweep.cancel()
		close(s.sweep.stop)
		if s.sweep.unsub != nil {
			<-s.sweep.done
			<-s.sweep.reaped
		}
	})
}
