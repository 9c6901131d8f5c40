package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Runs across replicas, on a store that several replicas share and that
// keeps a run queue and notifications (store.RunQueue, store.RunNotifier:
// store/pgstore). There:
//
//   - a run that must wait for its session (MULTITASK_STRATEGY_ENQUEUE,
//     _INTERRUPT) waits in the store's queue, not in this process: the
//     replica that frees the session hands its lease to the session's next
//     queued run and runs it (release), and every replica's sweeper takes
//     queued runs of free sessions when told a run was queued, and at each
//     Recover;
//   - a run that does not run here (queued, or running on another replica)
//     is followed through the store: its stored events and its record, read
//     again whenever the store notifies a change (followShared). Partial
//     events are not stored, so they reach only readers on the replica that
//     runs the run;
//   - CancelRun of a run that does not run here cancels a queued run in the
//     store, or asks every replica (NotifyCancel) to cancel it, and waits
//     for its stored record to end (cancelShared).

// Causes sent with NotifyCancel; causeOf turns them back into the errors
// a local cancel uses.
const (
	causeCancel     = "cancel"
	causeDisconnect = "disconnect"
	causeInterrupt  = "interrupt:" // followed by the interrupting run's id
)

// cancelRetry is how often a replica waiting for a cancelled run to end
// asks again: a cancel notification is lost when a listener reconnects,
// or when it reaches the run's replica just before the run is live there.
const cancelRetry = time.Second

func causeOf(s string) error {
	switch {
	case s == causeDisconnect:
		return errDisconnected
	case strings.HasPrefix(s, causeInterrupt):
		return interruptedBy(strings.TrimPrefix(s, causeInterrupt))
	}
	return ErrCancelled
}

// shared is the cross-replica part of a Runner; nil fields (a store of
// one process) turn it off.
type shared struct {
	queue    store.RunQueue
	notifier store.RunNotifier
	unsub    func()

	mu       sync.Mutex
	pending  map[store.SessionKey]bool // sessions the sweeper is to look at
	all      bool                      // every session of the app
	wake     chan struct{}             // capacity 1
	stop     chan struct{}
	done     chan struct{} // closed when the sweeper has stopped
	stopOnce sync.Once
	// ctx bounds the sweeper's and the interrupters' work; stopSweeper
	// cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	// watchers holds, by run id, the channels (capacity 1) of the readers
	// in this process following a run through the store: when the run
	// starts here, each gets its live run before it executes, so that a
	// run that ends at once is still followed from its log (guarded by
	// the runner's registry lock).
	watchers map[string][]chan *liveRun
	// gate bounds the runs this replica takes from the queue (see
	// ClaimGate); starved reports that it turned one away since a run
	// last ended here.
	gate    claimGate
	starved atomic.Bool
}

