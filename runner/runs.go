package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/replica"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
	"github.com/agentrunner/agentrunner/store"
)

// Start admits a run as Stream does and returns its record once the run
// is stored (its user message and record), not before: a caller given a
// run id may rely on it across a crash, and a run that calls back
// (Request.Webhook, Config.Webhook) is one whose end is always called
// back. The run goes on in the background and Attach follows it. A
// request_id that names an earlier run returns that run as it is now.
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
		// Nothing is acknowledged before it is durable: answered before
		// its record is stored, a run a crash then lost would be an id
		// that GetRun no longer knows and a webhook never called. (A
		// queued run's pending record is stored before it is answered.)
		a.live.WaitRecorded(ctx)
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
			how = r.reader(false, after).Follow(ctx, lr.Run, liveYield(yield))
		} else if rec, err := r.GetRun(ctx, runID); err != nil {
			yield(Update{}, err)
			return
		} else {
			// Ended, or (on a store shared by replicas) queued or running
			// on another replica: followed through the store.
			how = r.replicas.Elsewhere.Follow(ctx, rec, after, liveYield(yield))
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

// ListRunsOf pages through the runs of the runner's app that f selects
// (f.App is the runner's, whatever it says), newest first, with the live
// state of those running here: a user's across their sessions, every
// user's when f.User is empty, or one session's (see
// store.RunStore.ListRunsOf). A live run whose current status f does not
// keep is left out, so a page may be short; the token still goes on.
func (r *Runner) ListRunsOf(ctx context.Context, f store.RunFilter, page store.Page) ([]*agentrunnerv1.Run, string, error) {
	f.App = r.appName
	recs, next, err := r.store.ListRunsOf(ctx, f, page)
	if err != nil {
		return nil, "", err
	}
	out := recs[:0]
	for _, rec := range recs {
		if lr := r.lookup(rec.GetRunId()); lr != nil {
			rec = lr.Record()
		}
		if f.Keeps(rec.GetStatus()) {
			out = append(out, rec)
		}
	}
	return out, next, nil
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
		return r.replicas.Elsewhere.Cancel(ctx, rec)
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
		r.runs.sessions[lr.Key].unqueue(lr)
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

// cancelWaiting ends a run that waits on its caller, for CancelRun: it
// takes the session as a run would (in this process, then its lease),
// supersedes the run's calls (turn.CancelWaiting), and returns the stored
// record. A session busy with another run is ErrRunInProgress.
func (r *Runner) cancelWaiting(ctx context.Context, rec *agentrunnerv1.Run) (*agentrunnerv1.Run, error) {
	key := store.RunKey(rec)
	lr := newLiveRun(ctx, r.configOf(rec.GetConfigVersion()), key, rec, Request{UserID: key.User, SessionID: key.Session}, nil)
	lr.markQueued(nil)
	if err := r.claimSession(lr, "cancel run", false); err != nil {
		return nil, err
	}
	var out *agentrunnerv1.Run
	err := r.takeSession(ctx, key, lr.ID, replica.Expect{})
	if err == nil {
		out, err = turn.CancelWaiting(r.leased(ctx, lr.ID), lr.cfg.env, key, lr.ID)
	}
	r.end(lr, lr.Record(), err)
	return out, err
}
