package agent

import (
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// WithoutRewound returns events without those a rewind undid
// (SessionService.RewindSession), as adk-python builds its requests: a
// rewind event (actions.rewind_before_invocation_id) hides itself and
// every event from the first of the invocation it names on. The events
// stay stored; the model no longer sees them. When that invocation
// started before the first of events (a history loaded in part), every
// event before the rewind is hidden. Events without a rewind are
// returned as they are, without a copy. The LLM agents' requests and the
// choice of the agent that answers (Tree.SelectAgent) read events so.
func WithoutRewound(events []*agentrunnerv1.Event) []*agentrunnerv1.Event {
	if !slices.ContainsFunc(events, isRewind) {
		return events
	}
	out := make([]*agentrunnerv1.Event, 0, len(events))
	for i := len(events) - 1; i >= 0; i-- {
		inv := events[i].GetActions().GetRewindBeforeInvocationId()
		if inv == "" {
			out = append(out, events[i])
			continue
		}
		first := slices.IndexFunc(events[:i], func(ev *agentrunnerv1.Event) bool { return ev.GetInvocationId() == inv })
		i = max(first, 0) // the loop goes on before it
	}
	slices.Reverse(out)
	return out
}

func isRewind(ev *agentrunnerv1.Event) bool {
	return ev.GetActions().GetRewindBeforeInvocationId() != ""
}
