package turn

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// A model call the run's end cuts off is billed by its provider as far
// as it got, so the event that says the run stopped counts it: its
// usage_metadata and cost are the cut call's (as the provider reported
// them so far, or estimated: model.CutUsage), and the stores count them
// like any call's. Without this, stopping each run just before its end
// would dodge every budget.

// withCuts puts the usage of each cut call on the stop event of its
// agent and branch, adding an interrupted event for a call that streamed
// nothing (or whose event already counts another).
func (in *invocation) withCuts(evs []*agentrunnerv1.Event, codeName, msg string) []*agentrunnerv1.Event {
	for _, c := range in.cuts.Take() {
		var ev *agentrunnerv1.Event
		for _, e := range evs {
			if e.GetAuthor() == c.Author && e.GetBranch() == c.Branch && e.GetUsageMetadata() == nil {
				ev = e
				break
			}
		}
		if ev == nil {
			ev = &agentrunnerv1.Event{Author: c.Author, Branch: c.Branch, ErrorCode: codeName, ErrorMessage: msg, Interrupted: true}
			in.complete(ev, nil)
			evs = append(evs, ev)
		}
		ev.UsageMetadata, ev.Cost = c.Usage, c.Cost
	}
	return evs
}

// unstoredCall notes the usage of a complete event the run's end kept
// from being stored (the call finished, the store refused the stopped
// run's context): the stop event counts it instead.
func (in *invocation) unstoredCall(ev *agentrunnerv1.Event) {
	if ev.GetUsageMetadata() == nil {
		return
	}
	in.cuts.Add(agent.CutCall{Author: ev.GetAuthor(), Branch: ev.GetBranch(), Usage: ev.GetUsageMetadata(), Cost: ev.GetCost()})
}
