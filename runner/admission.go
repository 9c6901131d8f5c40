package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/replica"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
)

// DefaultCancelWait bounds how long a run refused by a busy session waits
// when the session's run is already cancelled and unwinding (its caller
// went away, or it was cancelled), instead of being refused at once.
const DefaultCancelWait = 5 * time.Second

// ReaderGoneGrace bounds how long a run refused by a busy session waits
// for the session's run to lose its caller, when that run was started by
// a stream whose going away cancels it. A chat client that stops an
// answer drops its stream and sends the next message at once, on the same
// connection: the server may see the new message a moment before it sees
// the old stream end (the client's cancel is sent by another goroutine).
// A request that is refused after all is refused this much later.
const ReaderGoneGrace = 500 * time.Millisecond

// runs is the runner's registry of live runs: the active run and the queue
// of every session that has one, and the live runs by id.
type runs struct {
	mu       sync.Mutex
	sessions map[store.SessionKey]*sessionRuns
	byID     map[string]*liveRun
	draining bool
	wg       sync.WaitGroup // executions in progress
}

// sessionRuns is one session's active run and the runs queued after it.
type sessionRuns struct {
	active *liveRun
	queue  []*liveRun
}

func (s *sessionRuns) busy() bool { return s != nil && (s.active != nil || len(s.queue) > 0) }

// unqueue takes lr out of the session's queue, if it is there.
func (s *sessionRuns) unqueue(lr *liveRun) {
	if s == nil {
		return
	}
	if i := slices.Index(s.queue, lr); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
}

// liveRun is a run this process admitted and has not finished: pending or
// running. Its jobs are split: what it produces and its record are the
// live run's (package live), which its readers follow; what it executes is
// its turn.Job; the rest is admission's, here. Its session's lease, on a
// store shared by replicas, is the replica mode's.
type liveRun struct {
	*live.Run
	req Request
	job turn.Job

	// started reports that the run left the queue (guarded by the
	// runner's registry lock).
	started bool
	// queued is closed once a queued run's pending record is stored;
	// queueErr says whether that failed.
	queued   chan struct{}
	queueErr error
	// cfg is the app's config the run goes on with to its end (see
	// Reconfigure).
	cfg *appConfig
	// requeued reports a pending run that Recover found and queued here:
	// on a shared store the replica that queued it may still start it
	// (replica.Leases.RunElsewhere).
	requeued bool
}

// newLiveRun makes the live run of record rec on config c, which rec
// then names; readerCtx is the context of the reader whose leaving
// cancels it, or nil.
func newLiveRun(ctx context.Context, c *appConfig, key store.SessionKey, rec *agentrunnerv1.Run, req Request, readerCtx context.Context) *liveRun {
	rec.ConfigVersion = c.version
	if req.ScheduleID != "" {
		rec.ScheduleId = req.ScheduleID
	}
	return &liveRun{
		cfg:    c,
		Run:    live.New(ctx, key, rec, readerCtx),
		req:    req,
		job:    turn.Job{ID: rec.GetRunId(), Key: key, Message: req.NewMessage, StateDelta: req.StateDelta, Config: req.Config},
		queued: make(chan struct{}),
	}
}

// markQueued opens the gate of a queued run: its pending record is stored
// (err nil), or could not be.
func (lr *liveRun) markQueued(err error) {
	lr.queueErr = err
	close(lr.queued)
}

// expect is what the run's stored record must still say when it starts.
func (lr *liveRun) expect() replica.Expect {
	e := replica.Expect{Stored: lr.job.Persisted}
	if rs := lr.job.Resume; rs != nil {
		e.Resumed, e.From, e.Seq = true, rs.From, rs.LastSeq
	}
	return e
}

// resumed reports whether this execution continues a run (ResumeRun).
func (lr *liveRun) resumed() bool { return lr.job.Resume != nil }

// admitted is what admission decided: a new live run (fresh), an earlier
// live run with the same request_id, or the record of an earlier run with
// it that has ended.
type admitted struct {
	live  *liveRun
	ended *agentrunnerv1.Run
	fresh bool
	// now reports that a fresh run became the session's active run at
	// admission: it starts at once instead of queueing. (lr.started may
	// change under the registry lock once the run is released.)
	now bool
	// prep is the prepared execution of a fresh run that starts at once.
	prep *turn.Prepared
	// queued is the record of a fresh run queued in the store shared with
	// other replicas (package replica), which the request follows from
	// there, through queue.
	queued *agentrunnerv1.Run
	queue  replica.Queue
	// front and victim: a queued run that goes first, and the run of this
	// process it interrupts (nil when it runs elsewhere or nowhere).
	front  bool
	victim *liveRun
}

