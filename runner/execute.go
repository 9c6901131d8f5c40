package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// google.rpc.Code values for run records' errors (the runner does not
// import gRPC).
const (
	codeCanceled          = 1
	codeInvalidArgument   = 3
	codeDeadlineExceeded  = 4
	codeNotFound          = 5
	codeResourceExhausted = 8
	codeInternal          = 13
	codeUnavailable       = 14
)

// prepared is a run ready to execute: its session loaded, the request
// checked against it, the agent picked.
type prepared struct {
	sess  *agentrunnerv1.Session
	first agent.Agent
	inv   *agent.Invocation
	// For a resumed run: it waits on calls nobody answered (it ends
	// INPUT_REQUIRED at once), or it had answered its user already.
	waits, answered bool
	// then holds the agents a resumed run runs after first, in order:
	// the rest of the sequential agents whose earlier sub-agents had
	// finished before the run was cut off.
	then []agent.Agent
	// waiting is the session's run that waits on the caller, which this
	// run's message answers or supersedes (see waiting.go).
	waiting *waitingRun
}

// prepare loads the session of a run that is about to start and checks
// the request against it.
func (r *Runner) prepare(ctx context.Context, lr *liveRun) (*prepared, error) {
	// The lease first: the history read next must be the last writer's.
	// A run taken from the store's queue holds it already.
	lr.mu.Lock()
	held := lr.lease != nil
	lr.mu.Unlock()
	if !held {
		if err := r.acquireLease(ctx, lr); err != nil {
			return nil, err
		}
	}
	if err := r.stillOurs(ctx, lr); err != nil {
		return nil, err
	}
	sess, events, err := r.history.Load(ctx, r.store, lr.key)
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	if lr.resume != nil {
		return r.prepareResume(ctx, lr, sess, events)
	}
	if err := checkResponses(events, lr.req.NewMessage); err != nil {
		return nil, err
	}
	waiting, err := r.findWaiting(ctx, events, lr.req.NewMessage)
	if err != nil {
		return nil, err
	}
	first := r.tree.SelectAgent(events, lr.req.NewMessage)
	inv := r.newInvocation(lr.key, lr.id, sess, events, lr.req.Config, nil)
	return &prepared{sess: sess, first: first, inv: inv, waiting: waiting}, nil
}

// execute runs an admitted run to its end, in its own goroutine, and lets
// the session's next run start.
func (r *Runner) execute(lr *liveRun, p *prepared) {
	<-lr.queued
	if lr.queueErr != nil {
		lr.finish(lr.record(), lr.queueErr)
		r.release(lr)
		return
	}
	ctx := lr.ctx
	if lr.req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, lr.req.Timeout)
		defer cancel()
	}
	if p == nil {
		// A queued run starts now.
		lr.update(startRecord(r.now()))
		var err error
		if p, err = r.prepare(ctx, lr); err != nil {
			rec := r.failRecord(lr.record(), err)
			if !r.runElsewhere(ctx, lr, err) {
				r.storeFinal(lr, rec)
			}
			r.release(lr)
			lr.finish(rec, err)
			return
		}
	}
	if lr.resume == nil { // a resumed run waited for no queue since its start
		ctx = agent.WithRunTimes(ctx, lr.times())
	}
	ctx = lr.withLease(ctx)
	in := &invocation{r: r, lr: lr, prep: p, key: lr.key, inv: p.inv, hctx: p.inv.Context(ctx, p.first), first: p.first, current: p.first, yield: lr.yieldFunc()}
	err := in.runGuarded(ctx)
	r.plugins.AfterRun(in.hctx, err)
	rec, err := r.finalize(ctx, in, err)
	// However the run ended, what it stored is the next run's starting
	// point (see history); the session is free before the readers hear
	// the run ended, so that a caller can send the next message at once.
	r.history.Put(lr.key, p.sess, p.inv.Events())
	r.release(lr)
	lr.finish(rec, err)
	r.roomFreed()
}

// yieldFunc is what the invocation hands its events and in-band errors
// to: the run's log. The run never waits for its readers.
func (lr *liveRun) yieldFunc() func(*agentrunnerv1.Event, error) bool {
	return func(ev *agentrunnerv1.Event, err error) bool {
		if err != nil {
			lr.publish(Update{Err: err})
		} else {
			lr.publish(Update{Event: ev})
		}
		return true
	}
}

