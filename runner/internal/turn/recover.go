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

// MarkInterrupted stores the end of a run a crash cut off: INTERRUPTED,
// with an event saying so, unless its stored events show that its agents
// had finished (treeFinished) and only its final record was lost; that
// run ends as it would have (runrec.Recovered).
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
