package runner

import (
	"context"
	"fmt"
	"iter"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
	"github.com/agentrunner/agentrunner/store"
)

// ResumeRequest continues a run that a crash or a shutdown cut off
// (RUN_STATUS_INTERRUPTED), or one that waits on its caller
// (RUN_STATUS_INPUT_REQUIRED).
type ResumeRequest struct {
	// RunID names the run.
	RunID string
	// Answers holds function_response parts answering calls the run waits
	// on: client-executed calls, or calls a crash left in doubt.
	Answers *agentrunnerv1.Content
	// RetryCallIDs are calls left in doubt that are to run again.
	RetryCallIDs []string
	// OnDisconnect and Timeout are as in Request.
	OnDisconnect agentrunnerv1.OnDisconnect
	Timeout      time.Duration
}

// Resume continues a run from its last stored event and streams it as
// Stream does. Calls with a stored response are not run again. Calls that
// started and never finished (the ledger shows them open) are never run
// again silently: unless the request answers them or asks to retry them,
// the run ends RUN_STATUS_INPUT_REQUIRED naming them. A run that answered
// its user before it was cut off ends RUN_STATUS_SUCCEEDED at once. The
// resumed run starts with the agent that stored the run's last event and
// with the default run configuration.
func (r *Runner) Resume(ctx context.Context, req ResumeRequest) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		lr, p, err := r.admitResume(ctx, req)
		if err != nil {
			yield(Update{}, err)
			return
		}
		r.launch(lr, p)
		r.leave(ctx, lr, r.reader(true, 0).Follow(ctx, lr.Run, liveYield(yield)), req.OnDisconnect, yield)
	}
}

// admitResume makes a resumed run the active run of its session and
// prepares it.
func (r *Runner) admitResume(ctx context.Context, req ResumeRequest) (*liveRun, *turn.Prepared, error) {
	if r.lookup(req.RunID) != nil {
		return nil, nil, fmt.Errorf("run %s is pending or running: %w", req.RunID, ErrNotResumable)
	}
	rec, err := r.GetRun(ctx, req.RunID)
	if err != nil {
		return nil, nil, err
	}
	switch rec.GetStatus() {
	case agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED:
	default:
		return nil, nil, fmt.Errorf("run %s is %s; only an interrupted run or one waiting on input continues: %w", req.RunID, rec.GetStatus(), ErrNotResumable)
	}
	// The config the run started with, while this runner has it: a
	// reload since changes new runs only.
	if err := r.available(r.configOf(rec.GetConfigVersion())); err != nil {
		return nil, nil, err
	}
	if req.Answers != nil {
		if err := turn.ValidateMessage(req.Answers); err != nil {
			return nil, nil, fmt.Errorf("answers: %w", err)
		}
	}
	lr, orig := r.resumedRun(ctx, rec, req)
	if err := r.claimSession(lr, "resume run", true); err != nil {
		return nil, nil, err
	}
	p, err := r.prepare(ctx, lr)
	if err != nil {
		r.end(lr, orig, err)
		return nil, nil, err
	}
	return lr, p, nil
}

// resumedRun makes the live run that continues the stored run rec, and
// returns it with a copy of rec as it was.
func (r *Runner) resumedRun(ctx context.Context, rec *agentrunnerv1.Run, req ResumeRequest) (*liveRun, *agentrunnerv1.Run) {
	key := store.RunKey(rec)
	orig := rec.CloneVT()
	runrec.Restart(rec)
	var readerCtx context.Context
	if req.OnDisconnect != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE {
		readerCtx = ctx
	}
	lr := newLiveRun(ctx, r.configOf(rec.GetConfigVersion()), key, rec, Request{UserID: key.User, SessionID: key.Session, OnDisconnect: req.OnDisconnect, Timeout: req.Timeout}, readerCtx)
	lr.job.Persisted = true
	lr.job.Resume = &turn.Resume{
		Answers: req.Answers, RetryCallIDs: req.RetryCallIDs, From: orig.GetStatus(),
		FirstSeq: rec.GetFirstSequence(), LastSeq: rec.GetLastSequence(), Config: rec.GetInput().GetRunConfig(),
		Stored: orig,
	}
	lr.markQueued(nil)
	return lr, orig
}

// claimSession makes lr the active run of its free session in this
// process, or says why it cannot be: the runner is draining, or the
// session has a run. A run that is not listed (listed false) holds the
// session without being a run anyone can look up or attach to.
func (r *Runner) claimSession(lr *liveRun, what string, listed bool) error {
	r.runs.mu.Lock()
	defer r.runs.mu.Unlock()
	sr := r.runs.sessions[lr.Key]
	switch {
	case r.runs.draining:
		return fmt.Errorf("%s %s: %w", what, lr.ID, ErrShuttingDown)
	case sr.busy():
		return fmt.Errorf("session %s: run %s: %w", lr.Key, sr.blocker().ID, ErrRunInProgress)
	}
	r.runs.sessions[lr.Key] = &sessionRuns{active: lr}
	if listed {
		r.runs.byID[lr.ID] = lr
	}
	lr.started = true
	return nil
}