// admit applies the session's admission policy to a request. A fresh run
// that can start at once is prepared here (session loaded, request checked
// against it) so that a request that cannot run fails before anything is
// streamed or stored; it is started by the caller with r.launch.
func (r *Runner) admit(ctx context.Context, req Request) (admitted, error) {
	key := store.SessionKey{App: r.appName, User: req.UserID, Session: req.SessionID}
	if err := r.checkRequest(ctx, key, req); err != nil {
		return admitted{}, err
	}
	digest := ""
	if req.RequestID != "" {
		digest = inputDigest(req.input())
	}
	var waited unwindWaits
	for {
		r.runs.mu.Lock()
		a, w, err := r.admitLocked(ctx, key, req, digest, &waited)
		r.runs.mu.Unlock()
		if err != nil || w == nil {
			switch {
			case err == nil && a.queued != nil:
				return r.enqueueShared(ctx, a.queue, a.live, a.front, a.victim)
			case err == nil && a.fresh:
				return r.settle(ctx, a)
			}
			return a, err
		}
		// The session's run is unwinding, or its caller has just gone:
		// wait for it, bounded, then try again.
		t := time.NewTimer(w.bound)
		select {
		case <-w.done:
		case <-w.readerGone:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return admitted{}, ctx.Err()
		}
		t.Stop()
	}
}

// checkRequest validates what can be checked before admission.
func (r *Runner) checkRequest(ctx context.Context, key store.SessionKey, req Request) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := r.available(r.config()); err != nil {
		return err
	}
	if err := turn.ValidateMessage(req.NewMessage); err != nil {
		return err
	}
	switch req.Strategy {
	case agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_UNSPECIFIED, agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_REJECT,
		agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE, agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_INTERRUPT:
	default:
		return fmt.Errorf("multitask_strategy %d is unknown: %w", req.Strategy, store.ErrInvalidArgument)
	}
	return ctx.Err()
}

// available refuses every run of an app whose config c cannot run,
// before anything is stored.
func (r *Runner) available(c *appConfig) error {
	if c.unavailable == "" {
		return nil
	}
	return fmt.Errorf("app %s cannot run: %s: %w", r.appName, c.unavailable, ErrAppUnavailable)
}

// admitLocked decides under r.runs.mu. It returns what to wait for when
// the session's active run is unwinding, or may be about to, and the
// request would otherwise be refused.
func (r *Runner) admitLocked(ctx context.Context, key store.SessionKey, req Request, digest string, waited *unwindWaits) (admitted, *unwindWait, error) {
	if r.runs.draining {
		return admitted{}, nil, fmt.Errorf("run on session %s: %w", key, ErrShuttingDown)
	}
	if req.RequestID != "" {
		if a, err := r.byRequestLocked(ctx, key, req.RequestID, digest); err != nil || a.live != nil || a.ended != nil {
			return a, nil, err
		}
	}
	sr := r.runs.sessions[key]
	busy := sr.busy()
	switch req.Strategy {
	case agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE:
	case agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_INTERRUPT:
	default:
		if busy {
			if w := sr.unwindWait(waited); w != nil {
				return admitted{}, w, nil
			}
			return admitted{}, nil, fmt.Errorf("session %s: run %s: %w", key, sr.blocker().ID, ErrRunInProgress)
		}
	}
	lr := r.newRun(ctx, key, req, digest)
	if q := r.replicas.Queue; busy && q != nil {
		// The store's queue, not this process's: any replica may free the
		// session.
		a := admitted{live: lr, queued: lr.Live(), queue: q, front: req.Strategy == agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_INTERRUPT}
		if a.front {
			a.victim = sr.active
		}
		return a, nil, nil
	}
	if sr == nil {
		sr = &sessionRuns{}
		r.runs.sessions[key] = sr
	}
	r.runs.byID[lr.ID] = lr
	a := admitted{live: lr, fresh: true}
	switch {
	case !busy:
		sr.active = lr
		lr.started = true
		a.now = true
	case req.Strategy == agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_INTERRUPT:
		sr.queue = append([]*liveRun{lr}, sr.queue...)
		if sr.active != nil {
			sr.active.Cancel(runrec.InterruptedBy(lr.ID))
		}
	default:
		sr.queue = append(sr.queue, lr)
	}
	return a, nil, nil
}

// unwindWait is what a request refused by a busy session may wait for
// before it tries again: the active run's end, or its reader's leaving.
type unwindWait struct {
	done, readerGone <-chan struct{}
	bound            time.Duration
}

