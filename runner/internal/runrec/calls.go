package runrec

import (
	"cmp"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
)

// PendingCalls returns the calls of events that still wait for an
// answer, with the invocation that made each: long-running calls (those
// in an event's long_running_tool_ids) no user event has answered, and
// other calls nobody has answered (a custom agent's call for the client).
func PendingCalls(events []*agentrunnerv1.Event) map[string]string {
	pending := map[string]string{}
	longRunning := map[string]bool{}
	for _, ev := range events {
		for _, id := range ev.GetLongRunningToolIds() {
			longRunning[id] = true
		}
		for _, p := range ev.GetContent().GetParts() {
			if id := p.GetFunctionCall().GetId(); id != "" {
				pending[id] = ev.GetInvocationId()
			}
			// A call that waits for confirmation is waited on through its
			// confirmation request, not by itself.
			if fc := p.GetFunctionCall(); fc.GetName() == builtin.RequestConfirmationName {
				delete(pending, fc.GetArgs().GetFields()["call_id"].GetStringValue())
			}
			id := p.GetFunctionResponse().GetId()
			if id != "" && (ev.GetAuthor() == agent.UserAuthor || !longRunning[id]) {
				delete(pending, id)
			}
		}
	}
	return pending
}

// WaitingCalls returns the calls the run made that still wait for the
// caller, sorted: the record's pending_call_ids. Only the events from the
// run's first on can hold them: the scan costs the run's length, not the
// session's.
func WaitingCalls(events []*agentrunnerv1.Event, rec *agentrunnerv1.Run) []string {
	from, _ := slices.BinarySearchFunc(events, rec.GetFirstSequence(), func(ev *agentrunnerv1.Event, seq uint64) int {
		return cmp.Compare(ev.GetSequence(), seq)
	})
	var ids []string
	for call, inv := range PendingCalls(events[from:]) {
		if inv == rec.GetRunId() {
			ids = append(ids, call)
		}
	}
	slices.Sort(ids)
	return ids
}

// LastRunWaits returns the id of the session's last run and the calls it
// waits on (nil when none), from the events of that run alone.
func LastRunWaits(events []*agentrunnerv1.Event) (string, []string) {
	if len(events) == 0 {
		return "", nil
	}
	id := events[len(events)-1].GetInvocationId()
	from := len(events)
	for from > 0 && events[from-1].GetInvocationId() == id {
		from--
	}
	var calls []string
	for call, inv := range PendingCalls(events[from:]) {
		if inv == id {
			calls = append(calls, call)
		}
	}
	slices.Sort(calls)
	return id, calls
}
