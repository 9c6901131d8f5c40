package agent

import (
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// Tree indexes an agent tree by name, with each agent's parent. It is built
// once per runner and read-only afterwards, so it is safe for concurrent
// use.
type Tree struct {
	root   Agent
	byName map[string]Agent
	parent map[string]Agent // absent for the root
}

// NewTree validates the tree under root (names non-empty, not "user",
// unique; every agent reached once) and indexes it.
func NewTree(root Agent) (*Tree, error) {
	if root == nil {
		return nil, fmt.Errorf("root agent is required")
	}
	t := &Tree{root: root, byName: make(map[string]Agent), parent: make(map[string]Agent)}
	if err := t.index(root, nil); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Tree) index(a, parent Agent) error {
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
		if err := t.index(c, a); err != nil {
			return err
		}
	}
	return nil
}

// Root returns the root agent.
func (t *Tree) Root() Agent { return t.root }

// Find returns the agent named name.
func (t *Tree) Find(name string) (Agent, bool) {
	a, ok := t.byName[name]
	return a, ok
}

// Parent returns the parent of a; nil for the root or an agent not in the
// tree.
func (t *Tree) Parent(a Agent) Agent { return t.parent[a.Name()] }

// resumable reports whether the runner may hand the next turn to a: it and
// every ancestor up to the root must take part in transfers and allow
// transfer to their parent.
func (t *Tree) resumable(a Agent) bool {
	for cur := a; cur != nil; cur = t.parent[cur.Name()] {
		if !cur.base().resumable() {
			return false
		}
	}
	return true
}

// SelectAgent picks the agent that answers msg, given the session's events
// (oldest first, the new message not among them).
//
// A message that carries function responses goes to the agent that made the
// matching call. Otherwise the events are walked from the newest: user
// events and unknown authors are skipped; the root's own event selects the
// root; any other author is selected when resumable, and passed over (the
// walk goes on to older events) when not. The root answers when nothing
// qualifies.
//
// A failure is no answer: an agent whose latest event reports one
// (error_code: a model that failed after its retries, an answer cut
// short) is passed over with all its events, so the message goes where
// it would have gone had that agent not been given the turn (the agent
// that transferred to it, say), and a failing agent never holds the
// session. An agent that fails in band stores no event, which comes to
// the same: local and remote agents alike. The events that say a run
// stopped are passed over alone: a stopped answer is no failure of its
// agent.
//
// The runner hands over the events after the newest compaction's range,
// not the ones it covers: that compaction's authors (its covered events'
// authors, newest first, each once) stand for them, read after the walk
// because every event in the view is newer than the range. Whether an
// author is selected depends on its name alone, so its newest occurrence
// decides, and the authors give the agent a walk over the covered events
// would give, for any tree.
func (t *Tree) SelectAgent(events []*agentrunnerv1.Event, msg *agentrunnerv1.Content) Agent {
	// A rewind hides events up to itself, never after: the events after
	// the newest rewind are all visible, in order. So a choice made by
	// walks that met no rewind is the one made without the rewound
	// events; only when they meet one are the events filtered (a rewound
	// run's agents are passed over), which costs a look at every event.
	if a, ok := t.selectIn(events, msg, true); ok {
		return a
	}
	a, _ := t.selectIn(WithoutRewound(events), msg, false)
	return a
}

