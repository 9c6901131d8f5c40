package replica

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// sweeper is the state of the goroutine that takes queued runs of free
// sessions from the store's queue.
type sweeper struct {
	unsub    func()
	mu       sync.Mutex
	pending  map[store.SessionKey]bool // sessions the sweeper is to look at
	all      bool                      // every session of the app
	wake     chan struct{}             // capacity 1
	stop     chan struct{}
	done     chan struct{} // closed when the sweeper has stopped
	reaped   chan struct{} // closed when the reaper (reap.go) has stopped
	stopOnce sync.Once
	// ctx bounds the sweeper's and the interrupters' work; Stop cancels
	// it.
	ctx    context.Context
	cancel context.CancelFunc
}

func (w *sweeper) init() {
	w.pending = map[store.SessionKey]bool{}
	w.wake, w.stop, w.done, w.reaped = make(chan struct{}, 1), make(chan struct{}), make(chan struct{}), make(chan struct{})
	w.ctx, w.cancel = context.WithCancel(context.Background())
}

// onNotice reacts to the store's notices, on the store's listening
// goroutine: it must not block.
func (s *shared) onNotice(n store.Notice) {
	switch n.Kind {
	case store.NoticeResync:
		s.wakeSweep(store.SessionKey{})
	case store.NoticeQueued:
		if n.Key.App == "" || n.Key.App == s.app {
			s.wakeSweep(n.Key)
		}
	case store.NoticeCancel:
		if s.host.Lookup(n.RunID) != nil {
			go s.host.CancelLocal(n.RunID, causeOf(n.Cause))
		}
	}
}

// wakeSweep asks the sweeper to look at session k's queue (every
// session's, for the zero key).
func (s *shared) wakeSweep(k store.SessionKey) {
	w := &s.sweep
	w.mu.Lock()
	if k.Session == "" {
		w.all = true
	} else {
		w.pending[k] = true
	}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// sweeper takes the queued runs of the sessions it is woken for, until
// Stop.
func (s *shared) sweeper() {
	w := &s.sweep
	defer close(w.done)
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		}
		w.mu.Lock()
		keys, all := w.pending, w.all
		w.pending, w.all = map[store.SessionKey]bool{}, false
		w.mu.Unlock()
		if all {
			if _, err := s.Sweep(w.ctx); err != nil && w.ctx.Err() == nil {
				s.log.Warn("sweep the run queue", "err", err)
			}
			continue
		}
		for k := range keys {
			s.claimNext(w.ctx, k, store.Lease{})
		}
	}
}

// Sweep takes the next queued run of every session of the app that is
// free, and returns how many it started here.
func (s *shared) Sweep(ctx context.Context) (int, error) {
	keys, err := s.queue.QueuedSessions(ctx, s.app)
	if err != nil {
		return 0, fmt.Errorf("list queued sessions: %w", err)
	}
	n := 0
	for _, k := range keys {
		if s.claimNext(ctx, k, store.Lease{}) {
			n++
		}
	}
	return n, nil
}

// claimNext takes session k's next queued run with the session's lease
// (handed over from prev, the lease of a run that ended here, or free)
// and starts it here. It reports whether it started one.
func (s *shared) claimNext(ctx context.Context, k store.SessionKey, prev store.Lease) bool {
	// Draining, another replica takes the queue over. A session with a run
	// in this process (one that lost its lease and has not seen it yet, or
	// one being admitted) is not free, whatever its lease says.
	skip := !s.host.SessionFree(k)
	var room Claim
	if !skip {
		var ok bool
		if room, ok = s.gate.gate.tryClaim(); !ok {
			// This replica is full: the run stays queued for another
			// replica, or for this one's next sweep. A run that ends
			// here still holds its room while it hands its session on,
			// so at the limit the session's next run goes that way too,
			// and roomFreed sweeps once the run has ended.
			s.log.Debug("queued run left for another replica: this one is at its run limit", "session", k.String())
			s.starved.Store(true)
			skip = true
		}
	}
	if skip {
		s.passOn(ctx, k, prev)
		return false
	}
	holder := func(runID string) string { return runID + "@" + s.replica }
	rec, l, err := s.queue.ClaimQueuedRun(ctx, k, prev, holder, s.ttl)
	if err != nil {
		releaseClaimRoom(room)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false
	case errors.Is(err, store.ErrAlreadyExists):
		if prev.Holder != "" {
			s.log.Warn("session lease was taken over before the run ended", "session", k.String(), "err", err)
		}
		return false
	case err != nil:
		s.log.Warn("take a queued run", "session", k.String(), "err", err)
		if prev.Holder != "" {
			s.releaseClaim(ctx, prev) // else it expires
		}
		return false
	}
	if prev.Holder == "" {
		// The session was free: its last holder may have died in a run.
		s.interruptLeftovers(ctx, k, l)
	}
	s.startClaimed(rec, l, room)
	return true
}

