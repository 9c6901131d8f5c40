package turn

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
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
// own) show that its agents had finished.
func (env *Env) treeFinished(events []*agentrunnerv1.Event) bool {
	last := runrec.LastAgentEvent(events)
	if last == nil || !finalAnswer(last) {
		return false
	}
	a, ok := env.Tree.Find(last.GetAuthor())
	if !ok {
		return false
	}
	if !last.GetTurnComplete() {
		// An LLM agent's final answer says so; a custom agent that says
		// nothing may have had more to do.
		return false
	}
	for {
		p := env.Tree.Parent(a)
		if p == nil || transferredTo(events, a.Name()) {
			return true // the runner ran it: nothing above it goes on
		}
		if !env.endsWith(p, a, events, last) {
			return false
		}
		a = p
	}
}

// endsWith reports whether parent p ends once its sub-agent a ended with
// last, given the run's events.
func (env *Env) endsWith(p, a agent.Agent, events []*agentrunnerv1.Event, last *agentrunnerv1.Event) bool {
	subs := p.SubAgents()
	switch env.Tree.Kind(p) {
	case agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL:
		return len(subs) > 0 && subs[len(subs)-1].Name() == a.Name()
	case agentrunnerv1.AgentKind_AGENT_KIND_LOOP:
		// A loop ends when a sub-agent escalates; without that, another
		// pass may have been due.
		return last.GetActions().GetEscalate()
	case agentrunnerv1.AgentKind_AGENT_KIND_PARALLEL:
		for _, s := range subs {
			if s.Name() != a.Name() && !env.branchAnswered(s, events) {
				return false
			}
		}
		return true
	case agentrunnerv1.AgentKind_AGENT_KIND_LLM:
		// An LLM agent hands over to a sub-agent only by a transfer,
		// after which the sub-agent answers for the run.
		return true
	}
	// A custom agent may run its sub-agents as it likes: unknown.
	return false
}

// branchAnswered reports whether an agent under s stored a final answer
// in the run.
func (env *Env) branchAnswered(s agent.Agent, events []*agentrunnerv1.Event) bool {
	for _, ev := range events {
		if ev.GetAuthor() == agent.UserAuthor || !finalAnswer(ev) {
			continue
		}
		for a, ok := env.Tree.Find(ev.GetAuthor()); ok && a != nil; a = env.Tree.Parent(a) {
			if a.Name() == s.Name() {
				return true
			}
		}
	}
	return false
}

// finalAnswer reports whether an event ends its agent's turn: complete,
// with no call or result to go on from and no hand-over.
func finalAnswer(ev *agentrunnerv1.Event) bool {
	if ev.GetPartial() || len(ev.GetLongRunningToolIds()) > 0 || ev.GetActions().GetTransferToAgent() != "" {
		return false
	}
	for _, p := range ev.GetContent().GetParts() {
		if p.GetFunctionCall() != nil || p.GetFunctionResponse() != nil {
			return false
		}
	}
	return len(ev.GetContent().GetParts()) > 0 || ev.GetErrorCode() != ""
}

// transferredTo reports whether an event of the run handed over to the
// agent named name.
func transferredTo(events []*agentrunnerv1.Event, name string) bool {
	for _, ev := range events {
		if ev.GetActions().GetTransferToAgent() == name {
			return true
		}
	}
	return false
}
