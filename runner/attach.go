package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
)

// Stream runs one invocation as Run does, and streams it with its record:
// the first element is the run record (Update.Run), then the run's events
// and in-band errors, and last the record with the final status; a
// terminal error, if the run has one, follows it. A request the session
// cannot take (missing session, invalid request, busy session under
// MULTITASK_STRATEGY_REJECT, a repeated request_id with another payload)
// is a terminal error before any record.
//
// A run that starts at once executes on the caller's goroutine, which
// gets each update as it is produced (see runInline); a queued run goes on
// in a goroutine of its own and never waits for its reader. When the
// reader stops early or ctx ends, the run is cancelled
// (ON_DISCONNECT_CANCEL, the default) and Stream returns once it has
// released the session, or it goes on unread (ON_DISCONNECT_CONTINUE). A
// request_id that names an earlier run streams that run as AttachRun does.
func (r *Runner) Stream(ctx context.Context, req Request) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		a, err := r.admit(ctx, req)
		if err != nil {
			yield(Update{}, err)
			return
		}
		switch {
		case a.queued != nil:
			r.streamShared(ctx, a.queued, req.OnDisconnect, yield)
		case a.ended != nil && r.xr.queue != nil:
			if r.followShared(ctx, a.ended, 0, yield) == contextEnded {
				yield(Update{}, fmt.Errorf("run %s: %w", a.ended.GetRunId(), ctx.Err()))
			}
		case a.ended != nil:
			r.replayStored(ctx, a.ended, 0, yield)
		case !a.fresh:
			if r.follow(ctx, a.live, 0, false, yield) == contextEnded {
				yield(Update{}, fmt.Errorf("run %s: %w", a.live.id, ctx.Err()))
			}
		case a.now:
			r.runInline(ctx, a.live, a.prep, req.OnDisconnect, yield)
		default:
			r.leave(ctx, a.live, r.follow(ctx, a.live, 0, true, yield), req.OnDisconnect, yield)
		}
	}
}

// runInline executes a run that starts at once on its reader's
// goroutine and hands the reader each update as the run produces it: the
// run needs no goroutine of its own and no wake-up per update, which is
// most of what a short run costs besides its commits. Attachers follow the
// run's log as they follow any run. The run waits for this reader only as
// long as the reader's yield takes (a server's Send, which gRPC buffers up
// to its flow-control window). A reader that stops, or whose context ends,
// leaves the run as on_disconnect says, and the run goes on here, unread,
// to its end: its session is free when this returns.
func (r *Runner) runInline(ctx context.Context, lr *liveRun, p *prepared, policy agentrunnerv1.OnDisconnect, yield func(Update, error) bool) {
	d := &directReader{ctx: ctx, yield: yield, shared: lr.req.SharedEvents, lr: lr}
	if policy != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE {
		d.leave = func() { lr.cancel(errDisconnected) }
		stop := context.AfterFunc(ctx, d.leave)
		defer stop()
	}
	lr.mu.Lock()
	lr.direct = d.deliver
	lr.mu.Unlock()
	r.runs.mu.Lock()
	r.runs.wg.Add(1)
	r.runs.mu.Unlock()
	func() {
		defer r.runs.wg.Done()
		defer r.recoverRun(lr)
		r.execute(lr, p)
	}()
	<-lr.done
	d.deliver(Update{}) // the first record, if nothing was delivered
	final, termErr := lr.endOf()
	switch {
	case d.contextEnded:
		yield(Update{}, fmt.Errorf("run %s: %w", lr.id, ctx.Err()))
	case d.stopped:
	case final != nil && !yield(Update{Run: final}, nil):
	case termErr != nil:
		yield(Update{}, termErr)
	}
}

// directReader is the reader of a run executed on its goroutine.
type directReader struct {
	ctx    context.Context
	yield  func(Update, error) bool
	shared bool
	lr     *liveRun
	leave  func() // what the reader's leaving does to the run; nil: nothing
	// recordSent reports that the first record went out. It goes just
	// before the run's first update, which comes once the user's message
	// is stored with the record: a reader never holds the id of a run
	// that a crash would leave without a record.
	recordSent bool
	// stopped reports that the reader gets nothing more: its yield
	// returned false, or its context ended (contextEnded too).
	stopped, contextEnded bool
}

