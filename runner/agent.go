package runner

import (
	"errors"
	"fmt"
	"iter"
	"sync/atomic"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// UserAuthor is the author of events that carry user input. No agent may
// take this name.
const UserAuthor = "user"

// Content roles.
const (
	RoleUser  = "user"
	RoleModel = "model"
)

// Agent is a node of an app's agent tree.
//
// Agents are built by NewAgent, NewLLMAgent, NewSequential, NewParallel and
// NewLoop; the unexported method keeps the set closed, so that the runner can
// rely on every agent's callbacks, kind and transfer flags.
type Agent interface {
	// Name is the agent's name, unique within its tree.
	Name() string
	// Description says in one line what the agent does; LLM agents read it
	// to pick a transfer target.
	Description() string
	// Run runs the agent for one invocation and streams its events. An
	// error does not end the sequence: the runner delivers it and keeps
	// reading, so an agent returns after an error it cannot go on from.
	// Events yielded become the runner's: the agent must not modify them
	// afterwards.
	Run(InvocationContext) iter.Seq2[*agentrunnerv1.Event, error]
	// SubAgents returns the agent's children, in order.
	SubAgents() []Agent

	base() *agentBase
}

// BeforeAgentCallback runs before an agent. Returning content or an error
// short-circuits the agent: the content (as an event authored by the agent)
// or the error is delivered instead, and neither the agent's run nor its
// after-callbacks happen. Returning (nil, nil) lets the agent run.
type BeforeAgentCallback func(CallbackContext) (*agentrunnerv1.Content, error)

// AfterAgentCallback runs after an agent's run. Returning content appends an
// event authored by the agent; returning an error delivers it.
type AfterAgentCallback func(CallbackContext) (*agentrunnerv1.Content, error)

// RunFunc is the body of a custom agent.
type RunFunc func(InvocationContext) iter.Seq2[*agentrunnerv1.Event, error]

// AgentConfig configures a custom agent.
type AgentConfig struct {
	// Name must be non-empty, not "user", and unique in the tree.
	Name string
	// Description says in one line what the agent does.
	Description string
	// SubAgents are the agent's children. An agent may have only one
	// parent.
	SubAgents []Agent
	// Run produces the agent's events. Events without an author are
	// authored by the agent (or by "user" when their content has role
	// "user"); events without a branch get the invocation's branch. A custom
	// agent runs a child by ranging over child.Run(ctx) and yielding what it
	// yields.
	Run RunFunc
	// BeforeAgentCallbacks run in order before Run; the first that returns
	// content or an error short-circuits the agent.
	BeforeAgentCallbacks []BeforeAgentCallback
	// AfterAgentCallbacks run in order after Run; the first that returns
	// content or an error ends the after-callbacks.
	AfterAgentCallbacks []AfterAgentCallback
}

// NewAgent returns a custom agent.
func NewAgent(cfg AgentConfig) (Agent, error) {
	if cfg.Run == nil {
		return nil, fmt.Errorf("agent %q: Run is required", cfg.Name)
	}
	b := &agentBase{
		name:        cfg.Name,
		description: cfg.Description,
		kind:        agentrunnerv1.AgentKind_AGENT_KIND_CUSTOM,
		before:      cfg.BeforeAgentCallbacks,
		after:       cfg.AfterAgentCallbacks,
	}
	b.impl = cfg.Run
	if err := b.adopt(cfg.SubAgents); err != nil {
		return nil, err
	}
	return b, nil
}

// agentBase is the one implementation of Agent. The kinds differ only in
// impl and in the fields below that describe them.
type agentBase struct {
	name, description string
	kind              agentrunnerv1.AgentKind
	subAgents         []Agent
	before            []BeforeAgentCallback
	after             []AfterAgentCallback
	impl              RunFunc

	// parent is set once, when the agent is given to a parent's
	// constructor; a second parent is refused.
	parent atomic.Pointer[agentBase]

	// llm is set for LLM agents.
	llm *llmAgent
	// maxIterations is set for loop agents.
	maxIterations int
}

func (a *agentBase) Name() string        { return a.name }
func (a *agentBase) Description() string { return a.description }
func (a *agentBase) base() *agentBase    { return a }

// SubAgents returns a copy, so that callers cannot rewire the tree.
func (a *agentBase) SubAgents() []Agent { return append([]Agent(nil), a.subAgents...) }

// allowsTransferToParent reports whether the runner may resume this agent
// on a later turn as far as this agent is concerned; only LLM agents that
// do not disallow it qualify.
func (a *agentBase) allowsTransferToParent() bool {
	return a.llm != nil && !a.llm.disallowTransferToParent
}

// adopt validates the subtree rooted at a with the given children and makes
// a their parent. It checks names (non-empty, not "user", unique across the
// whole subtree) and that no child already has a parent; nothing is changed
// when it fails.
func (a *agentBase) adopt(children []Agent) error {
	if err := checkName(a.name); err != nil {
		return err
	}
	seen := map[string]bool{a.name: true}
	for _, c := range children {
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
		if err != nil {
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

var errEmptyName = errors.New("agent name is empty")

func checkName(name string) error {
	switch name {
	case "":
		return errEmptyName
	case UserAuthor:
		return fmt.Errorf("agent name %q is reserved for user input", name)
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

// Run wraps the agent's body with its callbacks and fills in what events
// leave out. Every kind of agent runs through here.
func (a *agentBase) Run(parent InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		ctx := parent.internal().forAgent(a)

		if ev, err, short := a.runBefore(ctx); ev != nil || err != nil || short {
			if ev != nil && !yield(ev, nil) {
				return
			}
			if err != nil && !yield(nil, ctx.agentError(err)) {
				return
			}
			if short {
				return
			}
		}
		if ctx.Ended() {
			return
		}

		for ev, err := range a.impl(ctx) {
			if err != nil {
				if !yield(nil, ctx.agentError(err)) {
					return
				}
				continue
			}
			if ev == nil {
				continue
			}
			ctx.fill(ev)
			if !ev.GetPartial() && ev.GetAuthor() == a.name {
				ctx.pending.flushInto(ev)
			}
			if !yield(ev, nil) {
				return
			}
		}
		// State set or artifacts saved after the agent's last own event
		// still need an event to land in.
		if ev := ctx.pending.event(ctx); ev != nil && !yield(ev, nil) {
			return
		}
		if ctx.Ended() {
			return
		}

		ev, err := a.runAfter(ctx)
		if ev != nil && !yield(ev, nil) {
			return
		}
		if err != nil {
			yield(nil, ctx.agentError(err))
		}
	}
}

// runBefore runs the before-callbacks. It returns the event to yield (the
// short-circuit content and/or the state the callbacks changed), the error a
// callback returned, and whether the agent's run must be skipped.
func (a *agentBase) runBefore(ctx *invocationContext) (ev *agentrunnerv1.Event, err error, short bool) {
	if len(a.before) == 0 {
		return nil, nil, false
	}
	cc := ctx.callbackContext()
	var content *agentrunnerv1.Content
	for _, cb := range a.before {
		content, err = cb(cc)
		if content != nil || err != nil {
			short = true
			break
		}
	}
	return cc.callbackEvent(content), err, short
}

// runAfter runs the after-callbacks.
func (a *agentBase) runAfter(ctx *invocationContext) (*agentrunnerv1.Event, error) {
	if len(a.after) == 0 {
		return nil, nil
	}
	cc := ctx.callbackContext()
	var content *agentrunnerv1.Content
	var err error
	for _, cb := range a.after {
		content, err = cb(cc)
		if content != nil || err != nil {
			break
		}
	}
	return cc.callbackEvent(content), err
}
