package turn

import (
	"fmt"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// checkResponses checks the function responses of a new message against
// the calls the session waits on (see pendingCalls). Every
// response must answer one of them, and a reply must answer every call its
// run waits on, so that the agent goes on with all of its answers. The
// error wraps store.ErrInvalidArgument and names the ids; it comes before
// anything is stored.
func checkResponses(events []*agentrunnerv1.Event, msg *agentrunnerv1.Content) error {
	var answers []string
	for i, p := range msg.GetParts() {
		fr := p.GetFunctionResponse()
		if fr == nil {
			continue
		}
		if fr.GetId() == "" {
			// It would answer nothing, and the model would be sent a
			// result without its call.
			return fmt.Errorf("new_message.parts[%d].function_response: id is empty; give the id of the call it answers: %w", i, store.ErrInvalidArgument)
		}
		answers = append(answers, fr.GetId())
	}
	if len(answers) == 0 {
		return nil
	}
	pending := runrec.PendingCalls(events) // call id -> invocation id
	var unknown []string
	var superseded map[string]bool
	runs := map[string]bool{}
	for _, id := range answers {
		inv, ok := pending[id]
		if !ok {
			// A call a new message superseded may still be answered: its
			// interim result gives way to this one.
			if superseded == nil {
				superseded = supersededCalls(events)
			}
			if !superseded[id] {
				unknown = append(unknown, id)
			}
			continue
		}
		runs[inv] = true
	}
	if len(unknown) > 0 {
		return fmt.Errorf("function responses to calls nobody waits on (unknown or already answered): %q: %w", unknown, store.ErrInvalidArgument)
	}
	var missing []string
	for id, inv := range pending {
		if runs[inv] && !slices.Contains(answers, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("the reply leaves calls its run waits on unanswered: %q: %w", missing, store.ErrInvalidArgument)
	}
	return nil
}
