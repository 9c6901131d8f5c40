package agent

import (
	"fmt"
	"iter"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// Hooks is the runner-wide plugin seam as the agent core calls it, around
// every agent of every run. *plugin.Manager implements it, and the model
// and tool hooks the LLM agent looks for. A hook that returns content or
// an error short-circuits exactly as the agent's own callback would, and
// the agent's callbacks of that kind are then skipped.
type Hooks interface {
	BeforeAgent(ctx CallbackContext) (*agentrunnerv1.Content, error)
	AfterAgent(ctx CallbackContext) (*agentrunnerv1.Content, error)
}

// Run wraps the agent's body with the plugins' hooks and its callbacks,
// fills in what events leave out, and recovers panics. Every agent runs
// through here.
func (a *base) Run(parent InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		ctx := parent.impl().forAgent(a)
		o := ctx.inv.cfg.Replay.take(a.name)
		if o != nil && o.escalated {
			parent.impl().replayEscalated.Store(true)
		}
		if o != nil && o.done {
			return // it finished before the run was cut (see Replay)
		}
		if o == nil || !o.started {
			if stop := a.runBefore(ctx, yield); stop || ctx.Ended() {
				return
			}
		}
		more, ended := a.runResumedBody(ctx, o, yield)
		if !more {
			return
		}
		// State set or artifacts saved after the agent's last own event
		// still need an event to land in.
		ev := ctx.pending.event(ctx)
		if !ended && a.kind == agentrunnerv1.AgentKind_AGENT_KIND_CUSTOM && ctx.hasParent() {
			ev = ctx.endEvent(ev)
		}
		if ev != nil && !yield(ev, nil) {
			return
		}
		if ctx.Ended() {
			return
		}
		a.runAfter(ctx, yield)
	}
}

// runResumedBody runs the agent's body, or, for an agent that had handed
// over to a transfer target before the run was cut, goes on with the
// target as its body would have. It reports whether the consumer wants
// more, and whether the events yielded ended the agent's turn (see
// runBody); a target answers for the agent that handed over.
func (a *base) runResumedBody(ctx *invocationContext, o *occurrence, yield func(*agentrunnerv1.Event, error) bool) (more, ended bool) {
	if o == nil || o.transfer == "" {
		return a.runBody(ctx, yield)
	}
	target, ok := ctx.inv.cfg.Tree.Find(o.transfer)
	if !ok {
		return yield(nil, &AgentError{Agent: a.name, Err: fmt.Errorf("transfer to unknown agent %q", o.transfer)}), true
	}
	for ev, err := range target.Run(ctx) {
		if !yield(ev, err) {
			return false, true
		}
	}
	return true, true
}

// hasParent reports whether the context's agent runs under another in
// its tree.
func (c *invocationContext) hasParent() bool {
	t := c.inv.cfg.Tree
	return t != nil && t.Parent(c.agent) != nil
}

// endEvent records the end of a custom agent whose events did not: its
// state-only event (pending, the changes made after its last event), or
// an empty event of its own, marked turn_complete. A custom agent has
// ended once its Run returned; with its end stored, a resume never runs
// it again (Replay), and one cut before it runs again whole. ADK leaves
// the marking to the agent, and most custom agents do not mark. Only an
// agent with a parent needs it: a root agent's end is the run's, which
// its final record says, written as soon as the agent returns.
func (c *invocationContext) endEvent(pending *agentrunnerv1.Event) *agentrunnerv1.Event {
	if pending == nil {
		pending = &agentrunnerv1.Event{}
		c.fill(pending)
	}
	pending.TurnComplete = true
	return pending
}

// runBefore runs the before_agent hooks and callbacks and yields what they
// produced: their content and state changes as one event, then their
// error. It reports whether the agent must not run (short-circuited, or the
// consumer stopped).
func (a *base) runBefore(ctx *invocationContext, yield func(*agentrunnerv1.Event, error) bool) (stop bool) {
	hooks := ctx.inv.hooks
	if hooks == nil && len(a.before) == 0 {
		return false
	}
	cc := ctx.callbackContext()
	content, err := a.callBefore(cc, hooks)
	if ev := cc.callbackEvent(content); ev != nil && !yield(ev, nil) {
		return true
	}
	if err != nil && !yield(nil, asAgentError(ctx, a.name, err)) {
		return true
	}
	return content != nil || err != nil
}

func (a *base) callBefore(cc *invocationContext, hooks Hooks) (content *agentrunnerv1.Content, err error) {
	if hooks != nil {
		if content, err = hooks.BeforeAgent(cc); content != nil || err != nil {
			return content, err
		}
	}
	for i, cb := range a.before {
		err = Guard(cc, cc.inv.log, fmt.Sprintf("agent %s before_agent callback %d", a.name, i), func() (e error) {
			content, e = cb(cc)
			return e
		})
		if content != nil || err != nil {
			return content, err
		}
	}
	return nil, nil
}

// runBody ranges over the agent's body, completing its events. It reports
// whether the consumer wants more, and whether the agent's turn ended in
// what it yielded: its last event of its own is a final answer marked
// turn_complete or a hand-over (whose target answers for it), or its body
// panicked (the in-band error ends it).
func (a *base) runBody(ctx *invocationContext, yield func(*agentrunnerv1.Event, error) bool) (more, ended bool) {
	// The body is called inside the guard, so that a panic while it builds
	// its iterator is recovered too.
	body := func(y func(*agentrunnerv1.Event, error) bool) { a.impl(ctx)(y) }
	stopped, panicked := RangeGuarded(ctx, ctx.inv.log, "agent "+a.name, body, func(ev *agentrunnerv1.Event, err error) bool {
		if err != nil {
			return yield(nil, asAgentError(ctx, a.name, err))
		}
		if ev == nil {
			return true
		}
		ctx.fill(ev)
		if !ev.GetPartial() && ev.GetAuthor() == a.name {
			ctx.pending.flushInto(ev)
			ended = (Finished(ev) && ev.GetTurnComplete()) || ev.GetActions().GetTransferToAgent() != ""
		}
		return yield(ev, nil)
	})
	if stopped {
		return false, ended
	}
	if panicked != nil {
		return yield(nil, &AgentError{Agent: a.name, Err: panicked}), true
	}
	return true, ended
}

// runAfter runs the after_agent hooks and callbacks and yields what they
// produced.
func (a *base) runAfter(ctx *invocationContext, yield func(*agentrunnerv1.Event, error) bool) {
	hooks := ctx.inv.hooks
	if hooks == nil && len(a.after) == 0 {
		return
	}
	cc := ctx.callbackContext()
	content, err := a.callAfter(cc, hooks)
	if ev := cc.callbackEvent(content); ev != nil && !yield(ev, nil) {
		return
	}
	if err != nil {
		yield(nil, asAgentError(ctx, a.name, err))
	}
}

func (a *base) callAfter(cc *invocationContext, hooks Hooks) (content *agentrunnerv1.Content, err error) {
	if hooks != nil {
		if content, err = hooks.AfterAgent(cc); content != nil || err != nil {
			return content, err
		}
	}
	for i, cb := range a.after {
		err = Guard(cc, cc.inv.log, fmt.Sprintf("agent %s after_agent callback %d", a.name, i), func() (e error) {
			content, e = cb(cc)
			return e
		})
		if content != nil || err != nil {
			return content, err
		}
	}
	return nil, nil
}
