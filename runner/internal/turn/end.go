package turn

import (
	"context"
	"errors"
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// finalize decides how the run ended, stores the final record (with the
// event that says so, for a stopped run), and returns the record and the
// run's terminal error.
func (in *invocation) finalize(ctx context.Context, err error) (*agentrunnerv1.Run, error) {
	// Budget holds kept for an answer held back go at the end whatever
	// became of it (stored with the record, or never: fenced).
	defer in.inv.ReleaseHeld()
	env, id := in.env, in.job.ID
	if err != nil {
		// The run did not end with an answer held back after all: the
		// answer is stored as it would have been, and the end goes as it
		// goes. A stopped run's context is done; the store must still
		// take it.
		switch rerr := in.j.release(context.WithoutCancel(ctx)); {
		case runrec.Fenced(rerr):
			return in.fenced()
		case rerr != nil:
			env.Log.Error("store the answer of a run that did not end with it", "run", id, "err", rerr)
		}
	}
	switch {
	case err == nil:
		rec := in.sink.Record()
		runrec.End(rec, env.Now(), in.failures.Err(), runrec.WaitingCalls(in.inv.Events(), rec))
		return in.end(ctx, rec)
	case runrec.Fenced(err) || runrec.Fenced(context.Cause(ctx)):
		// Nothing more is stored: the session is another writer's.
		return in.fenced()
	case ctx.Err() != nil:
		return in.stopped(ctx)
	}
	return Fail(ctx, env, in.sink, id, err, in.j.recorded() || in.job.Persisted), err
}

// end stores the final record of a run that ended without error: with
// the answer held back in one transaction, or alone.
func (in *invocation) end(ctx context.Context, rec *agentrunnerv1.Run) (*agentrunnerv1.Run, error) {
	storedRec, err := in.j.end(ctx, rec)
	switch {
	case runrec.Fenced(err):
		return in.fenced()
	case err != nil:
		return Fail(ctx, in.env, in.sink, in.job.ID, err, true), err
	case storedRec == nil:
		StoreFinal(ctx, in.env, in.sink, rec)
		return rec, nil
	}
	return storedRec, nil
}

// fenced is the end of a run whose session another writer took over.
func (in *invocation) fenced() (*agentrunnerv1.Run, error) {
	rec := in.sink.Record()
	runrec.FencedEnd(rec, in.env.Now())
	return rec, fmt.Errorf("run %s: %w", in.job.ID, runrec.ErrLeaseLost)
}

// Fail ends the run FAILED with err, storing the record when stored
// says its record is in the store (else a crash leaves nothing to end),
// and returns the record. An error the runner does not know is logged.
func Fail(ctx context.Context, env *Env, sink Sink, id string, err error, stored bool) *agentrunnerv1.Run {
	rec := sink.Record()
	if runrec.Fail(rec, err, env.Now()) {
		env.Log.Error("run failed", "run", id, "err", err)
	}
	if stored {
		StoreFinal(ctx, env, sink, rec)
	}
	return rec
}

// StoreFinal writes a run's final record and waits until it is on disk.
// It goes through the store's group commit, so that under load it shares
// an fsync with other sessions' writes. A record the store cannot take is
// logged and marks the run's end unrecorded: its readers then get the
// terminal error without a final record they could not find again.
func StoreFinal(ctx context.Context, env *Env, sink Sink, rec *agentrunnerv1.Run) {
	// The run's context may be done (a cancelled or timed-out run): the
	// store must still take its end.
	err := env.Store.PutRun(context.WithoutCancel(ctx), rec)
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return // stored, or the session was deleted with its runs
	}
	env.Log.Error("store the end of a run", "run", rec.GetRunId(), "status", rec.GetStatus(), "err", err)
	sink.Unrecorded(fmt.Errorf("run %s ended %s, but its record could not be stored: %w", rec.GetRunId(), rec.GetStatus(), err))
}

// stopped ends a run whose context was cancelled or timed out: it stores
// an event saying so in the name of each agent that was streaming, in its
// branch, with what it had streamed (or one in the name of the agent that
// spoke last), the last with the final record in the same transaction.
func (in *invocation) stopped(ctx context.Context) (*agentrunnerv1.Run, error) {
	env := in.env
	cause := context.Cause(ctx)
	rec := in.sink.Record()
	codeName := runrec.Stop(rec, cause, env.Now())
	termErr := fmt.Errorf("run %s: %w", in.job.ID, cause)
	if !in.j.recorded() && rec.GetFirstSequence() == 0 {
		if in.job.Persisted {
			StoreFinal(ctx, env, in.sink, rec)
		}
		return rec, termErr
	}
	// The run's context is done; the store must still take these events.
	storedRec, err := in.j.end(context.WithoutCancel(ctx), rec, in.stopEvents(codeName, rec.GetError().GetMessage())...)
	switch {
	case runrec.Fenced(err):
		return in.fenced()
	case err != nil:
		env.Log.Error("store the end of a stopped run", "run", in.job.ID, "err", err)
		StoreFinal(ctx, env, in.sink, rec)
		return rec, termErr
	}
	return storedRec, termErr
}

// stopEvents returns the events that say the run stopped: one per agent
// and branch that was streaming, with what it streamed, kept and marked
// cut off (interrupted), as a model connection that drops mid-answer
// keeps it, for ResumeRun and the agent's next turn to go on from; or,
// when nobody was, one in the name of the agent that spoke last.
func (in *invocation) stopEvents(codeName, msg string) []*agentrunnerv1.Event {
	var evs []*agentrunnerv1.Event
	for _, st := range in.streamed {
		if len(st.parts) == 0 {
			continue
		}
		ev := &agentrunnerv1.Event{Author: st.author, Branch: st.branch, ErrorCode: codeName, ErrorMessage: msg,
			Content: joinStreamed(st.parts), Interrupted: true}
		in.complete(ev, nil)
		evs = append(evs, ev)
	}
	evs = in.withCuts(evs, codeName, msg)
	if len(evs) == 0 {
		author, branch := in.speaker.author, in.speaker.branch
		if author == "" {
			author = in.current.Name()
		}
		ev := &agentrunnerv1.Event{Author: author, Branch: branch, ErrorCode: codeName, ErrorMessage: msg}
		in.complete(ev, nil)
		evs = append(evs, ev)
	}
	return evs
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
		cp := p.CloneVT()
		c.Parts = append(c.Parts, cp)
		last = cp
	}
	return c
}
