package turn

import (
	"context"
	"fmt"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// coveredPage is how many events CoveredAnswers reads at a time.
const coveredPage = 1000

// CoveredAnswers explains a message refused because its function
// responses answer calls nobody waits on (checkResponses): when some of
// them answer calls a new message superseded and that the session's
// newest compaction covers since, it returns an error naming them and the
// compaction's range, wrapping store.ErrInvalidArgument; else nil. A
// superseded call can be answered only until a compaction covers it: the
// summary stands for the call in the agents' requests, and the model
// cannot be given an answer to a call it does not see. It reads the
// session's events up to the compaction's end, so it is for that refusal
// only, never for a run's way through.
func CoveredAnswers(ctx context.Context, env *Env, key store.SessionKey, msg *agentrunnerv1.Content) error {
	var ids []string
	for _, p := range msg.GetParts() {
		if id := p.GetFunctionResponse().GetId(); id != "" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	sess, _, err := env.Store.GetSession(ctx, key, store.GetOptions{NumRecentEvents: 1})
	if err != nil {
		return fmt.Errorf("read session %s: %w", key, err)
	}
	end := sess.GetCompactedSequence()
	if end == 0 {
		return nil
	}
	var covered []*agentrunnerv1.Event
	for after := uint64(0); after < end; {
		evs, _, err := env.Store.ListEvents(ctx, key, store.EventFilter{AfterSequence: after}, store.Page{Size: coveredPage})
		if err != nil {
			return fmt.Errorf("read the events of session %s: %w", key, err)
		}
		for _, ev := range evs {
			if ev.GetSequence() <= end {
				covered = append(covered, ev)
			}
		}
		if len(evs) < coveredPage {
			break
		}
		after = evs[len(evs)-1].GetSequence()
	}
	superseded := supersededCalls(covered)
	ids = slices.DeleteFunc(ids, func(id string) bool { return !superseded[id] })
	if len(ids) == 0 {
		return nil
	}
	return fmt.Errorf("function responses to calls a new message superseded, and that the session's compaction (events up to #%d) covers since: %q: "+
		"a superseded call can be answered only until a compaction covers it, since the agents no longer see the call; send the result as a plain message instead: %w",
		end, ids, store.ErrInvalidArgument)
}