// runGuarded runs the invocation; a panic in the runner's own code ends
// the run with an error instead of the process.
func (in *invocation) runGuarded(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &agent.PanicError{Where: "runner", Value: v}
			in.r.log.Error("panic recovered", "where", "runner", "run", in.lr.id, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	if in.lr.resume != nil {
		err = in.resume(ctx)
	} else {
		err = in.run(ctx, in.lr.req)
	}
	if err == nil {
		// The run's last step: a summarizer that panics is caught here
		// like any agent.
		err = in.compact(ctx)
	}
	return err
}

// finalize decides how the run ended, stores the final record (with the
// event that says so, for a stopped run), and returns the record and the
// run's terminal error. The record is on disk before it returns: readers
// hear of the end only from finish, after this, so that no client is told
// a status a crash could take back.
func (r *Runner) finalize(ctx context.Context, in *invocation, err error) (*agentrunnerv1.Run, error) {
	lr := in.lr
	switch {
	case err == nil:
		rec := r.endRecord(in)
		r.storeFinal(lr, rec)
		return rec, nil
	case fenced(err) || fenced(context.Cause(ctx)):
		// Nothing more is stored: the session is another writer's.
		return r.fencedRecord(lr.record()), fmt.Errorf("run %s: %w", lr.id, errLeaseLost)
	case ctx.Err() != nil:
		return in.stopped(ctx)
	default:
		rec := r.failRecord(lr.record(), err)
		if in.recordWritten || lr.persisted {
			r.storeFinal(lr, rec)
		}
		return rec, err
	}
}

// endRecord is the final record of a run whose agents returned: FAILED
// when the last thing an agent did was fail (see invocation.failure),
// INPUT_REQUIRED when calls of the run still wait for the caller, else
// SUCCEEDED.
func (r *Runner) endRecord(in *invocation) *agentrunnerv1.Run {
	rec := in.lr.record()
	rec.EndTime = timestamppb.New(r.now())
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	switch ids := waitingCalls(in.inv.Events(), rec); {
	case in.failure != nil:
		rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_FAILED
		rec.Error = in.failure
	case len(ids) > 0:
		rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED
		rec.PendingCallIds = ids
	}
	return rec
}

// storeFinal writes a run's final record and waits until it is on disk.
// It goes through the store's group commit, so that under load it shares
// an fsync with other sessions' writes. A record the store cannot take is
// logged and marks the run's end unrecorded: its readers then get the
// terminal error without a final record they could not find again.
func (r *Runner) storeFinal(lr *liveRun, rec *agentrunnerv1.Run) {
	// The run's context may be done (a cancelled or timed-out run): the
	// store must still take its end.
	err := r.store.PutRun(context.WithoutCancel(lr.ctx), rec)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return // stored, or the session was deleted with its runs
	}
	r.log.Error("store the end of a run", "run", lr.id, "status", rec.GetStatus(), "err", err)
	lr.mu.Lock()
	lr.unrecorded = fmt.Errorf("run %s ended %s, but its record could not be stored: %w", lr.id, rec.GetStatus(), err)
	lr.mu.Unlock()
}

// stopped ends a run whose context was cancelled or timed out: it stores
// an event saying so, in the name of the agent that was running, with the
// final record in the same transaction.
func (in *invocation) stopped(ctx context.Context) (*agentrunnerv1.Run, error) {
	r, lr := in.r, in.lr
	cause := context.Cause(ctx)
	rec := lr.record()
	rec.EndTime = timestamppb.New(r.now())
	var codeName string
	rec.Status, rec.Error, codeName = stopStatus(cause)
	termErr := fmt.Errorf("run %s: %w", lr.id, cause)
	if !in.recordWritten && rec.GetFirstSequence() == 0 {
		if lr.persisted {
			r.storeFinal(lr, rec)
		}
		return rec, termErr
	}
	ev := &agentrunnerv1.Event{Author: in.current.Name(), ErrorCode: codeName, ErrorMessage: rec.GetError().GetMessage()}
	if len(in.streamed) > 0 {
		// The caller saw part of an answer: it is kept, marked cut off,
		// as a model connection that drops mid-answer keeps it, and
		// ResumeRun goes on from it.
		ev.Content, ev.Interrupted = joinStreamed(in.streamed), true
	}
	in.complete(ev, nil)
	// The run's context is done; the store must still take this event.
	stored, storedRec, err := r.store.AppendRunEvent(context.WithoutCancel(ctx), in.key, ev, rec)
	if fenced(err) {
		return r.fencedRecord(lr.record()), fmt.Errorf("run %s: %w", lr.id, errLeaseLost)
	}
	if err != nil {
		r.log.Error("store the end of a stopped run", "run", lr.id, "err", err)
		r.storeFinal(lr, rec)
		return rec, termErr
	}
	in.inv.Record(nil, stored)
	lr.noteStored(stored)
	lr.publish(Update{Event: stored})
	return storedRec, termErr
}