// unwindWait returns the wait a request refused by the session's active
// run may have, or nil: a run that was cancelled and is unwinding is
// waited for (DefaultCancelWait), and a run whose stream may be leaving
// is given ReaderGoneGrace to leave. Never behind queued runs.
func (s *sessionRuns) unwindWait(waited *unwindWaits) *unwindWait {
	a := s.active
	if a == nil || len(s.queue) > 0 {
		return nil
	}
	switch {
	case a.Cancelling() && !waited.cancel:
		waited.cancel = true
		return &unwindWait{done: a.Done(), bound: DefaultCancelWait}
	case a.ReaderGone() != nil && !waited.reader && !waited.cancel:
		waited.reader = true
		return &unwindWait{done: a.Done(), readerGone: a.ReaderGone(), bound: ReaderGoneGrace}
	}
	return nil
}

// unwindWaits records which waits a request has had: each at most once.
type unwindWaits struct{ reader, cancel bool }

// blocker is the run a refused request is told about.
func (s *sessionRuns) blocker() *liveRun {
	if s.active != nil {
		return s.active
	}
	return s.queue[0]
}

// byRequestLocked finds the run a request_id already names, live or
// stored. A different payload is ErrAlreadyExists.
func (r *Runner) byRequestLocked(ctx context.Context, key store.SessionKey, requestID, digest string) (admitted, error) {
	var rec *agentrunnerv1.Run
	var live *liveRun
	for _, lr := range r.runs.byID {
		if lr.Key == key && lr.req.RequestID == requestID {
			live, rec = lr, lr.Record()
			break
		}
	}
	if live == nil {
		found, err := r.store.FindRunByRequest(ctx, key, requestID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return admitted{}, nil
		case err != nil:
			return admitted{}, fmt.Errorf("find run of request_id %q: %w", requestID, err)
		}
		rec = found
	}
	if rec.GetRequestDigest() != digest {
		return admitted{}, fmt.Errorf("request_id %q is run %s, which was sent with a different payload: %w", requestID, rec.GetRunId(), store.ErrAlreadyExists)
	}
	if live != nil {
		return admitted{live: live}, nil
	}
	return admitted{ended: rec}, nil
}

// newRun makes the live run of an admitted request. Its context is the
// run's own: it keeps ctx's values (trace spans) but not its cancellation.
func (r *Runner) newRun(ctx context.Context, key store.SessionKey, req Request, digest string) *liveRun {
	rec := runrec.Pending(r.newRunID(), key, r.now())
	rec.RequestId, rec.RequestDigest = req.RequestID, digest
	rec.MultitaskStrategy, rec.OnDisconnect = req.Strategy, req.OnDisconnect
	rec.EvalRunId = req.EvalRunID
	rec.Input = runrec.ConfigOnly(req.input())
	rec.Webhook = req.Webhook
	if rec.Webhook == nil {
		rec.Webhook = r.config().webhook
	}
	var readerCtx context.Context
	if req.OnDisconnect != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE {
		readerCtx = ctx
	}
	return newLiveRun(ctx, r.config(), key, rec, req, readerCtx)
}

// settle finishes the admission of a fresh run outside the lock: a run
// that starts at once is prepared; a queued one has its pending record
// stored before the caller hears of it, so that it survives a restart.
func (r *Runner) settle(ctx context.Context, a admitted) (admitted, error) {
	lr := a.live
	if a.now {
		lr.markQueued(nil)
		lr.Update(func(rec *agentrunnerv1.Run) { runrec.Start(rec, r.now()) })
		p, err := r.prepare(ctx, lr)
		if err != nil {
			r.end(lr, lr.Record(), err)
			if q := r.replicas.Queue; q != nil && q.Accepts(lr.req.Strategy, err) {
				// Another replica runs the session: the run waits in the
				// store's queue.
				front := lr.req.Strategy == agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_INTERRUPT
				return r.enqueueShared(ctx, q, lr, front, nil)
			}
			return admitted{}, err
		}
		a.prep = p
		return r.queueBehind(ctx, a)
	}
	rec := lr.Record()
	rec.Input = lr.req.input()
	err := r.store.PutRun(ctx, rec)
	lr.job.Persisted = err == nil
	lr.markQueued(err)
	if err != nil {
		// A run the queue already started sees the error and ends itself.
		r.runs.mu.Lock()
		started := lr.started
		r.runs.mu.Unlock()
		if !started {
			r.end(lr, lr.Record(), err)
		}
		return admitted{}, fmt.Errorf("queue run: %w", err)
	}
	return a, nil
}

// prepare takes the session of a run that is about to start and plans
// its turn (turn.Prepare). The lease first: the history read next must be
// the last writer's; a run taken from the store's queue holds it already.
func (r *Runner) prepare(ctx context.Context, lr *liveRun) (*turn.Prepared, error) {
	if err := r.takeSession(ctx, lr.Key, lr.ID, lr.expect()); err != nil {
		return nil, err
	}
	p, err := turn.Prepare(ctx, lr.cfg.env, &lr.job)
	if errors.Is(err, store.ErrInvalidArgument) {
		// Answers refused as answering nobody: say so exactly when they
		// answer superseded calls a compaction covered since.
		cerr := turn.CoveredAnswers(r.leased(ctx, lr.ID), lr.cfg.env, lr.Key, lr.job.Message)
		switch {
		case errors.Is(cerr, store.ErrInvalidArgument):
			return nil, cerr
		case cerr != nil:
			r.log.WarnContext(ctx, "explain refused function responses", "run", lr.ID, "err", cerr)
		}
	}
	return p, err
}

