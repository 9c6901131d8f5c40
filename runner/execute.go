package runner

import (
	"context"
	"runtime/debug"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
)

// launch starts the execution of an admitted run in its own goroutine.
func (r *Runner) launch(lr *liveRun, p *turn.Prepared) {
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	r.launchLocked(lr, p)
}

func (r *Runner) launchLocked(lr *liveRun, p *turn.Prepared) {
	r.runs.wg.Add(1)
	go func() {
		defer r.runs.wg.Done()
		defer r.recoverRun(lr)
		r.execute(lr, p)
	}()
}

// execute runs an admitted run to its end (a queued one is prepared
// first) and ends it: the final record is stored by the turn, then the
// session is freed, then the readers hear of the end.
func (r *Runner) execute(lr *liveRun, p *turn.Prepared) {
	<-lr.queued
	if lr.queueErr != nil {
		r.end(lr, lr.Record(), lr.queueErr)
		return
	}
	ctx := lr.Context()
	if lr.req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lr.req.Timeout)
		defer cancel()
	}
	if p == nil {
		// A queued run starts now.
		lr.Update(func(rec *agentrunnerv1.Run) { runrec.Start(rec, r.now()) })
		var err error
		if p, err = r.prepare(ctx, lr); err != nil {
			rec := turn.Fail(ctx, lr.cfg.env, lr, lr.ID, err, !r.runElsewhere(ctx, lr, err))
			r.end(lr, rec, err)
			return
		}
	}
	if !lr.resumed() { // a resumed run waited for no queue since its start
		ctx = agent.WithRunTimes(ctx, lr.Times())
	}
	rec, err := turn.Execute(r.leased(ctx, lr.ID), lr.cfg.env, &lr.job, p, lr)
	r.end(lr, rec, err)
}

// end ends a run: it leaves the registry (the session's next run may
// start, and its lease is given up or handed on), then its readers hear
// of its end, with rec and err. The session is free before they hear of
// it, so that a caller can send the next message at once.
func (r *Runner) end(lr *liveRun, rec *agentrunnerv1.Run, err error) {
	r.release(lr, func() { r.releaseRun(lr) }, func() { lr.Finish(rec, err) })
}

// releaseRun removes an ended run from the registry and starts the next
// run of its session's queue in this process, if any.
func (r *Runner) releaseRun(lr *liveRun) {
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	delete(r.runs.byID, lr.ID)
	sr := r.runs.sessions[lr.Key]
	if sr == nil {
		return
	}
	if sr.active == lr {
		sr.active = nil
	}
	sr.unqueue(lr)
	if sr.active == nil && len(sr.queue) > 0 && !r.runs.draining {
		next := sr.queue[0]
		sr.queue = sr.queue[1:]
		sr.active = next
		next.started = true
		r.launchLocked(next, nil)
	}
	if !sr.busy() {
		delete(r.runs.sessions, lr.Key)
	}
}

// recoverRun keeps a panic in the runner's own code around a run (its
// record, the registry) from killing the process: a run no longer lives on
// its stream's goroutine, where the gRPC recovery caught it. The run ends
// FAILED for its readers and its session is freed. (Panics in agents,
// tools and plugins are caught nearer, by runGuarded and agent.Guard.)
func (r *Runner) recoverRun(lr *liveRun) {
	v := recover()
	if v == nil {
		return
	}
	err := &agent.PanicError{Where: "runner", Value: v}
	r.log.Error("panic recovered", "where", "runner", "run", lr.ID, "panic", v, "stack", string(debug.Stack()))
	rec := lr.Record()
	runrec.Fail(rec, err, r.now()) // logged above
	func() {
		// Best effort: the store may be what panicked. Left RUNNING, the
		// record is marked INTERRUPTED at the next start.
		defer func() { _ = recover() }()
		turn.StoreFinal(lr.Context(), lr.cfg.env, lr, rec)
	}()
	r.end(lr, rec, err)
}
