package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
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
		r.leave(ctx, lr, r.follow(ctx, lr, 0, true, yield), req.OnDisconnect, yield)
	}
}

// admitResume makes a resumed run the active run of its session and
// prepares it.
func (r *Runner) admitResume(ctx context.Context, req ResumeRequest) (*liveRun, *prepared, error) {
	if err := r.available(); err != nil {
		return nil, nil, err
	}
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
	if req.Answers != nil {
		if err := validateMessage(req.Answers); err != nil {
			return nil, nil, fmt.Errorf("answers: %w", err)
		}
	}
	key := store.RunKey(rec)
	orig := proto.CloneOf(rec)
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
	rec.EndTime, rec.Error, rec.PendingCallIds = nil, nil, nil
	lr := newLiveRun(key, rec, Request{UserID: key.User, SessionID: key.Session, OnDisconnect: req.OnDisconnect, Timeout: req.Timeout})
	lr.resume = &req
	lr.resumedFrom = orig.GetStatus()
	lr.baseSeq = rec.GetLastSequence()
	lr.persisted = true
	lr.ctx, lr.cancel = context.WithCancelCause(context.WithoutCancel(ctx))
	if req.OnDisconnect != agentrunnerv1.OnDisconnect_ON_DISCONNECT_CONTINUE {
		lr.readerCtx = ctx
	}
	lr.markQueued(nil)
	r.runs.mu.Lock()
	sr := r.runs.sessions[key]
	switch {
	case r.runs.draining:
		err = fmt.Errorf("resume run %s: %w", req.RunID, ErrShuttingDown)
	case sr.busy():
		err = fmt.Errorf("session %s: run %s: %w", key, sr.blocker().id, ErrRunInProgress)
	default:
		r.runs.sessions[key] = &sessionRuns{active: lr}
		r.runs.byID[lr.id] = lr
		lr.started = true
	}
	r.runs.mu.Unlock()
	if err != nil {
		return nil, nil, err
	}
	p, err := r.prepare(ctx, lr)
	if err != nil {
		lr.finish(orig, err)
		r.release(lr)
		return nil, nil, err
	}
	return lr, p, nil
}

// prepareResume checks a resume request against the session and decides
// where the run goes on.
func (r *Runner) prepareResume(ctx context.Context, lr *liveRun, sess *agentrunnerv1.Session, events []*agentrunnerv1.Event) (*prepared, error) {
	rq := lr.resume
	// A run that waits on its caller is answered only while nothing came
	// after it: else the answers would land after another run's events,
	// whose message already changed what the run was asked. An interrupted
	// run may go on after a queued run that ran meanwhile.
	if last := sess.GetLastSequence(); last > lr.baseSeq && lr.resumedFrom == agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		return nil, fmt.Errorf("run %s ended at event %d and the session has moved on to %d: %w", lr.id, lr.baseSeq, last, ErrNotResumable)
	}
	inDoubt, err := r.inDoubtCalls(ctx, lr)
	if err != nil {
		return nil, err
	}
	waiting := waitingCalls(events, lr.rec)
	var answered []string
	for _, part := range rq.Answers.GetParts() {
		id := part.GetFunctionResponse().GetId()
		if id == "" || !slices.Contains(waiting, id) {
			return nil, fmt.Errorf("answers: %q is not a call run %s waits on (it waits on %q): %w", id, lr.id, waiting, store.ErrInvalidArgument)
		}
		answered = append(answered, id)
	}
	for _, id := range rq.RetryCallIDs {
		if !inDoubt[id] || slices.Contains(answered, id) {
			return nil, fmt.Errorf("retry_call_ids: %q is not a call of run %s left in doubt, or it is answered too: %w", id, lr.id, store.ErrInvalidArgument)
		}
	}
	var unresolved []string
	for _, id := range waiting {
		if !slices.Contains(answered, id) && !slices.Contains(rq.RetryCallIDs, id) {
			unresolved = append(unresolved, id)
		}
	}
	if len(unresolved) > 0 && len(answered)+len(rq.RetryCallIDs) > 0 {
		return nil, fmt.Errorf("answer or retry every call run %s waits on; left: %q: %w", lr.id, unresolved, store.ErrInvalidArgument)
	}
	p := &prepared{sess: sess, waits: len(unresolved) > 0}
	switch {
	case len(answered) > 0:
		p.first = r.tree.SelectAgent(events, rq.Answers)
	case len(rq.RetryCallIDs) > 0:
		p.first = r.callerOf(events, rq.RetryCallIDs[0])
	default:
		p.first, p.then, p.answered = r.resumeAgent(events, lr.id)
	}
	p.inv = r.newInvocation(lr.key, lr.id, sess, events, lr.rec.GetInput().GetRunConfig(), rq.RetryCallIDs)
	p.inv.SetUserContent(userMessageOf(events, lr.rec.GetFirstSequence()))
	return p, nil
}