// queueBehind keeps the order of a session's queue: a fresh ENQUEUE run
// that took the session's lease (free between two runs, or after a
// replica went away) while runs wait in the store's queue goes last in
// it, and its lease goes to the first of them. Without the store's queue,
// no run can be waiting anywhere but in this process's, which admission
// saw.
func (r *Runner) queueBehind(ctx context.Context, a admitted) (admitted, error) {
	lr := a.live
	q := r.replicas.Queue
	if q == nil || lr.req.Strategy != agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE {
		return a, nil
	}
	ahead, err := q.QueuedAhead(ctx, lr.Key)
	if err == nil && !ahead {
		return a, nil
	}
	if err == nil {
		// Queued while this run holds the lease, so that the hand-off
		// below sees it.
		a, err = r.enqueueShared(ctx, q, lr, false, nil)
	}
	r.end(lr, lr.Record(), fmt.Errorf("run %s: queued behind the session's runs: %w", lr.ID, ErrRunInProgress))
	if err != nil {
		return admitted{}, err
	}
	return a, nil
}

// enqueueShared queues a fresh run in the store's queue q, for a session
// that runs elsewhere or here; front puts it first and interrupts the
// session's run (victim, when it runs here). The caller follows the run
// through the store.
func (r *Runner) enqueueShared(ctx context.Context, q replica.Queue, lr *liveRun, front bool, victim *liveRun) (admitted, error) {
	rec := lr.Record()
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_PENDING
	rec.StartTime = nil
	rec.Input = lr.req.input()
	if err := q.Enqueue(ctx, rec, front); err != nil {
		return admitted{}, fmt.Errorf("queue run: %w", err)
	}
	if front {
		// Queued first, then the session's run stopped: the run that ends
		// hands the session to this one.
		if victim != nil {
			victim.Cancel(runrec.InterruptedBy(lr.ID))
		} else {
			q.InterruptHolder(ctx, lr.Key, lr.ID)
		}
	}
	return admitted{queued: rec, queue: q}, nil
}

// The session's lease, on a store that hands them out (Leases of
// r.replicas), is taken, carried and given up here, and only here. Without
// leases, one process owns the store and its registry, where the run is
// the session's active run by now, is the only rule: there is nothing
// more to take, to carry or to give up, and nobody else to take a run.

// takeSession takes session k for run id's execution (Leases.Take).
func (r *Runner) takeSession(ctx context.Context, k store.SessionKey, id string, want replica.Expect) error {
	if l := r.replicas.Leases; l != nil {
		return leasedError(l.Take(ctx, k, id, want))
	}
	return nil
}

// leasedError is err with the refusal of a session another replica
// holds as the runner's SessionLeasedError, which callers look for.
func leasedError(err error) error {
	var sl *runrec.SessionLeased
	if !errors.As(err, &sl) {
		return err
	}
	return &SessionLeasedError{Session: sl.Session, Holder: sl.Holder, RetryAt: sl.RetryAt}
}

// leased returns ctx carrying run id's lease, if it holds one.
func (r *Runner) leased(ctx context.Context, id string) context.Context {
	if l := r.replicas.Leases; l != nil {
		return l.With(ctx, id)
	}
	return ctx
}

// release ends an execution's hold on its session: unregister takes it
// out of the registry, finish tells its readers (Leases.Release, which
// gives the lease up or hands it on between the two, in its order).
func (r *Runner) release(lr *liveRun, unregister, finish func()) {
	if l := r.replicas.Leases; l != nil {
		l.Release(lr.Key, lr.ID, unregister, finish)
		return
	}
	unregister()
	finish()
}

// runElsewhere reports whether a queued run that could not start with err
// is another replica's to end (Leases.RunElsewhere).
func (r *Runner) runElsewhere(ctx context.Context, lr *liveRun, err error) bool {
	if l := r.replicas.Leases; l != nil {
		return l.RunElsewhere(ctx, lr.ID, lr.requeued, err)
	}
	return false
}

// lookup returns the live run with the id, or nil.
func (r *Runner) lookup(id string) *liveRun {
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	return r.runs.byID[id]
}

// inputDigest is the SHA-256 of a request's payload, in a deterministic
// encoding.
func inputDigest(in *agentrunnerv1.RunInput) string {
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(in)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