// joinStreamed is the content streamed parts carried: consecutive text
// of the same kind (answer or thought) joined into one part, as the
// complete answer would have held it. The parts are not changed.
func joinStreamed(parts []*agentrunnerv1.Part) *agentrunnerv1.Content {
	c := &agentrunnerv1.Content{Role: agent.RoleModel}
	var last *agentrunnerv1.Part
	for _, p := range parts {
		t, ok := p.GetData().(*agentrunnerv1.Part_Text)
		if ok && last != nil && last.GetThought() == p.GetThought() {
			if lt, ok := last.GetData().(*agentrunnerv1.Part_Text); ok {
				lt.Text += t.Text
				continue
			}
		}
		cp := proto.CloneOf(p)
		c.Parts = append(c.Parts, cp)
		last = cp
	}
	return c
}

// stopStatus is how a run stopped by cause ends.
func stopStatus(cause error) (agentrunnerv1.RunStatus, *agentrunnerv1.Status, string) {
	switch {
	case errors.Is(cause, ErrShuttingDown):
		return agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED, &agentrunnerv1.Status{Code: codeUnavailable, Message: cause.Error()}, "INTERRUPTED"
	case errors.Is(cause, context.DeadlineExceeded):
		return agentrunnerv1.RunStatus_RUN_STATUS_FAILED, &agentrunnerv1.Status{Code: codeDeadlineExceeded, Message: "the run's deadline passed"}, "DEADLINE_EXCEEDED"
	}
	return agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED, &agentrunnerv1.Status{Code: codeCanceled, Message: cause.Error()}, "CANCELLED"
}

// failRecord ends a record FAILED with err. Errors the runner does not
// know are not described in the record (they may name files or drivers);
// they are logged.
func (r *Runner) failRecord(rec *agentrunnerv1.Run, err error) *agentrunnerv1.Run {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_FAILED
	rec.EndTime = timestamppb.New(r.now())
	code, msg := int32(codeInternal), "internal error"
	switch {
	case errors.Is(err, agent.ErrMaxLLMCalls):
		code, msg = codeResourceExhausted, err.Error()
	case errors.Is(err, store.ErrInvalidArgument):
		code, msg = codeInvalidArgument, err.Error()
	case errors.Is(err, store.ErrNotFound):
		code, msg = codeNotFound, err.Error()
	case errors.Is(err, ErrRunInProgress), errors.Is(err, errTaken):
		// A queued run whose session another replica took meanwhile.
		code, msg = codeAborted, err.Error()
	default:
		r.log.Error("run failed", "run", rec.GetRunId(), "err", err)
	}
	rec.Error = &agentrunnerv1.Status{Code: code, Message: msg}
	return rec
}

// waitingCalls returns the calls the run made that still wait for the
// caller, sorted. Only the events from the run's first on can hold them:
// the scan costs the run's length, not the session's.
func waitingCalls(events []*agentrunnerv1.Event, rec *agentrunnerv1.Run) []string {
	from, _ := slices.BinarySearchFunc(events, rec.GetFirstSequence(), func(ev *agentrunnerv1.Event, seq uint64) int {
		return cmp.Compare(ev.GetSequence(), seq)
	})
	var ids []string
	for call, inv := range pendingCalls(events[from:]) {
		if inv == rec.GetRunId() {
			ids = append(ids, call)
		}
	}
	slices.Sort(ids)
	return ids
}

func timestampOf(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