// sharedConfig turns the cross-replica queue on, on a store that leases
// sessions, queues runs and notifies, and starts the sweeper (stopped by
// Shutdown or Close).
func (r *Runner) sharedConfig(cfg Config) {
	q, okQ := cfg.Store.(store.RunQueue)
	n, okN := cfg.Store.(store.RunNotifier)
	if r.leaser == nil || !okQ || !okN {
		return
	}
	r.xr = shared{queue: q, notifier: n, pending: map[store.SessionKey]bool{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		watchers: map[string][]chan *liveRun{}}
	r.xr.ctx, r.xr.cancel = context.WithCancel(context.Background())
	r.xr.unsub = n.Subscribe(r.onNotice)
	go r.sweeper()
}

// onNotice reacts to the store's notices, on the store's listening
// goroutine: it must not block.
func (r *Runner) onNotice(n store.Notice) {
	switch n.Kind {
	case store.NoticeResync:
		r.wakeSweep(store.SessionKey{})
	case store.NoticeQueued:
		if n.Key.App == "" || n.Key.App == r.appName {
			r.wakeSweep(n.Key)
		}
	case store.NoticeCancel:
		if lr := r.lookup(n.RunID); lr != nil {
			go r.cancelHere(lr, causeOf(n.Cause))
		}
	}
}

// wakeSweep asks the sweeper to look at session k's queue (every
// session's, for the zero key).
func (r *Runner) wakeSweep(k store.SessionKey) {
	x := &r.xr
	x.mu.Lock()
	if k.Session == "" {
		x.all = true
	} else {
		x.pending[k] = true
	}
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// sweeper takes the queued runs of the sessions it is woken for, until
// stopSweeper.
func (r *Runner) sweeper() {
	defer close(r.xr.done)
	ctx := r.xr.ctx
	for {
		select {
		case <-r.xr.stop:
			return
		case <-r.xr.wake:
		}
		x := &r.xr
		x.mu.Lock()
		keys, all := x.pending, x.all
		x.pending, x.all = map[store.SessionKey]bool{}, false
		x.mu.Unlock()
		if all {
			if _, err := r.sweepQueues(ctx); err != nil && ctx.Err() == nil {
				r.log.Warn("sweep the run queue", "err", err)
			}
			continue
		}
		for k := range keys {
			r.claimNext(ctx, k, store.Lease{})
		}
	}
}

// sweepQueues takes the next queued run of every session of the app that
// is free, and returns how many it started here.
func (r *Runner) sweepQueues(ctx context.Context) (int, error) {
	keys, err := r.xr.queue.QueuedSessions(ctx, r.appName)
	if err != nil {
		return 0, fmt.Errorf("list queued sessions: %w", err)
	}
	n := 0
	for _, k := range keys {
		if r.claimNext(ctx, k, store.Lease{}) {
			n++
		}
	}
	return n, nil
}

// stopSweeper stops the sweeper and the notices, for Shutdown and Close.
func (r *Runner) stopSweeper() {
	if r.xr.queue == nil {
		return
	}
	r.xr.stopOnce.Do(func() {
		r.xr.unsub()
		r.xr.cancel()
		close(r.xr.stop)
		<-r.xr.done
	})
}

// claimNext takes session k's next queued run with the session's lease
// (handed over from prev, the lease of a run that ended here, or free)
// and starts it here. It reports whether it started one.
func (r *Runner) claimNext(ctx context.Context, k store.SessionKey, prev store.Lease) bool {
	r.runs.mu.Lock()
	// Draining, another replica takes the queue over. A session with a run
	// in this process (one that lost its lease and has not seen it yet, or
	// one being admitted) is not free, whatever its lease says.
	skip := r.runs.draining || r.runs.sessions[k].busy()
	r.runs.mu.Unlock()
	var room Claim
	if !skip {
		var ok bool
		if room, ok = r.xr.gate.tryClaim(); !ok {
			// This replica is full: the run stays queued for another
			// replica, or for this one's next sweep. A run that ends
			// here still holds its room while it hands its session on,
			// so at the limit the session's next run goes that way too,
			// and roomFreed sweeps once the run has ended.
			r.log.Debug("queued run left for another replica: this one is at its run limit", "session", k.String())
			r.xr.starved.Store(true)
			skip = true
		}
	}
	if skip {
		r.passOn(ctx, k, prev)
		return false
	}
	holder := func(runID string) string { return runID + "@" + r.replica }
	rec, l, err := r.xr.queue.ClaimQueuedRun(ctx, k, prev, holder, r.leaseTTL)
	if err != nil {
		releaseClaimRoom(room)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false
	case errors.Is(err, store.ErrAlreadyExists):
		if prev.Holder != "" {
			r.log.Warn("session lease was taken over before the run ended", "session", k.String(), "err", err)
		}
		return false
	case err != nil:
		r.log.Warn("take a queued run", "session", k.String(), "err", err)
		if prev.Holder != "" {
			r.releaseClaim(ctx, prev) // else it expires
		}
		return false
	}
	if prev.Holder == "" {
		// The session was free: its last holder may have died in a run.
		r.interruptLeftovers(ctx, k, l)
	}
	r.startClaimed(rec, l, room)
	return true
}

// roomFreed follows the end of a run here: when the claim gate turned a
// queued run away since the last one, the sweeper looks at every queue
// again, now that there may be room.
func (r *Runner) roomFreed() {
	if r.xr.queue != nil && r.xr.starved.Swap(false) {
		r.wakeSweep(store.SessionKey{})
	}
}

// passOn leaves session k's queue to the other replicas: the lease prev,
// handed over from a run that ended here, is released and they are told
// the session is free. Without a lease there is nothing to pass on.
func (r *Runner) passOn(ctx context.Context, k store.SessionKey, prev store.Lease) {
	if prev.Holder == "" {
		return
	}
	r.releaseClaim(ctx, prev)
	// The other replicas' sweepers take the queue from here.
	if err := r.xr.notifier.NotifyQueued(ctx, k); err != nil {
		r.log.Warn("tell the other replicas of a free session", "session", k.String(), "err", err)
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
func (r *Runner) interruptLeftovers(ctx context.Context, k store.SessionKey, l store.Lease) {
	runs, _, err := r.store.ListRuns(ctx, k, store.Page{Size: leftoverScan})
	if err != nil {
		r.log.Warn("look for runs a replica left running", "session", k.String(), "err", err)
		return
	}
	for _, rec := range runs {
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING || r.lookup(rec.GetRunId()) != nil {
			continue
		}
		if err := r.markInterrupted(store.WithLease(ctx, l), rec); err != nil {
			r.log.Warn("interrupt a run a replica left running", "run", rec.GetRunId(), "err", err)
		}
	}
}

// startClaimed runs a run taken from the store's queue, whose session
// lease it holds already: as a requeued run, rebuilt from its record. The
// run keeps room, what the claim gate reserved for it, until it ends.
func (r *Runner) startClaimed(rec *agentrunnerv1.Run, l store.Lease, room Claim) {
	lr := r.liveFromRecord(rec)
	h := &heldLease{lease: l, stop: make(chan struct{}), done: make(chan struct{})}
	lr.lease = h
	go r.heartbeat(lr, h)
	if r.registerClaimed(lr) {
		bindClaim(room, lr.done)
		return
	}
	releaseClaimRoom(room)
	// Shutting down: back to the queue, first as it was, for another
	// replica (or the next start), once the session is free, so that the
	// queue's notice finds it free.
	r.dropLease(lr)
	ctx, cancel := context.WithTimeout(context.Background(), r.leaseTTL)
	defer cancel()
	if err := r.xr.queue.EnqueueRun(ctx, rec, true); err != nil {
		r.log.Warn("queue a run again at shutdown", "run", lr.id, "err", err)
	}
}

// registerClaimed makes a run taken from the store's queue the active run
// of its session and launches it; false when the runner is draining.
func (r *Runner) registerClaimed(lr *liveRun) bool {
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	if r.runs.draining {
		return false
	}
	sr := r.runs.sessions[lr.key]
	if sr == nil {
		sr = &sessionRuns{}
		r.runs.sessions[lr.key] = sr
	}
	r.runs.byID[lr.id] = lr
	for _, c := range r.xr.watchers[lr.id] {
		select {
		case c <- lr:
		default: // it has this run already
		}
	}
	if sr.busy() {
		// A run of this process that was admitted meanwhile: it finds the
		// lease taken and ends, and this run starts from the queue then.
		sr.queue = append([]*liveRun{lr}, sr.queue...)
		return true
	}
	sr.active = lr
	lr.started = true
	r.launchLocked(lr, nil)
	return true
}

// handOff gives the session of a run that ended, whose lease it held, to
// the session's next queued run (started here), or frees it.
func (r *Runner) handOff(lr *liveRun) {
	lr.mu.Lock()
	h := lr.lease
	lr.lease = nil
	lr.mu.Unlock()
	if h == nil {
		return
	}
	close(h.stop)
	<-h.done
	ctx, cancel := context.WithTimeout(context.Background(), r.leaseTTL)
	defer cancel()
	r.claimNext(ctx, lr.key, h.lease)
}

// enqueueShared queues a fresh run in the store, for a session that runs
// elsewhere or here; front puts it first and interrupts the session's
// run (victim, when it runs here). The caller follows the run with
// followShared.
func (r *Runner) enqueueShared(ctx context.Context, lr *liveRun, front bool, victim *liveRun) (admitted, error) {
	rec := lr.record()
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_PENDING
	rec.StartTime = nil
	rec.Input = lr.req.input()
	if err := r.xr.queue.EnqueueRun(ctx, rec, front); err != nil {
		return admitted{}, fmt.Errorf("queue run: %w", err)
	}
	if front {
		// Queued first, then the session's run stopped: the run that ends
		// hands the session to this one.
		if victim != nil {
			victim.cancel(interruptedBy(lr.id))
		} else {
			r.interruptHolder(ctx, lr.key, lr.id)
		}
	}
	return admitted{queued: rec}, nil
}

// interruptHolder cancels the run that holds session k's lease, on
// whichever replica runs it, for run id.
func (r *Runner) interruptHolder(ctx context.Context, k store.SessionKey, id string) {
	l, err := r.xr.queue.SessionLease(ctx, k)
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
		ctx, cancel := context.WithTimeout(r.xr.ctx, r.leaseTTL)
		defer cancel()
		if _, err := r.cancelShared(ctx, victim, causeInterrupt+id); err != nil && !errors.Is(err, store.ErrNotFound) {
			r.log.Warn("interrupt the run of another replica", "run", victim, "err", err)
		}
	}()
}

// cancelHere cancels a run of this process on another replica's request.
func (r *Runner) cancelHere(lr *liveRun, cause error) {
	if _, ok := r.cancelQueued(context.Background(), lr, cause); !ok {
		lr.cancel(cause)
	}
}

// cancelledRecord ends a queued run's record cancelled with cause.
func (r *Runner) cancelledRecord(cause error) func(*agentrunnerv1.Run) *agentrunnerv1.Run {
	return func(rec *agentrunnerv1.Run) *agentrunnerv1.Run {
		rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED
		rec.Error = &agentrunnerv1.Status{Code: codeCanceled, Message: cause.Error()}
		rec.Input = nil
		rec.EndTime = timestamppb.New(r.now())
		return rec
	}
}

// ended reports whether a stored record's status is final.
func ended(rec *agentrunnerv1.Run) bool {
	switch rec.GetStatus() {
	case agentrunnerv1.RunStatus_RUN_STATUS_PENDING, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED:
		return false
	}
	return true
}

// queueBehind keeps the order of a session's queue: a fresh ENQUEUE run
// that took the session's lease (free between two runs, or after a
// replica went away) while runs wait in the store's queue goes last in
// it, and its lease goes to the first of them, here.
func (r *Runner) queueBehind(ctx context.Context, a admitted) (admitted, error) {
	lr := a.live
	if r.xr.queue == nil || lr.req.Strategy != agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE {
		return a, nil
	}
	ahead, err := r.xr.queue.HasQueuedRuns(ctx, lr.key)
	if err == nil && !ahead {
		return a, nil
	}
	if err == nil {
		// Queued while this run holds the lease, so that the hand-off
		// below sees it.
		a, err = r.enqueueShared(ctx, lr, false, nil)
	}
	lr.finish(lr.record(), fmt.Errorf("run %s: queued behind the session's runs: %w", lr.id, ErrRunInProgress))
	r.release(lr)
	if err != nil {
		return admitted{}, err
	}
	return a, nil
}

// watchLive registers a reader of run id that follows it through the
// store: the channel gets the run when it starts in this process. Call
// the returned function when done.
func (r *Runner) watchLive(id string) (<-chan *liveRun, func()) {
	c := make(chan *liveRun, 1)
	r.runs.mu.Lock()
	if r.xr.watchers == nil {
		r.xr.watchers = map[string][]chan *liveRun{}
	}
	r.xr.watchers[id] = append(r.xr.watchers[id], c)
	r.runs.mu.Unlock()
	return c, func() {
		r.runs.mu.Lock()
		defer r.runs.mu.Unlock()
		w := slices.DeleteFunc(r.xr.watchers[id], func(x chan *liveRun) bool { return x == c })
		if len(w) == 0 {
			delete(r.xr.watchers, id)
			return
		}
		r.xr.watchers[id] = w
	}
}
