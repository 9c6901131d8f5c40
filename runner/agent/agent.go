package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// UserAuthor is the author of events that carry user input. No agent may
// take this name.
const UserAuthor = "user"

// SummarizerName is the name a run's usage_by_agent counts the compaction
// summarizer's calls under: the compaction event is the user's (it stands
// for their conversation), but its tokens are no call of the user's. No
// agent may take this name, so that the entry is the summarizer's alone.
const SummarizerName = "compaction"

// Content roles.
const (
	RoleUser  = "user"
	RoleModel = "model"
)

// Agent is a node of an app's agent tree.
//
// Every agent is made by New (directly for custom agents, through
// llmagent.New and the workflow constructors for the others); the
// unexported method keeps the set closed, so that the runner can rely on
// every agent's callbacks, hooks, panic recovery and transfer policy.
type Agent interface {
	// Name is the agent's name, unique within its tree.
	Name() string
	// Description says in one line what the agent does; LLM agents read it
	// to pick a transfer target.
	Description() string
	// Run runs the agent for one invocation and streams its events. An
	// error does not end the sequence: the runner delivers it and keeps
	// reading, so an agent returns after an error it cannot go on from.
	// Events yielded become the runner's: it persists its own copy, and
	// nothing the agent does to the event afterwards reaches the session.
	Run(InvocationContext) iter.Seq2[*agentrunnerv1.Event, error]
	// SubAgents returns the agent's children, in order.
	SubAgents() []Agent

	base() *base
}

// BeforeAgentCallback runs before an agent. Returning content or an error
// short-circuits the agent: the content (as an event authored by the agent)
// or the error is delivered instead, and neither the agent's run nor its
// after-callbacks happen. Returning (nil, nil) lets the agent run.
type BeforeAgentCallback func(CallbackContext) (*agentrunnerv1.Content, error)

// AfterAgentCallback runs after an agent's run. Returning content appends an
// event authored by the agent; returning an error delivers it.
type AfterAgentCallback func(CallbackContext) (*agentrunnerv1.Content, error)

// RunFunc is the body of an agent.
type RunFunc func(InvocationContext) iter.Seq2[*agentrunnerv1.Event, error]

// Config configures an agent.
type Config struct {
	// Name must be non-empty, not "user", and unique in the tree.
	Name string
	// Description says in one line what the agent does.
	Description string
	// SubAgents are the agent's children. An agent may have only one
	// parent.
	SubAgents []Agent
	// Run produces the agent's events. Events without an author are
	// authored by the agent (or by "user" when their content has role
	// "user"); events without a branch get the invocation's branch. An
	// agent runs a child by ranging over child.Run(ctx) and yielding what
	// it yields. A panic in Run ends the agent's turn with an in-band
	// error; the run goes on. A custom agent has ended once Run returns:
	// unless its last event of its own is a final answer marked
	// turn_complete (or a transfer), the runner then stores an event of
	// the agent marked turn_complete with no content (IsEnd), so that a
	// resumed run does not run it again.
	Run RunFunc
	// BeforeAgentCallbacks run in order before Run, after the plugins'
	// before_agent hooks; the first that returns content or an error
	// short-circuits the agent.
	BeforeAgentCallbacks []BeforeAgentCallback
	// AfterAgentCallbacks run in order after Run, after the plugins'
	// after_agent hooks; the first that returns content or an error ends
	// the after-callbacks.
	AfterAgentCallbacks []AfterAgentCallback

	// Kind is what ListApps reports; zero means AGENT_KIND_CUSTOM. The
	// llmagent and workflow packages set it.
	Kind agentrunnerv1.AgentKind
	// Transfers makes the agent a party to transfers between agents, as
	// LLM agents are: it may then be resumed on the user's next turn and
	// hand over to its parent and peers, as the policy allows. Nil (custom
	// and workflow agents) means it can be transferred to, but the user's
	// next message never goes back to it.
	Transfers *TransferPolicy
	// Describe adds what only this kind of agent has to its AgentInfo
	// (model, tools, max iterations). It is given the tree the agent is
	// served in.
	Describe func(info *agentrunnerv1.AgentInfo, t *Tree)
	// Abandon, when set, is told of calls of the agent's event ev that a
	// run waited on and that nobody will answer: CancelRun ended the run,
	// or a new message superseded the calls. The remote A2A agent cancels
	// the remote task that waits. It runs after the calls are settled, so
	// it is best effort: nothing it does changes them.
	Abandon func(ctx context.Context, ev *agentrunnerv1.Event, callIDs []string)
}

// TransferPolicy says where an agent that takes part in transfers may go.
type TransferPolicy struct {
	// DisallowTransferToParent keeps the conversation from going back to
	// the parent; it also keeps the runner from resuming this agent on the
	// next turn.
	DisallowTransferToParent bool
	// DisallowTransferToPeers keeps the agent from transferring to its
	// siblings.
	DisallowTransferToPeers bool
}

