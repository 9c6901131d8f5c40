package turn

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// A run's final record must be on disk before anyone hears of the end,
// and each complete event before anyone sees it. Written one after the
// other, the last answer and the record cost two commits, and on a store
// that fsyncs each commit (bbolt) a short run pays a third of its time
// for the second. When the answer visibly ends the run, the turn holds it
// back instead, unstored and unseen, and stores it with the final record
// in one transaction (AppendRunEvent): one commit, and a crash keeps
// both or neither, so recovery never finds the answer without its end.
//
// "Visibly ends the run" is the rule recovery reads (treeFinished): a
// final answer, marked turn_complete, whose every ancestor ends with it.
// Held only when nothing else needs it stored first: it changes no state
// or artifacts (an agent's callback could read them), and no compaction
// will run after the agents (it summarizes stored events; an app's
// summarizer alone does not say that one will). Anything that
// comes after it after all (an agent's callback answering, an in-band
// error, a cancel) stores it first, in order, as if it had not been held.

// holds reports whether a complete event, ready to store, is to be held
// back to go with the final record: the journal asks (journal.write).
func (in *invocation) holds(ev *agentrunnerv1.Event) bool {
	if ev.GetAuthor() == agent.UserAuthor || !ev.GetTurnComplete() {
		return false
	}
	if a := ev.GetActions(); len(a.GetStateDelta().GetFields()) > 0 || len(a.GetArtifactDelta()) > 0 || a.GetCompaction() != nil || a.GetEscalate() {
		return false
	}
	if !finalAnswer(ev) || !in.env.treeFinished(append(in.runTail(), ev), in.first) {
		return false
	}
	// Every app with an LLM agent has a summarizer, but few runs compact:
	// what decides is whether this one will once the answer is stored.
	return !in.env.Compaction.dueAfter(in.inv.Events(), ev, in.job.ID)
}

// runTail returns this run's stored events, in order: the tail of the
// session view, where a run's events are, together.
func (in *invocation) runTail() []*agentrunnerv1.Event {
	events := in.inv.Events()
	from := len(events)
	for from > 0 && events[from-1].GetInvocationId() == in.job.ID {
		from--
	}
	return events[from:len(events):len(events)]
}