// deliver hands one update to the reader, as follow would, unless it has
// stopped; the first record goes before the first update. An empty
// update delivers only the first record. It runs on the run's goroutine.
func (d *directReader) deliver(u Update) {
	if d.stopped {
		return
	}
	if d.ctx.Err() != nil {
		d.stopped, d.contextEnded = true, true
		return // the AfterFunc applies on_disconnect
	}
	if !d.recordSent {
		d.recordSent = true
		if !d.yield(Update{Run: d.firstRecord()}, nil) {
			d.stop()
			return
		}
	}
	if u.Run == nil && u.Event == nil && u.Err == nil {
		return
	}
	if !sendItem(u, false, 0, true, d.shared, d.yield) {
		d.stop()
	}
}

// firstRecord is the record the reader gets first: a copy, or for a
// reader that shares (Request.SharedEvents) the live record itself. Only
// the run's goroutine, which is the reader's, changes that record, so it
// stays as it is while the reader encodes it within its yield; other
// goroutines only read it.
func (d *directReader) firstRecord() *agentrunnerv1.Run {
	if d.shared {
		return d.lr.finalRecord()
	}
	return d.lr.record()
}

// stop marks the reader gone and leaves the run as on_disconnect says.
func (d *directReader) stop() {
	d.stopped = true
	if d.leave != nil {
		d.leave()
	}
}

// Start admits a run as Stream does and returns its record at once; the
// run goes on in the background and Attach follows it. A request_id that
// names an earlier run returns that run as it is now.
func (r *Runner) Start(ctx context.Context, req Request) (*agentrunnerv1.Run, error) {
	a, err := r.admit(ctx, req)
	switch {
	case err != nil:
		return nil, err
	case a.queued != nil:
		return a.queued, nil
	case a.ended != nil:
		return a.ended, nil
	case a.fresh && a.now:
		r.launch(a.live, a.prep)
	}
	return a.live.record(), nil
}

// Attach streams a run of the runner's app from any reader, during the
// run or after it: the record, the run's stored events with a sequence
// greater than after, then (while it runs) what it produces live, partial
// events and in-band errors included, and last the record with the final
// status. Every stored event arrives once, in order. Stopping early
// changes nothing for the run. An unknown run is store.ErrNotFound.
//
// On a store shared by replicas (see xreplica.go), a run that does not
// run in this process is followed through the store until it ends: its
// stored events as they are stored, without partial events and in-band
// errors, which only its own replica's readers get.
func (r *Runner) Attach(ctx context.Context, runID string, after uint64) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		if lr := r.lookup(runID); lr != nil {
			if r.follow(ctx, lr, after, false, yield) == contextEnded {
				yield(Update{}, fmt.Errorf("attach run %s: %w", runID, ctx.Err()))
			}
			return
		}
		rec, err := r.GetRun(ctx, runID)
		if err != nil {
			yield(Update{}, err)
			return
		}
		if r.xr.queue != nil {
			// Queued, or running on another replica: followed through the
			// store.
			if r.followShared(ctx, rec, after, yield) == contextEnded {
				yield(Update{}, fmt.Errorf("attach run %s: %w", runID, ctx.Err()))
			}
			return
		}
		r.replayStored(ctx, rec, after, yield)
	}
}

// follow streams a live run to a reader. The run's primary reader (the
// stream that started it) gets everything from the start; an attacher
// gets the stored events after `after` that the run produced before it
// came, then everything live.
func (r *Runner) follow(ctx context.Context, lr *liveRun, after uint64, primary bool, yield func(Update, error) bool) followed {
	if !yield(Update{Run: lr.record()}, nil) {
		return readerStopped
	}
	liveFrom := 0
	if !primary {
		lr.mu.Lock()
		base := lr.baseSeq
		liveFrom = len(lr.log)
		lr.mu.Unlock()
		// A resumed run's earlier events are in the store only.
		if base > after && !r.replayEvents(ctx, lr.key, lr.id, after, base, yield) {
			return readerStopped
		}
	}
	return r.followLog(ctx, lr, after, liveFrom, primary, yield)
}

