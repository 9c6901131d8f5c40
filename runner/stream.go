package runner

import (
	"context"
	"fmt"
	"iter"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/internal/turn"
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
		if a.now && a.fresh && a.queued == nil && a.ended == nil {
			r.runInline(ctx, a.live, a.prep, req.OnDisconnect, yield)
			return
		}
		r.follow(ctx, &req, &a, yield)
	}
}

// follow streams a run Stream admitted that does not start at once on
// the caller's goroutine. Out of Stream's closure, so that a run that
// does waits for its model below a small frame.
//
//go:noinline
func (r *Runner) follow(ctx context.Context, req *Request, a *admitted, yield func(Update, error) bool) {
	switch {
	case a.queued != nil:
		a.queue.StreamQueued(ctx, a.queued, req.OnDisconnect, liveYield(yield))
	case a.ended != nil:
		if r.replicas.Elsewhere.Follow(ctx, a.ended, 0, liveYield(yield)) == live.ContextEnded {
			yield(Update{}, fmt.Errorf("run %s: %w", a.ended.GetRunId(), ctx.Err()))
		}
	case !a.fresh:
		if r.reader(false, 0).Follow(ctx, a.live.Run, liveYield(yield)) == live.ContextEnded {
			yield(Update{}, fmt.Errorf("run %s: %w", a.live.ID, ctx.Err()))
		}
	case a.now:
		r.runInline(ctx, a.live, a.prep, req.OnDisconnect, yield)
	default:
		rd := r.reader(true, 0)
		rd.Shared = req.SharedEvents
		r.leave(ctx, a.live, rd.Follow(ctx, a.live.Run, liveYield(yield)), req.OnDisconnect, yield)
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
	d := live.NewDirect(ctx, lr.Run, lr.req.SharedEvents, leave, liveYield(yield))
	if r.replicas.Queue == nil {
		// No replica hands this run a reader mid-stream (FollowFrom),
		// which would want the partial events of the answer so far.
		lr.DropUnreadPartials()
	}
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

// Run runs one invocation: it appends req.NewMessage to the session, runs
// the agent the selection rules pick (and the agents it transfers to), and
// streams the events. It is Stream without the run records.
//
// Complete events are yielded after they are persisted, with their sequence
// set. Each yielded event is the caller's own copy: changing it changes
// nothing the runner keeps. Partial events are yielded without being
// stored, after the on_event hooks saw them (which may replace or drop
// them). The stored user event is yielded first only when
// req.Config.stream_user_event is set. An error that errors.As to
// *agent.AgentError is delivered in place of an event and the run goes on.
// Any other error is terminal and the last element: it wraps
// store.ErrNotFound for a missing session, store.ErrInvalidArgument for an
// invalid request, ErrRunInProgress when the session has a run in progress,
// agent.ErrMaxLLMCalls when the LLM call limit is reached, or
// context.Canceled or context.DeadlineExceeded when the run was cancelled
// or timed out.
//
// The plugins' hooks run as package plugin describes. Stopping the
// iteration early cancels the run (unless req.OnDisconnect says to go on)
// and returns once it has released the session. The sequence is
// single-use.
func (r *Runner) Run(ctx context.Context, req Request) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		for u, err := range r.Stream(ctx, req) {
			switch {
			case err != nil:
				yield(nil, err)
				return
			case u.Err != nil:
				if !yield(nil, u.Err) {
					return
				}
			case u.Event != nil:
				if !yield(u.Event, nil) {
					return
				}
			}
		}
	}
}