// inDoubtCalls returns the run's calls that the ledger shows started and
// never finished, other than those that wait for the caller.
func (r *Runner) inDoubtCalls(ctx context.Context, lr *liveRun) (map[string]bool, error) {
	calls, err := r.store.ListToolCalls(ctx, lr.key)
	if err != nil {
		return nil, fmt.Errorf("read the tool-call ledger: %w", err)
	}
	open := map[string]bool{}
	for _, c := range calls {
		if c.GetInvocationId() == lr.id && c.GetResponseSequence() == 0 && !c.GetWaitsForCaller() {
			open[c.GetCallId()] = true
		}
	}
	return open, nil
}

// callerOf returns the agent that made a call, or the root.
func (r *Runner) callerOf(events []*agentrunnerv1.Event, callID string) agent.Agent {
	for _, ev := range events {
		for _, p := range ev.GetContent().GetParts() {
			if p.GetFunctionCall().GetId() == callID {
				if a, ok := r.tree.Find(ev.GetAuthor()); ok {
					return a
				}
			}
		}
	}
	return r.tree.Root()
}

// resumeAgent returns where a resumed run goes on: the agent to run first
// and the agents to run after it, or that the run's agents had finished
// (treeFinished): then there is nothing left to do. An agent whose last
// event is a finished answer inside sequential agents is done: the run
// goes on with the agents after it. Any other end (a call, a result, a
// custom agent's progress, a loop or parallel agent still going) means
// the agent that stored the run's last event was cut off and runs again.
func (r *Runner) resumeAgent(events []*agentrunnerv1.Event, runID string) (agent.Agent, []agent.Agent, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.GetInvocationId() != runID || ev.GetAuthor() == agent.UserAuthor || len(ev.GetContent().GetParts()) == 0 {
			continue
		}
		a, ok := r.tree.Find(ev.GetAuthor())
		if !ok {
			continue
		}
		run := runEvents(events, runID)
		if r.treeFinished(run) {
			return a, nil, true
		}
		if finalAnswer(ev) && ev.GetTurnComplete() && ev.GetErrorCode() == "" && !ev.GetInterrupted() {
			if rest, ok := r.after(a, run); ok && len(rest) > 0 {
				return rest[0], rest[1:], false
			}
		}
		return a, nil, false
	}
	return r.tree.SelectAgent(events, nil), nil, false
}

// after returns the agents a run still had to run once agent a had
// finished: the later sub-agents of each sequential agent above a, up to
// the agent the runner itself ran. ok is false when an agent above a is
// of another kind, whose next step the events do not tell.
func (r *Runner) after(a agent.Agent, run []*agentrunnerv1.Event) (rest []agent.Agent, ok bool) {
	for {
		p := r.tree.Parent(a)
		if p == nil || transferredTo(run, a.Name()) {
			return rest, true
		}
		if r.tree.Kind(p) != agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL {
			return nil, false
		}
		subs := p.SubAgents()
		for i, s := range subs {
			if s.Name() == a.Name() {
				rest = append(rest, subs[i+1:]...)
			}
		}
		a = p
	}
}

// runEvents returns the events of the run, in order.
func runEvents(events []*agentrunnerv1.Event, runID string) []*agentrunnerv1.Event {
	var out []*agentrunnerv1.Event
	for _, ev := range events {
		if ev.GetInvocationId() == runID {
			out = append(out, ev)
		}
	}
	return out
}

