package turn

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// A crash can land between a run's last event and its final record: the
// agents had finished, but the record still says RUNNING. Recovery must
// not call such a run interrupted, and ResumeRun must not run its last
// agent again (a model asked and billed twice, an answer stored twice).
// Whether the agents had finished is read from the run's stored events
// and the shape of the tree: the run's last agent event must be a final
// answer (no call, no transfer, no partial) that completes its author's
// turn (turn_complete, which an LLM agent sets on its final answer and a
// custom agent sets on its last event), and every agent above its author,
// up to the agent the runner itself ran, must end with it.

// treeFinished reports whether the run's events (in order, the run's
// own) show that its agents had finished, the run having started with
// agent first: its last agent event is a final answer marked
// turn_complete, and the agent the runner ran last had finished with
// every agent it ran (agent.Replay reads how each ends: a sequential
// agent with its last sub-agent, a loop with an escalation or its last
// pass, a parallel agent with its last branch, an agent that handed over
// with the target of its transfer; a custom agent's own end is unknown).
func (env *Env) treeFinished(events []*agentrunnerv1.Event, first agent.Agent) bool {
	last := lastStep(events)
	if last == nil || !finalAnswer(last) || !last.GetTurnComplete() {
		return false
	}
	if last.GetAuthor() == first.Name() && len(first.SubAgents()) == 0 {
		return true // the common case, an agent alone, without the replay's maps
	}
	return agent.NewReplay(env.Tree, first, events).Finished()
}

// lastStep returns the last of a run's events that is a step of an
// agent: not the user's, not the event that says the run stopped.
func lastStep(events []*agentrunnerv1.Event) *agentrunnerv1.Event {
	for i := len(events) - 1; i >= 0; i-- {
		if ev := events[i]; ev.GetAuthor() != agent.UserAuthor && !agent.IsStopMarker(ev) {
			return ev
		}
	}
	return nil
}

// finalAnswer reports whether an event ends its agent's turn: complete,
// with no call or result to go on from and no hand-over.
func finalAnswer(ev *agentrunnerv1.Event) bool { return agent.Finished(ev) }
