package runrec

import (
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// A run's status follows one rule, whatever the kinds of its agents and
// the order in which parallel branches end: a run whose agents return is
// FAILED when any agent's last step in the run failed, and nothing it did
// later in the run recovered from it. An agent's step is each event it
// stored (failed when it carries an error_code: a model that failed
// after its retries, an answer cut short) and each in-band error
// reported in its name (failed). Only the agent's own later step
// recovers: another agent answering after it does not (a sequential
// agent's next step, a sibling branch, the agent a transfer returned
// to). The events that say a run stopped (agent.IsStopMarker) are no
// step, nor is the end the runner stores for a custom agent
// (agent.IsEnd). The record's error is the failure of the first of the failing
// agents to fail.

// Failures tracks, per agent, whether its last step in a run failed.
// The zero value is ready to use; not safe for concurrent use.
type Failures struct {
	order []string // failing agents, in the order they failed
	by    map[string]*agentrunnerv1.Status
}

// Step records a step of agent name: failed with st, or succeeded (nil).
func (f *Failures) Step(name string, st *agentrunnerv1.Status) {
	if i := slices.Index(f.order, name); i >= 0 {
		f.order = slices.Delete(f.order, i, i+1)
		delete(f.by, name)
	}
	if st == nil {
		return
	}
	if f.by == nil {
		f.by = map[string]*agentrunnerv1.Status{}
	}
	f.order = append(f.order, name)
	f.by[name] = st
}

// Event records a stored event of the run as the step it is, if any.
func (f *Failures) Event(ev *agentrunnerv1.Event) {
	if ev.GetAuthor() == agent.UserAuthor || agent.IsStopMarker(ev) || agent.IsEnd(ev) {
		return
	}
	f.Step(ev.GetAuthor(), EventFailure(ev))
}

// Err is the run's failure: that of the first failing agent to fail, nil
// when no agent's last step failed.
func (f *Failures) Err() *agentrunnerv1.Status {
	if len(f.order) == 0 {
		return nil
	}
	return f.by[f.order[0]]
}

// RunFailure is the failure the stored events of a run (in order) show.
func RunFailure(events []*agentrunnerv1.Event) *agentrunnerv1.Status {
	var f Failures
	for _, ev := range events {
		f.Event(ev)
	}
	return f.Err()
}
