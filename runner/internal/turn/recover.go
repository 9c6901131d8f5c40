package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// MarkInterrupted stores the end of a run a crash cut off: INTERRUPTED,
// with an event saying so, unless its stored events show that its agents
// had finished (treeFinished) and only its final record was lost; that
// run ends as it would have (runrec.Recovered). A waiting run that the
// run's message answered ends first, if the crash came before it did
// (settleAnsweredBy).
func MarkInterrupted(ctx context.Context, env *Env, rec *agentrunnerv1.Run) error {
	key := store.RunKey(rec)
	author := env.Tree.Root().Name()
	rec.Usage, rec.UsageByAgent, rec.Cost = nil, nil, nil // counted again from what is stored
	var events []*agentrunnerv1.Event
	err := env.scanRun(ctx, rec, func(ev *agentrunnerv1.Event) {
		if ev.GetAuthor() != agent.UserAuthor {
			author = ev.GetAuthor()
		}
		runrec.AddUsage(rec, ev)
		events = append(events, ev)
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil // the session is gone, and its runs with it
	}
	if err != nil {
		return fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
	}
	if err := env.settleAnsweredBy(ctx, rec, events); err != nil {
		return fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
	}
	if env.treeFinished(events, startedWith(env.Tree, events)) {
		if err := env.Store.PutRun(ctx, runrec.Recovered(rec, events)); err != nil && !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
		}
		return nil
	}
	now := env.Now()
	runrec.Interrupted(rec, now)
	ev := &agentrunnerv1.Event{Id: env.NewID(), InvocationId: rec.GetRunId(), Author: author, ErrorCode: "INTERRUPTED", ErrorMessage: runrec.InterruptedMessage, Timestamp: rec.GetEndTime()}
	if _, _, err := env.Store.AppendRunEvent(ctx, key, ev, rec); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("recover run %s: %w", rec.GetRunId(), err)
	}
	return nil
}

// scanPage is how many events scanRun reads at a time.
const scanPage = 500

// scanRun calls fn with each stored event of the run, in order.
func (env *Env) scanRun(ctx context.Context, rec *agentrunnerv1.Run, fn func(*agentrunnerv1.Event)) error {
	after := rec.GetFirstSequence()
	if after > 0 {
		after--
	}
	for {
		evs, next, err := env.Store.ListEvents(ctx, store.RunKey(rec), store.EventFilter{AfterSequence: after}, store.Page{Size: scanPage})
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

// startedWith returns the agent a run started with, from its events
// alone (recovery does not read the session before them): see
// agent.Tree.StartedWith.
func startedWith(t *agent.Tree, run []*agentrunnerv1.Event) agent.Agent {
	answering := false
	for _, ev := range run {
		if ev.GetAuthor() != agent.UserAuthor {
			break
		}
		for _, p := range ev.GetContent().GetParts() {
			answering = answering || p.GetFunctionResponse() != nil
		}
	}
	return t.StartedWith(run, answering)
}

// settleAnsweredBy ends the waiting run whose calls the message of run
// rec (its first event, events being its own) answered, when a crash came
// between storing that message and ending the answered run (settleAnswered
// writes the end after the answer, in a transaction of its own): the
// answered run would stay INPUT_REQUIRED with its calls answered, and no
// later message finds it, since only the session's last run waits. It
// ends SUCCEEDED, continued by rec, as it would have. The ledger names the
// run that made each answered call; a run that answers its own calls
// (ResumeRun) has nothing to settle.
func (env *Env) settleAnsweredBy(ctx context.Context, rec *agentrunnerv1.Run, events []*agentrunnerv1.Event) error {
	answered := answeredIn(events)
	if len(answered) == 0 {
		return nil // most runs: their message is no answer
	}
	calls, err := env.Store.ListToolCalls(ctx, store.RunKey(rec))
	if err != nil {
		return fmt.Errorf("read the tool-call ledger: %w", err)
	}
	var runs []string
	for _, c := range calls {
		if id := c.GetInvocationId(); answered[c.GetCallId()] && id != rec.GetRunId() && !slices.Contains(runs, id) {
			runs = append(runs, id)
		}
	}
	for _, id := range runs {
		w, err := env.Store.GetRun(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			continue
		case err != nil:
			return fmt.Errorf("read the answered run %s: %w", id, err)
		case w.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED:
			continue // ended before the crash, or never waited on these calls
		}
		if slices.ContainsFunc(w.GetPendingCallIds(), func(c string) bool { return !answered[c] }) {
			continue // it waits on calls this message left alone
		}
		if err := env.settleAnswered(ctx, &waitingRun{rec: w, calls: w.GetPendingCallIds(), answered: true}, rec.GetRunId()); err != nil {
			return err
		}
	}
	return nil
}

// answeredIn returns the calls the caller's real answers among a run's
// leading user events answer (not the interim results of superseded
// calls), nil when there are none.
func answeredIn(events []*agentrunnerv1.Event) map[string]bool {
	var out map[string]bool
	for _, ev := range events {
		if ev.GetAuthor() != agent.UserAuthor {
			break
		}
		for _, p := range ev.GetContent().GetParts() {
			fr := p.GetFunctionResponse()
			if _, interim := fr.GetResponse().GetFields()[supersededKey]; fr.GetId() == "" || interim {
				continue
			}
			if out == nil {
				out = map[string]bool{}
			}
			out[fr.GetId()] = true
		}
	}
	return out
}
