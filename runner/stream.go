package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
	"github.com/agentrunner/agentrunner/store"
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
			r.mode.StreamQueued(ctx, a.queued, req.OnDisconnect, yield)
		case a.ended != nil:
			if r.mode.Follow(ctx, a.ended, 0, yield) == live.ContextEnded {
				yield(Update{}, fmt.Errorf("run %s: %w", a.ended.GetRunId(), ctx.Err()))
			}
		case !a.fresh:
			if r.reader(false, 0).Follow(ctx, a.live.Run, yield) == live.ContextEnded {
				yield(Update{}, fmt.Errorf("run %s: %w", a.live.ID, ctx.Err()))
			}
		case a.now:
			r.runInline(ctx, a.live, a.prep, req.OnDisconnect, yield)
		default:
			rd := r.reader(true, 0)
			rd.Shared = req.SharedEvents
			r.leave(ctx, a.live, rd.Follow(ctx, a.live.Run, yield), req.OnDisconnect, yield)
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
func (r *Runner) runInline(ctx context.Context, lr *liveRun, p *turn.Prepared, policy agentrunnerv1.OnDisconnect, yield func(Update, error) bool) {
	var leave func()
	if policy != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE {
		leave = func() { lr.Cancel(runrec.ErrDisconnected) }
		stop := context.AfterFunc(ctx, leave)
		defer stop()
	}
	d := live.NewDirect(ctx, lr.Run, lr.req.SharedEvents, leave, yield)
	lr.SetDirect(d.Deliver)
	r.runs.mu.Lock()
	r.runs.wg.Add(1)
	r.runs.mu.Unlock()
	func() {
		defer r.runs.wg.Done()
		defer r.recoverRun(lr)
		r.execute(lr, p)
	}()
	<-lr.Done()
	if d.Finish() {
		yield(Update{}, fmt.Errorf("run %s: %w", lr.ID, ctx.Err()))
	}
}

// reader is how a reader of this runner's runs follows one (see
// live.Reader): the primary reader gets everything from the start, an
// attacher the stored events after `after`, then everything live.
func (r *Runner) reader(primary bool, after uint64) live.Reader {
	return live.Reader{Store: r.store, Primary: primary, After: after}
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
	return a.live.Record(), nil
}

// Attach streams a run of the runner's app from any reader, during the
// run or after it: the record, the run's stored events with a sequence
// greater than after, then (while it runs) what it produces live, partial
// events and in-band errors included, and last the record with the final
// status. Every stored event arrives once, in order. Stopping early
// changes nothing for the run. An unknown run is store.ErrNotFound.
//
// On a store shared by replicas (see package replica), a run that does not
// run in this process is followed through the store until it ends: its
// stored events as they are stored, without partial events and in-band
// errors, which only its own replica's readers get.
func (r *Runner) Attach(ctx context.Context, runID string, after uint64) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		how := live.FollowedToEnd
		if lr := r.lookup(runID); lr != nil {
			how = r.reader(false, after).Follow(ctx, lr.Run, yield)
		} else if rec, err := r.GetRun(ctx, runID); err != nil {
			yield(Update{}, err)
			return
		} else {
			// Ended, or (on a store shared by replicas) queued or running
			// on another replica: followed through the store.
			how = r.mode.Follow(ctx, rec, after, yield)
		}
		if how == live.ContextEnded {
			yield(Update{}, fmt.Errorf("attach run %s: %w", runID, ctx.Err()))
		}
	}
}

// GetRun returns the record of a run of the runner's app, live or stored.
func (r *Runner) GetRun(ctx context.Context, runID string) (*agentrunnerv1.Run, error) {
	if lr := r.lookup(runID); lr != nil {
		return lr.Record(), nil
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
			recs[i] = lr.Record()
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
		}
		return r.mode.Cancel(ctx, rec)
	}
	if rec, ok := r.cancelQueued(ctx, lr, ErrCancelled); ok {
		return rec, nil
	}
	lr.Cancel(ErrCancelled)
	select {
	case <-lr.Done():
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return lr.Record(), nil
}

// leave ends the primary reader's part in a run. A reader that stopped
// before the run ended cancels it (unless on_disconnect says to go on) and
// returns once the run has released its session; a reader whose context
// ended also gets the terminal error that says so.
func (r *Runner) leave(ctx context.Context, lr *liveRun, how live.Followed, policy agentrunnerv1.OnDisconnect, yield func(Update, error) bool) {
	if how == live.FollowedToEnd {
		return
	}
	if policy != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE {
		if _, ok := r.cancelQueued(ctx, lr, runrec.ErrDisconnected); !ok {
			lr.Cancel(runrec.ErrDisconnected)
			<-lr.Done()
		}
	}
	if how == live.ContextEnded {
		yield(Update{}, fmt.Errorf("run %s: %w", lr.ID, ctx.Err()))
	}
}

// cancelQueued takes a run that has not started out of its session's
// queue and stores it cancelled with cause; ok is false when the run has
// started.
func (r *Runner) cancelQueued(ctx context.Context, lr *liveRun, cause error) (*agentrunnerv1.Run, bool) {
	r.runs.mu.Lock()
	started := lr.started
	if !started {
		lr.started = true // the queue will never start it now
		if sr := r.runs.sessions[lr.Key]; sr != nil {
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
	rec := runrec.Cancelled(lr.Record(), cause, r.now())
	if lr.job.Persisted {
		if err := r.store.PutRun(context.WithoutCancel(ctx), rec); err != nil && !errors.Is(err, store.ErrNotFound) {
			r.log.Error("store a cancelled pending run", "run", lr.ID, "err", err)
		}
	}
	lr.Cancel(cause)
	r.end(lr, rec, fmt.Errorf("run %s: %w", lr.ID, cause))
	return rec, true
}

// HasLiveRun reports whether the run is pending or running in this
// process.
func (r *Runner) HasLiveRun(runID string) bool { return r.lookup(runID) != nil }

// RunDone returns a channel closed when the run ends in this process; it
// is closed already when the run is not live here (ended, or never seen).
func (r *Runner) RunDone(runID string) <-chan struct{} {
	if lr := r.lookup(runID); lr != nil {
		return lr.Done()
	}
	done := make(chan struct{})
	close(done)
	return done
}
