package runner

import (
	"context"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/replica"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
	"github.com/agentrunner/agentrunner/store"
)

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
	// requeued reports a pending run that Recover found and queued here:
	// on a shared store the replica that queued it may still start it
	// (replica.Mode.RunElsewhere).
	requeued bool
}

// newLiveRun makes the live run of record rec; readerCtx is the context
// of the reader whose leaving cancels it, or nil.
func newLiveRun(ctx context.Context, key store.SessionKey, rec *agentrunnerv1.Run, req Request, readerCtx context.Context) *liveRun {
	return &liveRun{
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