// userMessageOf returns the content of the event with sequence seq, when
// the loaded events hold it.
func userMessageOf(events []*agentrunnerv1.Event, seq uint64) *agentrunnerv1.Content {
	for _, ev := range events {
		if ev.GetSequence() == seq {
			return ev.GetContent()
		}
	}
	return nil
}

// resume is a resumed run's execution: store the answers, then let the
// agent go on.
func (in *invocation) resume(ctx context.Context) error {
	rq := in.lr.resume
	if in.prep.waits || in.prep.answered {
		return nil // the record says what the run waits on, or that it is done
	}
	if rq.Answers != nil {
		ev, err := in.userEvent(ctx, rq.Answers, nil)
		if err != nil {
			return err
		}
		stored, err := in.append(ctx, ev)
		if err != nil {
			return fmt.Errorf("append answers: %w", err)
		}
		in.inv.Record(nil, stored)
		in.inv.SetUserContent(stored.GetContent())
	}
	for _, first := range append([]agent.Agent{in.first}, in.prep.then...) {
		for a := first; a != nil; {
			var err error
			if a, err = in.runAgent(ctx, a); err != nil {
				return err
			}
		}
		if in.inv.Ended() {
			break // an agent escalated or ended the invocation
		}
	}
	return nil
}

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
		switch rec.GetStatus() {
		case agentrunnerv1.RunStatus_RUN_STATUS_RUNNING:
			done, err := r.interruptOrphan(ctx, rec)
			if err != nil {
				return interrupted, requeued, err
			}
			if done {
				interrupted++
			}
		case agentrunnerv1.RunStatus_RUN_STATUS_PENDING:
			orphan, err := r.pendingOrphan(ctx, rec)
			if err != nil {
				return interrupted, requeued, err
			}
			switch {
			case orphan && r.xr.queue != nil:
				err = r.requeueShared(ctx, rec)
			case orphan && r.requeue(rec):
				requeued++
			}
			if err != nil {
				return interrupted, requeued, err
			}
		}
	}
	if r.xr.queue != nil {
		// Sessions whose queue nobody took (the replica that would have
		// handed the session on died or is shutting down).
		n, err := r.sweepQueues(ctx)
		return interrupted, requeued + n, err
	}
	return interrupted, requeued, nil
}

// requeueShared puts a pending run that no replica runs back in the
// store's queue (unless it is there): a replica that took it from the
// queue died before it started it.
func (r *Runner) requeueShared(ctx context.Context, rec *agentrunnerv1.Run) error {
	err := r.xr.queue.EnqueueRun(ctx, rec, false)
	switch {
	case err == nil, errors.Is(err, store.ErrAlreadyExists), errors.Is(err, store.ErrNotFound):
		// Queued; or it started (or its session went) meanwhile.
		return nil
	}
	return fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
}

// interruptOrphan marks a RUNNING run INTERRUPTED when no replica runs
// it, and reports whether it did.
func (r *Runner) interruptOrphan(ctx context.Context, rec *agentrunnerv1.Run) (bool, error) {
	if r.leaser == nil {
		return true, r.markInterrupted(ctx, rec)
	}
	l, ok, err := r.claimOrphan(ctx, store.RunKey(rec))
	if err != nil || !ok {
		return false, err
	}
	defer r.releaseClaim(ctx, l)
	// The run may have ended between the listing and the lease.
	cur, err := r.store.GetRun(ctx, rec.GetRunId())
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
	case cur.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING:
		return false, nil
	}
	return true, r.markInterrupted(store.WithLease(ctx, l), cur)
}

// pendingOrphan reports whether a PENDING run is to be queued here: on a
// shared store, only when its session's lease is free. A live replica
// holds the lease of a session while it has a run queued behind the
// active one, except for the moment between one run and the next (the
// limit the README states: queues are per replica).
func (r *Runner) pendingOrphan(ctx context.Context, rec *agentrunnerv1.Run) (bool, error) {
	if r.leaser == nil {
		return true, nil
	}
	l, ok, err := r.claimOrphan(ctx, store.RunKey(rec))
	if err != nil || !ok {
		return false, err
	}
	r.releaseClaim(ctx, l)
	return true, nil
}

