package runner

import (
	"context"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
)

// prepare takes the session of a run that is about to start and plans
// its turn (turn.Prepare). The lease first: the history read next must be
// the last writer's; a run taken from the store's queue holds it already.
func (r *Runner) prepare(ctx context.Context, lr *liveRun) (*turn.Prepared, error) {
	if err := r.mode.Acquire(ctx, lr.Key, lr.ID); err != nil {
		return nil, err
	}
	if err := r.mode.StillOurs(ctx, lr.ID, lr.expect()); err != nil {
		return nil, err
	}
	return turn.Prepare(ctx, r.env, &lr.job)
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
			rec := turn.Fail(ctx, r.env, lr, lr.ID, err, !r.mode.RunElsewhere(ctx, lr.ID, lr.requeued, err))
			r.end(lr, rec, err)
			return
		}
	}
	if !lr.resumed() { // a resumed run waited for no queue since its start
		ctx = agent.WithRunTimes(ctx, lr.Times())
	}
	rec, err := turn.Execute(r.mode.With(ctx, lr.ID), r.env, &lr.job, p, lr)
	r.end(lr, rec, err)
	r.mode.RoomFreed()
}