// roomFreed follows the end of a run here: when the claim gate turned a
// queued run away since the last one, the sweeper looks at every queue
// again, now that there may be room.
func (s *shared) roomFreed() {
	if s.starved.Swap(false) {
		s.wakeSweep(store.SessionKey{})
	}
}

// passOn leaves session k's queue to the other replicas: the lease prev,
// handed over from a run that ended here, is released and they are told
// the session is free. Without a lease there is nothing to pass on.
func (s *shared) passOn(ctx context.Context, k store.SessionKey, prev store.Lease) {
	if prev.Holder == "" {
		return
	}
	s.releaseClaim(ctx, prev)
	// The other replicas' sweepers take the queue from here.
	if err := s.notifier.NotifyQueued(ctx, k); err != nil {
		s.log.Warn("tell the other replicas of a free session", "session", k.String(), "err", err)
	}
}

// leftoverScan is how many of a session's newest runs interruptLeftovers
// looks at: a cut run is the newest but for the runs queued behind it.
const leftoverScan = 100

// interruptLeftovers marks INTERRUPTED the runs of session k that a dead
// replica left RUNNING, before a run this replica took from the queue
// with the session's lease l starts: no replica runs them any more (the
// lease is ours), and the session's history must say where they were cut
// before the next run adds to it. Recover would do the same, but only at
// its next sweep, after the queued run.
func (s *shared) interruptLeftovers(ctx context.Context, k store.SessionKey, l store.Lease) {
	runs, _, err := s.store.ListRuns(ctx, k, store.Page{Size: leftoverScan})
	if err != nil {
		s.log.Warn("look for runs a replica left running", "session", k.String(), "err", err)
		return
	}
	for _, rec := range runs {
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING || s.host.Lookup(rec.GetRunId()) != nil {
			continue
		}
		if err := s.host.MarkInterrupted(store.WithLease(ctx, l), rec); err != nil {
			s.log.Warn("interrupt a run a replica left running", "run", rec.GetRunId(), "err", err)
		}
	}
}

// startClaimed runs a run taken from the store's queue, whose session
// lease it holds already. The run keeps room, what the claim gate
// reserved for it, until it ends.
func (s *shared) startClaimed(rec *agentrunnerv1.Run, l store.Lease, room Claim) {
	id := rec.GetRunId()
	s.hold(id, l)
	started := func(lr *live.Run) {
		bindClaim(room, lr.Done())
		s.notifyWatchers(lr)
	}
	if s.host.StartClaimed(rec, started) {
		return
	}
	releaseClaimRoom(room)
	// Shutting down: back to the queue, first as it was, for another
	// replica (or the next start), once the session is free, so that the
	// queue's notice finds it free.
	s.drop(id)
	ctx, cancel := context.WithTimeout(context.Background(), s.ttl)
	defer cancel()
	if err := s.queue.EnqueueRun(ctx, rec, true); err != nil {
		s.log.Warn("queue a run again at shutdown", "run", id, "err", err)
	}
}

// handOff gives the session of a run that ended, whose lease it held, to
// the session's next queued run (started here), or frees it.
func (s *shared) handOff(k store.SessionKey, id string) {
	h := s.unhold(id)
	if h == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.ttl)
	defer cancel()
	s.claimNext(ctx, k, h.lease)
}

// Accepts: the store's queue takes a run whose session another replica
// runs, when the run asked to wait or interrupt.
func (s *shared) Accepts(strategy agentrunnerv1.MultitaskStrategy, err error) bool {
	switch strategy {
	case agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE, agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_INTERRUPT:
		return errors.Is(err, runrec.ErrRunInProgress) && !errors.Is(err, runrec.ErrTaken)
	}
	return false
}

// Enqueue puts a pending record in the store's queue.
func (s *shared) Enqueue(ctx context.Context, rec *agentrunnerv1.Run, front bool) error {
	return s.queue.EnqueueRun(ctx, rec, front)
}

// QueuedAhead reports whether session k has runs in the store's queue.
func (s *shared) QueuedAhead(ctx context.Context, k store.SessionKey) (bool, error) {
	return s.queue.HasQueuedRuns(ctx, k)
}

// InterruptHolder cancels the run that holds session k's lease, on
// whichever replica runs it, for run id.
func (s *shared) InterruptHolder(ctx context.Context, k store.SessionKey, id string) {
	l, err := s.queue.SessionLease(ctx, k)
	if err != nil {
		return // free: the sweep starts the queued run
	}
	victim := l.Holder[:max(strings.LastIndex(l.Holder, "@"), 0)]
	if victim == "" || victim == id {
		return
	}
	// In the background, asked again until the victim has ended (a
	// notification may be lost), bounded by a lease's lifetime: by then a
	// replica that does not answer has lost the session anyway.
	go func() {
		ctx, cancel := context.WithTimeout(s.sweep.ctx, s.ttl)
		defer cancel()
		if _, err := s.cancelShared(ctx, victim, causeInterrupt+id); err != nil && !errors.Is(err, store.ErrNotFound) {
			s.log.Warn("interrupt the run of another replica", "run", victim, "err", err)
		}
	}()
}
