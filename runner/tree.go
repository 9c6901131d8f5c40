package runner

import (
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// tree indexes an agent tree by name, with each agent's parent. It is built
// once per Runner and read-only afterwards.
type tree struct {
	root   Agent
	byName map[string]Agent
	parent map[string]Agent // absent for the root
}

// newTree validates the tree under root (names non-empty, not "user",
// unique; every agent reached once) and indexes it.
func newTree(root Agent) (*tree, error) {
	if root == nil {
		return nil, fmt.Errorf("root agent is required")
	}
	t := &tree{root: root, byName: make(map[string]Agent), parent: make(map[string]Agent)}
	var visit func(a, parent Agent) error
	visit = func(a, parent Agent) error {
		if err := checkName(a.Name()); err != nil {
			return err
		}
		if prev, ok := t.byName[a.Name()]; ok {
			if prev == a {
				return fmt.Errorf("agent %q appears twice in the tree; an agent may have only one parent", a.Name())
			}
			return fmt.Errorf("duplicate agent name %q in the tree", a.Name())
		}
		t.byName[a.Name()] = a
		if parent != nil {
			t.parent[a.Name()] = parent
		}
		for _, c := range a.base().subAgents {
			if err := visit(c, a); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(root, nil); err != nil {
		return nil, err
	}
	return t, nil
}

// find returns the agent named name.
func (t *tree) find(name string) (Agent, bool) {
	a, ok := t.byName[name]
	return a, ok
}

// resumable reports whether the runner may hand the next turn to a: it and
// every ancestor up to the root must be LLM agents that allow transfer to
// their parent.
func (t *tree) resumable(a Agent) bool {
	for cur := a; cur != nil; cur = t.parent[cur.Name()] {
		if !cur.base().allowsTransferToParent() {
			return false
		}
	}
	return true
}

// selectAgent picks the agent that answers msg, given the session's events
// (oldest first, the new message not among them).
//
// A message that carries function responses goes to the agent that made the
// matching call. Otherwise the events are walked from the newest: user
// events and unknown authors are skipped; the root's own event selects the
// root; any other author is selected when resumable, and passed over (the
// walk goes on to older events) when not. The root answers when nothing
// qualifies.
func (t *tree) selectAgent(events []*agentrunnerv1.Event, msg *agentrunnerv1.Content) Agent {
	if a := t.callerOf(events, msg); a != nil {
		return a
	}
	for i := len(events) - 1; i >= 0; i-- {
		author := events[i].GetAuthor()
		if author == UserAuthor {
			continue
		}
		if author == t.root.Name() {
			return t.root
		}
		a, ok := t.find(author)
		if !ok {
			continue
		}
		if t.resumable(a) {
			return a
		}
	}
	return t.root
}

// callerOf returns the agent that made the function call msg's first
// function response answers, or nil.
func (t *tree) callerOf(events []*agentrunnerv1.Event, msg *agentrunnerv1.Content) Agent {
	for _, p := range msg.GetParts() {
		id := p.GetFunctionResponse().GetId()
		if id == "" {
			continue
		}
		for i := len(events) - 1; i >= 0; i-- {
			for _, q := range events[i].GetContent().GetParts() {
				if q.GetFunctionCall().GetId() == id {
					if a, ok := t.find(events[i].GetAuthor()); ok {
						return a
					}
					return nil
				}
			}
		}
	}
	return nil
}

// agentInfo describes the tree under a.
func agentInfo(t *tree, a Agent) *agentrunnerv1.AgentInfo {
	b := a.base()
	info := &agentrunnerv1.AgentInfo{
		Name:                     b.name,
		Description:              b.description,
		Kind:                     b.kind,
		DisallowTransferToParent: true,
		DisallowTransferToPeers:  true,
		MaxIterations:            int32(b.maxIterations),
	}
	if b.llm != nil {
		info.Model = b.llm.model.Name()
		info.DisallowTransferToParent = b.llm.disallowTransferToParent
		info.DisallowTransferToPeers = b.llm.disallowTransferToPeers
		for _, tool := range b.llm.tools {
			info.Tools = append(info.Tools, tool.Name())
		}
		if targets := transferTargets(t, a); len(targets) > 0 {
			info.Tools = append(info.Tools, ToolTransferToAgent)
			for _, target := range targets {
				info.TransferTargets = append(info.TransferTargets, target.Name())
			}
		}
	}
	for _, c := range b.subAgents {
		info.SubAgents = append(info.SubAgents, agentInfo(t, c))
	}
	return info
}