// followLog yields the run's log from the start, waiting for more until
// the run ends, then the final record and the terminal error. Items
// before liveFrom are history to an attacher: only their stored events
// after `after` are sent.
func (r *Runner) followLog(ctx context.Context, lr *liveRun, after uint64, liveFrom int, primary bool, yield func(Update, error) bool) followed {
	wake := lr.subscribe()
	defer lr.unsubscribe(wake)
	next := 0
	for {
		items, _, ended := lr.snapshot(next)
		for _, u := range items {
			i := next
			next++
			if !sendItem(u, i < liveFrom, after, primary, primary && lr.req.SharedEvents, yield) {
				return readerStopped
			}
		}
		if ended && len(items) == 0 {
			final, termErr := lr.endOf()
			if final != nil && !yield(Update{Run: final}, nil) {
				return readerStopped
			}
			if termErr != nil {
				yield(Update{}, termErr)
			}
			return followedToEnd
		}
		if len(items) > 0 {
			continue // the run may have ended meanwhile: look again
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return contextEnded
		}
	}
}

// sendItem yields one log item to a reader, unless the reader must not
// get it: an event stored at or before `after`, or (in an attacher's
// history) anything but a stored event. Every reader gets its own copy of
// a stored event (the log holds the runner's instance), unless it shares
// them read-only; a partial event is the primary reader's own.
func sendItem(u Update, history bool, after uint64, primary, shared bool, yield func(Update, error) bool) bool {
	ev := u.Event
	stored := ev != nil && !ev.GetPartial()
	switch {
	case primary && u.attachOnly:
		return true
	case stored && ev.GetSequence() <= after:
		return true
	case history && !stored:
		return true
	case shared:
	case stored || (!primary && ev != nil):
		u.Event = proto.CloneOf(ev)
	}
	return yield(u, nil)
}

// replayStored streams a run that is not live from the store: the record,
// its events after `after`, the record again.
func (r *Runner) replayStored(ctx context.Context, rec *agentrunnerv1.Run, after uint64, yield func(Update, error) bool) {
	if !yield(Update{Run: rec}, nil) {
		return
	}
	if rec.GetLastSequence() > after && !r.replayEvents(ctx, store.RunKey(rec), rec.GetRunId(), after, rec.GetLastSequence(), yield) {
		return
	}
	yield(Update{Run: proto.CloneOf(rec)}, nil)
}

// replayPage is how many events a replay reads at a time.
const replayPage = 500

// replayEvents yields the run's stored events with after < sequence <=
// last, reading the store a page at a time.
func (r *Runner) replayEvents(ctx context.Context, k store.SessionKey, runID string, after, last uint64, yield func(Update, error) bool) bool {
	for after < last {
		evs, _, err := r.store.ListEvents(ctx, k, store.EventFilter{AfterSequence: after}, store.Page{Size: replayPage})
		if err != nil {
			yield(Update{}, fmt.Errorf("replay run %s: %w", runID, err))
			return false
		}
		if len(evs) == 0 {
			return true
		}
		for _, ev := range evs {
			if ev.GetSequence() > last {
				return true
			}
			after = ev.GetSequence()
			if ev.GetInvocationId() == runID && !yield(Update{Event: ev}, nil) {
				return false
			}
		}
	}
	return true
}

// GetRun returns the record of a run of the runner's app, live or stored.
func (r *Runner) GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error) {
	if lr := r.lookup(runID); lr != nil {
		return lr.record(), nil
	}
	rec, err := r.store.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	if rec.GetAppName() != r.appName {
		return nil, fmt.Errorf("run %s: %w", runID, store.ErrNotFound)
	}
	return rec, nil
}

// ListRuns pages through a session's runs, newest first, with the live
// state of those still running.
func (r *Runner) ListRuns(ctx context.Context, userID, sessionID string, page store.Page) ([]*agentrunnerv1.Run, string, error) {
	k := store.SessionKey{App: r.appName, User: userID, Session: sessionID}
	if err := k.Validate(); err != nil {
		return nil, "", err
	}
	recs, next, err := r.store.ListRuns(ctx, k, page)
	if err != nil {
		return nil, "", err
	}
	for i, rec := range recs {
		if lr := r.lookup(rec.GetRunId()); lr != nil {
			recs[i] = lr.record()
		}
	}
	return recs, next, nil
}