// New returns an agent running cfg.Run with its callbacks.
func New(cfg Config) (Agent, error) {
	if cfg.Run == nil {
		return nil, fmt.Errorf("agent %q: Run is required", cfg.Name)
	}
	if cfg.Kind == agentrunnerv1.AgentKind_AGENT_KIND_UNSPECIFIED {
		cfg.Kind = agentrunnerv1.AgentKind_AGENT_KIND_CUSTOM
	}
	b := &base{
		name:        cfg.Name,
		description: cfg.Description,
		kind:        cfg.Kind,
		before:      cfg.BeforeAgentCallbacks,
		after:       cfg.AfterAgentCallbacks,
		impl:        cfg.Run,
		describe:    cfg.Describe,
		abandon:     cfg.Abandon,
	}
	if cfg.Transfers != nil {
		p := *cfg.Transfers
		b.transfers = &p
	}
	if err := b.adopt(cfg.SubAgents); err != nil {
		return nil, err
	}
	return b, nil
}

// base is the one implementation of Agent.
type base struct {
	name, description string
	kind              agentrunnerv1.AgentKind
	subAgents         []Agent
	before            []BeforeAgentCallback
	after             []AfterAgentCallback
	impl              RunFunc
	transfers         *TransferPolicy
	describe          func(*agentrunnerv1.AgentInfo, *Tree)
	abandon           func(context.Context, *agentrunnerv1.Event, []string)

	// parent is set once, when the agent is given to a parent's
	// constructor; a second parent is refused.
	parent atomic.Pointer[base]
}

// Abandoned tells agent a (its Config.Abandon, if any) that the calls
// callIDs of its event ev will never be answered.
func Abandoned(ctx context.Context, a Agent, ev *agentrunnerv1.Event, callIDs []string) {
	if f := a.base().abandon; f != nil {
		f(ctx, ev, callIDs)
	}
}

func (a *base) Name() string        { return a.name }
func (a *base) Description() string { return a.description }
func (a *base) base() *base         { return a }

// SubAgents returns a copy, so that callers cannot rewire the tree.
func (a *base) SubAgents() []Agent { return append([]Agent(nil), a.subAgents...) }

// resumable reports whether the runner may hand a later turn to this
// agent as far as this agent is concerned.
func (a *base) resumable() bool {
	return a.transfers != nil && !a.transfers.DisallowTransferToParent
}

// adopt validates the subtree rooted at a with the given children and makes
// a their parent. It checks names (non-empty, not "user", unique across the
// whole subtree) and that no child already has a parent; nothing is changed
// when it fails.
func (a *base) adopt(children []Agent) error {
	if err := checkName(a.name); err != nil {
		return err
	}
	seen := map[string]bool{a.name: true}
	for _, c := range children {
		if err := a.checkChild(c, seen); err != nil {
			return err
		}
	}
	for i, c := range children {
		if !c.base().parent.CompareAndSwap(nil, a) {
			// Another constructor took the child in the meantime: undo.
			for _, d := range children[:i] {
				d.base().parent.Store(nil)
			}
			return fmt.Errorf("agent %q: sub-agent %q already has a parent; an agent may have only one parent", a.name, c.Name())
		}
	}
	a.subAgents = append([]Agent(nil), children...)
	return nil
}

// checkChild checks one child's subtree for adopt; seen collects the names
// met so far.
func (a *base) checkChild(c Agent, seen map[string]bool) error {
	if c == nil {
		return fmt.Errorf("agent %q: nil sub-agent", a.name)
	}
	if p := c.base().parent.Load(); p != nil {
		return fmt.Errorf("agent %q: sub-agent %q already has parent %q; an agent may have only one parent", a.name, c.Name(), p.name)
	}
	var err error
	walk(c, func(d Agent) bool {
		if err = checkName(d.Name()); err != nil {
			return false
		}
		if seen[d.Name()] {
			err = fmt.Errorf("agent %q: duplicate agent name %q in the tree", a.name, d.Name())
			return false
		}
		seen[d.Name()] = true
		return true
	})
	return err
}

var errEmptyName = errors.New("agent name is empty")

func checkName(name string) error {
	switch name {
	case "":
		return errEmptyName
	case UserAuthor:
		return fmt.Errorf("agent name %q is reserved for user input", name)
	case SummarizerName:
		return fmt.Errorf("agent name %q is reserved for the compaction summarizer's usage", name)
	}
	return nil
}

// walk visits a and its descendants depth-first until visit returns false.
// It reports whether the walk completed.
func walk(a Agent, visit func(Agent) bool) bool {
	if !visit(a) {
		return false
	}
	for _, c := range a.base().subAgents {
		if !walk(c, visit) {
			return false
		}
	}
	return true
}
