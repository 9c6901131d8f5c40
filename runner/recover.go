package runner

import (
	"context"
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Recover runs at start, before the server takes requests: the app's runs
// that a crash left RUN_STATUS_RUNNING are marked RUN_STATUS_INTERRUPTED
// with a stored event saying so (ResumeRun continues them), and its
// pending runs are queued again, in order. It returns how many of each.
//
// On a store that keeps the run queue (store.RunQueue), pending runs wait
// there: Recover puts back the ones a dead replica took and never started,
// and takes the next queued run of every free session of the app, which
// it counts as requeued.
//
// On a store that several replicas share (store.SessionLeaser), a run
// counts as left behind only when its session's lease has expired or was
// released: the runs of a live replica, which renews its leases, are left
// alone. A run is marked under the session's lease, so that the replica
// that ran it, should it come back, can store nothing more.
func (r *Runner) Recover(ctx context.Context) (interrupted, requeued int, err error) {
	recs, err := r.store.ListUnfinishedRuns(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("recover runs: %w", err)
	}
	for _, rec := range recs {
		if rec.GetAppName() != r.appName || r.lookup(rec.GetRunId()) != nil {
			continue
		}
		var done bool
		switch rec.GetStatus() {
		case agentrunnerv1.RunStatus_RUN_STATUS_RUNNING:
			if done, err = r.replicas.Recovery.RecoverRunning(ctx, rec); err == nil && done {
				interrupted++
			}
		case agentrunnerv1.RunStatus_RUN_STATUS_PENDING:
			if done, err = r.replicas.Recovery.RecoverPending(ctx, rec); err == nil && done && r.requeue(rec) {
				requeued++
			}
		}
		if err != nil {
			return interrupted, requeued, err
		}
	}
	q := r.replicas.Queue
	if q == nil {
		return interrupted, requeued, nil // runs wait nowhere but here
	}
	// Sessions whose queue in the store nobody took (the replica that
	// would have handed the session on died or is shutting down).
	n, err := q.Sweep(ctx)
	return interrupted, requeued + n, err
}

// requeue queues a pending run found at start (or by a sweep), and
// reports whether it did.
func (r *Runner) requeue(rec *agentrunnerv1.Run) bool {
	lr := r.liveFromRecord(rec)
	lr.requeued = true
	key := lr.Key
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	if r.runs.draining {
		return false // it stays pending for the next start (a sweep raced Shutdown)
	}
	sr := r.runs.sessions[key]
	if sr == nil {
		sr = &sessionRuns{}
		r.runs.sessions[key] = sr
	}
	r.runs.byID[lr.ID] = lr
	// It was admitted before the restart: counted, never refused.
	r.replicas.Claims.Reserve(lr.Done())
	if sr.busy() {
		sr.queue = append(sr.queue, lr)
		return true
	}
	sr.active = lr
	lr.started = true
	r.launchLocked(lr, nil)
	return true
}

// liveFromRecord makes the live run of a pending run found in the store:
// its request is rebuilt from the record's input, and nobody reads it here
// yet (it goes on when its reader leaves).
func (r *Runner) liveFromRecord(rec *agentrunnerv1.Run) *liveRun {
	in := rec.GetInput()
	req := Request{
		UserID: rec.GetUserId(), SessionID: rec.GetSessionId(),
		NewMessage: in.GetNewMessage(), StateDelta: in.GetStateDelta(), Config: in.GetRunConfig(),
		RequestID: rec.GetRequestId(), Strategy: rec.GetMultitaskStrategy(),
		OnDisconnect: agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE,
	}
	lr := newLiveRun(context.Background(), r.configOf(rec.GetConfigVersion()), store.RunKey(rec), rec, req, nil)
	lr.job.Persisted = true
	lr.markQueued(nil)
	return lr
}

// Shutdown stops admitting runs (new ones fail with ErrShuttingDown) and
// waits for the runs in progress to end. When ctx ends first, the runs
// still in progress are stopped: each stores an event saying so and ends
// RUN_STATUS_INTERRUPTED, and ResumeRun continues it after a restart.
// Queued runs stay pending in the store and run after the restart.
func (r *Runner) Shutdown(ctx context.Context) error {
	r.runs.mu.Lock()
	r.runs.draining = true
	r.runs.mu.Unlock()
	// Queued runs in a shared store stay there, for the other replicas;
	// the recovery loop queues nothing more here.
	r.replicas.Stop()
	r.runs.mu.Lock()
	var queued []*liveRun
	for _, sr := range r.runs.sessions {
		queued = append(queued, sr.queue...)
		sr.queue = nil
	}
	r.runs.mu.Unlock()
	for _, lr := range queued {
		r.end(lr, lr.Record(), fmt.Errorf("run %s stays pending: %w", lr.ID, ErrShuttingDown))
	}
	done := make(chan struct{})
	go func() { r.runs.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	r.runs.mu.Lock()
	for _, lr := range r.runs.byID {
		lr.Cancel(fmt.Errorf("interrupted: %w", ErrShuttingDown))
	}
	r.runs.mu.Unlock()
	<-done
	return fmt.Errorf("shutdown: runs interrupted: %w", ctx.Err())
}