// markInterrupted stores the end of a run a crash cut off: INTERRUPTED,
// with an event saying so, unless its stored events show that its agents
// had finished (treeFinished) and only its final record was lost; that
// run ends as it would have (recoveredEnd).
func (r *Runner) markInterrupted(ctx context.Context, rec *agentrunnerv1.Run) error {
	key := store.RunKey(rec)
	author := r.tree.Root().Name()
	rec.Usage, rec.UsageByAgent = nil, nil // counted again from what is stored
	var events []*agentrunnerv1.Event
	err := r.scanRun(ctx, rec, func(ev *agentrunnerv1.Event) {
		if ev.GetAuthor() != agent.UserAuthor {
			author = ev.GetAuthor()
		}
		addEventUsage(rec, ev)
		events = append(events, ev)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil // the session is gone, and its runs with it
	}
	if err != nil {
		return fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
	}
	if r.treeFinished(events) {
		if err := r.store.PutRun(ctx, recoveredEnd(rec, events)); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
		}
		return nil
	}
	msg := "the server stopped while the run was running; ResumeRun continues it"
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED
	rec.Error = &agentrunnerv1.Status{Code: codeUnavailable, Message: msg}
	now := r.now()
	ev := &agentrunnerv1.Event{Id: r.newID(), InvocationId: rec.GetRunId(), Author: author, ErrorCode: "INTERRUPTED", ErrorMessage: msg}
	ev.Timestamp, rec.EndTime = timestampOf(now), timestampOf(now)
	if _, _, err := r.store.AppendRunEvent(ctx, key, ev, rec); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
	}
	return nil
}

// recoveredEnd is the final record of a run whose agents had finished
// when a crash took its record: the status finalize would have given it,
// ending at its last stored event.
func recoveredEnd(rec *agentrunnerv1.Run, events []*agentrunnerv1.Event) *agentrunnerv1.Run {
	last := events[len(events)-1]
	rec.LastSequence = last.GetSequence()
	rec.EndTime = last.GetTimestamp()
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	if f := eventFailure(lastAgentEvent(events)); f != nil {
		rec.Status, rec.Error = agentrunnerv1.RunStatus_RUN_STATUS_FAILED, f
	} else if ids := waitingCalls(events, rec); len(ids) > 0 {
		rec.Status, rec.PendingCallIds = agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED, ids
	}
	return rec
}

// scanRun calls fn with each stored event of the run, in order.
func (r *Runner) scanRun(ctx context.Context, rec *agentrunnerv1.Run, fn func(*agentrunnerv1.Event)) error {
	after := rec.GetFirstSequence()
	if after > 0 {
		after--
	}
	for {
		evs, next, err := r.store.ListEvents(ctx, store.RunKey(rec), store.EventFilter{AfterSequence: after}, store.Page{Size: replayPage})
		if err != nil {
			return err
		}
		for _, ev := range evs {
			if ev.GetInvocationId() == rec.GetRunId() {
				fn(ev)
			}
			after = ev.GetSequence()
		}
		if next == "" {
			return nil
		}
	}
}

// requeue queues a pending run found at start (or by a sweep), and
// reports whether it did.
func (r *Runner) requeue(rec *agentrunnerv1.Run) bool {
	lr := r.liveFromRecord(rec)
	lr.adopted = r.leaser != nil
	key := lr.key
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
	r.runs.byID[lr.id] = lr
	// It was admitted before the restart: counted, never refused.
	bindClaim(r.xr.gate.reserve(), lr.done)
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
	lr := newLiveRun(store.RunKey(rec), rec, req)
	lr.persisted = true
	lr.ctx, lr.cancel = context.WithCancelCause(context.Background())
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
	// Queued runs in a shared store stay there, for the other replicas.
	r.stopSweeper()
	r.runs.mu.Lock()
	var queued []*liveRun
	for _, sr := range r.runs.sessions {
		queued = append(queued, sr.queue...)
		sr.queue = nil
	}
	r.runs.mu.Unlock()
	for _, lr := range queued {
		lr.finish(lr.record(), fmt.Errorf("run %s stays pending: %w", lr.id, ErrShuttingDown))
		r.release(lr)
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
		lr.cancel(fmt.Errorf("interrupted: %w", ErrShuttingDown))
	}
	r.runs.mu.Unlock()
	<-done
	return fmt.Errorf("shutdown: runs interrupted: %w", ctx.Err())
}