// Cancel cancels a run and returns its record once the cancellation took
// effect: a running run stores an event saying so and ends
// RUN_STATUS_CANCELLED; a pending one leaves the queue. A run that has
// ended is returned as it is. On a store shared by replicas, a run that
// does not run in this process is cancelled in the store's queue, or on
// the replica that runs it, and returned once its stored record has
// ended (or ctx ends first).
func (r *Runner) Cancel(ctx context.Context, runID string) (*agentrunnerv1.Run, error) {
	lr := r.lookup(runID)
	if lr == nil {
		rec, err := r.GetRun(ctx, runID)
		switch {
		case err != nil:
			return nil, err // not a run of this app
		case rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED:
			// Waiting on its caller: its calls are answered as cancelled.
			return r.cancelWaiting(ctx, rec)
		case r.xr.queue != nil:
			return r.cancelShared(ctx, runID, causeCancel)
		}
		return rec, nil
	}
	if rec, ok := r.cancelQueued(ctx, lr, ErrCancelled); ok {
		return rec, nil
	}
	lr.cancel(ErrCancelled)
	select {
	case <-lr.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return lr.record(), nil
}

// leave ends the primary reader's part in a run. A reader that stopped
// before the run ended cancels it (unless on_disconnect says to go on) and
// returns once the run has released its session; a reader whose context
// ended also gets the terminal error that says so.
func (r *Runner) leave(ctx context.Context, lr *liveRun, how followed, policy agentrunnerv1.OnDisconnect, yield func(Update, error) bool) {
	if how == followedToEnd {
		return
	}
	if policy != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE {
		if _, ok := r.cancelQueued(ctx, lr, errDisconnected); !ok {
			lr.cancel(errDisconnected)
			<-lr.done
		}
	}
	if how == contextEnded {
		yield(Update{}, fmt.Errorf("run %s: %w", lr.id, ctx.Err()))
	}
}

// followed is how a reader's following of a live run ended.
type followed int

const (
	followedToEnd followed = iota
	readerStopped          // yield returned false: nothing more may be yielded
	contextEnded           // the reader's context ended
)

// cancelQueued takes a run that has not started out of its session's
// queue and stores it cancelled with cause; ok is false when the run has
// started.
func (r *Runner) cancelQueued(ctx context.Context, lr *liveRun, cause error) (*agentrunnerv1.Run, bool) {
	r.runs.mu.Lock()
	started := lr.started
	if !started {
		lr.started = true // the queue will never start it now
		if sr := r.runs.sessions[lr.key]; sr != nil {
			for i, q := range sr.queue {
				if q == lr {
					sr.queue = append(sr.queue[:i], sr.queue[i+1:]...)
					break
				}
			}
		}
	}
	r.runs.mu.Unlock()
	if started {
		return nil, false
	}
	<-lr.queued
	rec := r.cancelledRecord(cause)(lr.record())
	if lr.persisted {
		if err := r.store.PutRun(context.WithoutCancel(ctx), rec); err != nil && !errors.Is(err, store.ErrNotFound) {
			r.log.Error("store a cancelled pending run", "run", lr.id, "err", err)
		}
	}
	lr.cancel(cause)
	r.release(lr)
	lr.finish(rec, fmt.Errorf("run %s: %w", lr.id, cause))
	return rec, true
}

// HasLiveRun reports whether the run is pending or running in this
// process.
func (r *Runner) HasLiveRun(runID string) bool { return r.lookup(runID) != nil }

// RunDone returns a channel closed when the run ends in this process; it
// is closed already when the run is not live here (ended, or never seen).
func (r *Runner) RunDone(runID string) <-chan struct{} {
	if lr := r.lookup(runID); lr != nil {
		return lr.done
	}
	done := make(chan struct{})
	close(done)
	return done
}
