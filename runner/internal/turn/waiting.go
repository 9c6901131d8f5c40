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
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// A run that ends RUN_STATUS_INPUT_REQUIRED stays so only while it waits.
// The session's next Run decides: a message that answers its calls ends
// it SUCCEEDED (the answer goes on in the new run); a plain message
// supersedes them: each waiting call is answered with an interim result
// the model can read (supersededKey names the new run), and the run ends
// CANCELLED. Both name the new run in continued_by_run_id. A superseded
// call may still be answered later, by a Run whose function_response
// carries its id: the latest response is the one the model reads, placed
// where it arrived. CancelRun ends a waiting run the same way.
//
// Only the session's last run can wait: every run after it settles it
// first. So finding it costs a scan of the last run's events.

// supersededKey is the key of an interim function response the runner
// stores for a call that a new message superseded; its value is the run
// that did, or "" for CancelRun.
const supersededKey = store.SupersededKey

// waitingRun is the session's last run while it waits on the caller.
type waitingRun struct {
	rec   *agentrunnerv1.Run
	calls []string // the calls it waits on, sorted
	// answered reports that the new message answers its calls.
	answered bool
}

// findWaiting returns the session's waiting run, if its last run waits
// and its record says so, and whether msg answers it.
func (env *Env) findWaiting(ctx context.Context, events []*agentrunnerv1.Event, msg *agentrunnerv1.Content) (*waitingRun, error) {
	id, calls := runrec.LastRunWaits(events)
	if len(calls) == 0 || id == "" {
		return nil, nil // no run waits (or events appended outside any run)
	}
	rec, err := env.Store.GetRun(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil // events of a run with no record (written before runs had them)
	case err != nil:
		return nil, fmt.Errorf("read the waiting run %s: %w", id, err)
	case rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED:
		return nil, nil
	}
	w := &waitingRun{rec: rec, calls: calls}
	for _, p := range msg.GetParts() {
		if slices.Contains(calls, p.GetFunctionResponse().GetId()) {
			// checkResponses saw to it that the reply answers them all.
			w.answered = true
		}
	}
	return w, nil
}

// settleAnswered ends a waiting run whose calls the run by answered:
// SUCCEEDED, its calls no longer pending, pointing to the run that goes
// on with the answers. It is written once the answers are stored.
func (env *Env) settleAnswered(ctx context.Context, w *waitingRun, by string) error {
	rec := w.rec
	runrec.Answered(rec, by)
	if err := env.Store.PutRun(ctx, rec); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("end the answered run %s: %w", rec.GetRunId(), err)
	}
	return nil
}

// supersede answers a waiting run's calls with interim results and ends
// it CANCELLED, in one transaction. by is the run whose plain message
// superseded them ("" for CancelRun). It returns the stored event.
func (env *Env) supersede(ctx context.Context, events []*agentrunnerv1.Event, w *waitingRun, by string) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	reason := "cancelled by request (CancelRun) before the caller answered"
	if by != "" {
		reason = fmt.Sprintf("not answered: the user sent a new message instead (run %s)", by)
	}
	names := callNames(events, w.calls)
	parts := make([]*agentrunnerv1.Part, 0, len(w.calls))
	for _, id := range w.calls {
		resp, _ := structpb.NewStruct(map[string]any{"status": "cancelled", "reason": reason, supersededKey: by})
		parts = append(parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
			Id: id, Name: names[id], Response: resp,
		}}})
	}
	now := env.Now()
	ev := &agentrunnerv1.Event{
		Id: env.NewID(), InvocationId: w.rec.GetRunId(), Author: agent.UserAuthor, Timestamp: timestamppb.New(now),
		Content: &agentrunnerv1.Content{Role: agent.RoleUser, Parts: parts},
	}
	rec := w.rec
	runrec.Superseded(rec, by, reason, now)
	stored, storedRec, err := env.Store.AppendRunEvent(ctx, store.RunKey(rec), ev, rec)
	if err != nil {
		return nil, nil, fmt.Errorf("supersede the calls of run %s: %w", rec.GetRunId(), err)
	}
	env.abandon(ctx, events, w.calls)
	return stored, storedRec, nil
}

// abandon tells the agents that made calls nobody will answer now
// (agent.Abandoned): a remote A2A agent cancels the remote task that
// waits on its caller, which would otherwise wait for ever.
func (env *Env) abandon(ctx context.Context, events []*agentrunnerv1.Event, ids []string) {
	left := len(ids)
	for i := len(events) - 1; i >= 0 && left > 0; i-- {
		var mine []string
		for _, p := range events[i].GetContent().GetParts() {
			if id := p.GetFunctionCall().GetId(); id != "" && slices.Contains(ids, id) {
				mine = append(mine, id)
			}
		}
		if len(mine) == 0 {
			continue
		}
		left -= len(mine)
		if a, ok := env.Tree.Find(events[i].GetAuthor()); ok {
			agent.Abandoned(ctx, a, events[i], mine)
		}
	}
}

// callNames returns the function name of each call id, from the events
// that made the calls.
func callNames(events []*agentrunnerv1.Event, ids []string) map[string]string {
	names := make(map[string]string, len(ids))
	for i := len(events) - 1; i >= 0 && len(names) < len(ids); i-- {
		for _, p := range events[i].GetContent().GetParts() {
			if fc := p.GetFunctionCall(); fc != nil && slices.Contains(ids, fc.GetId()) {
				names[fc.GetId()] = fc.GetName()
			}
		}
	}
	return names
}

// supersededCalls returns the calls whose latest response is an interim
// one the runner stored when it superseded them: a later answer to them
// is still taken.
func supersededCalls(events []*agentrunnerv1.Event) map[string]bool {
	var out map[string]bool
	for _, ev := range events {
		if ev.GetAuthor() != agent.UserAuthor {
			continue
		}
		for _, p := range ev.GetContent().GetParts() {
			fr := p.GetFunctionResponse()
			if fr == nil {
				continue
			}
			_, interim := fr.GetResponse().GetFields()[supersededKey]
			switch {
			case interim && out == nil:
				out = map[string]bool{fr.GetId(): true}
			case interim:
				out[fr.GetId()] = true
			case out != nil:
				delete(out, fr.GetId())
			}
		}
	}
	return out
}

// CancelWaiting ends run id, which waits on its caller, for CancelRun:
// it supersedes the run's calls and returns the stored record. The
// caller holds the session (ctx carries its lease, if any), so that the
// session is read as the last writer left it. A run settled meanwhile
// (answered, superseded, resumed) is returned as it is now.
func CancelWaiting(ctx context.Context, env *Env, key store.SessionKey, id string) (*agentrunnerv1.Run, error) {
	sess, events, err := env.History.Load(ctx, env.Store, key)
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	w, err := env.findWaiting(ctx, events, nil)
	if err != nil {
		return nil, err
	}
	if w == nil || w.rec.GetRunId() != id {
		return env.Store.GetRun(ctx, id)
	}
	stored, rec, err := env.supersede(ctx, events, w, "")
	if err != nil {
		return nil, err
	}
	env.History.Put(key, sess, append(slices.Clip(events), stored))
	return rec, nil
}