// selectIn is SelectAgent's walk over events; with stopAtRewind, ok is
// false, and nothing chosen, when the walk meets a rewind event.
func (t *Tree) selectIn(events []*agentrunnerv1.Event, msg *agentrunnerv1.Content, stopAtRewind bool) (_ Agent, ok bool) {
	if a, ok := t.callerOf(events, msg, stopAtRewind); !ok || a != nil {
		return a, ok
	}
	var compacted *agentrunnerv1.EventCompaction
	var failed map[string]bool // agents whose latest step failed
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if stopAtRewind && isRewind(ev) {
			return nil, false
		}
		if c := ev.GetActions().GetCompaction(); c != nil {
			if c.GetEndSequence() > compacted.GetEndSequence() {
				compacted = c
			}
			continue
		}
		author := ev.GetAuthor()
		if IsStopMarker(ev) || failed[author] {
			continue
		}
		if ev.GetErrorCode() != "" && author != UserAuthor {
			if failed == nil {
				failed = map[string]bool{}
			}
			failed[author] = true
			continue
		}
		if a := t.selectable(author); a != nil {
			return a, true
		}
	}
	for _, author := range compacted.GetAuthors() {
		if a := t.selectable(author); a != nil && !failed[author] {
			return a, true
		}
	}
	return t.root, true
}

// selectable returns the agent an event of author selects, or nil when the
// walk goes on past it: the user, an unknown author, an agent that is not
// resumable.
func (t *Tree) selectable(author string) Agent {
	if author == UserAuthor {
		return nil
	}
	if author == t.root.Name() {
		return t.root
	}
	if a, ok := t.Find(author); ok && t.resumable(a) {
		return a
	}
	return nil
}

// callerOf returns the agent that made the function call msg's first
// function response answers, or nil.
// With stopAtRewind, ok is false when the search meets a rewind event
// (see selectIn).
func (t *Tree) callerOf(events []*agentrunnerv1.Event, msg *agentrunnerv1.Content, stopAtRewind bool) (_ Agent, ok bool) {
	for _, p := range msg.GetParts() {
		id := p.GetFunctionResponse().GetId()
		if id == "" {
			continue
		}
		for i := len(events) - 1; i >= 0; i-- {
			if stopAtRewind && isRewind(events[i]) {
				return nil, false
			}
			for _, q := range events[i].GetContent().GetParts() {
				if q.GetFunctionCall().GetId() == id {
					if a, ok := t.Find(events[i].GetAuthor()); ok {
						return a, true
					}
					return nil, true
				}
			}
		}
	}
	return nil, true
}

// TransferTargets returns the agents a may hand the conversation over to:
// its sub-agents, then, when both a and its parent take part in transfers,
// the parent unless disallowed and the parent's other children unless
// disallowed. A workflow parent is left out, with its children: handing
// its turn to them would break the workflow's order.
func (t *Tree) TransferTargets(a Agent) []Agent {
	b := a.base()
	targets := append([]Agent(nil), b.subAgents...)
	if t == nil || b.transfers == nil {
		return targets
	}
	parent, ok := t.parent[a.Name()]
	if !ok || parent.base().transfers == nil {
		return targets
	}
	if !b.transfers.DisallowTransferToParent {
		targets = append(targets, parent)
	}
	if !b.transfers.DisallowTransferToPeers {
		for _, peer := range parent.base().subAgents {
			if peer.Name() != a.Name() {
				targets = append(targets, peer)
			}
		}
	}
	return targets
}

// Info describes the tree under a.
func (t *Tree) Info(a Agent) *agentrunnerv1.AgentInfo {
	b := a.base()
	info := &agentrunnerv1.AgentInfo{
		Name:                     b.name,
		Description:              b.description,
		Kind:                     b.kind,
		DisallowTransferToParent: true,
		DisallowTransferToPeers:  true,
	}
	if b.transfers != nil {
		info.DisallowTransferToParent = b.transfers.DisallowTransferToParent
		info.DisallowTransferToPeers = b.transfers.DisallowTransferToPeers
	}
	if b.describe != nil {
		b.describe(info, t)
	}
	for _, c := range b.subAgents {
		info.SubAgents = append(info.SubAgents, t.Info(c))
	}
	return info
}

// Kind returns what kind of agent a is (AGENT_KIND_CUSTOM for agents made
// with New and no kind of their own).
func (t *Tree) Kind(a Agent) agentrunnerv1.AgentKind { return a.base().kind }
