package runner

import (
	"context"
	"fmt"
	"iter"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// WorkflowConfig configures a sequential or parallel agent.
type WorkflowConfig struct {
	Name        string
	Description string
	// SubAgents are run in order (sequential) or at the same time
	// (parallel).
	SubAgents            []Agent
	BeforeAgentCallbacks []BeforeAgentCallback
	AfterAgentCallbacks  []AfterAgentCallback
}

// LoopConfig configures a loop agent.
type LoopConfig struct {
	Name        string
	Description string
	// SubAgents are run in order, over and over.
	SubAgents []Agent
	// MaxIterations bounds the number of passes; 0 means no bound, so the
	// loop runs until an event escalates, the invocation ends or the run's
	// context is done: a loop without a bound whose children never
	// escalate relies on the run's deadline.
	MaxIterations        int
	BeforeAgentCallbacks []BeforeAgentCallback
	AfterAgentCallbacks  []AfterAgentCallback
}

func newWorkflow(kind agentrunnerv1.AgentKind, name, desc string, subs []Agent, before []BeforeAgentCallback, after []AfterAgentCallback) (*agentBase, error) {
	b := &agentBase{name: name, description: desc, kind: kind, before: before, after: after}
	if err := b.adopt(subs); err != nil {
		return nil, err
	}
	return b, nil
}

// NewSequential returns an agent that runs its sub-agents one after
// another, in the same branch, so that each sees what the previous ones
// produced.
func NewSequential(cfg WorkflowConfig) (Agent, error) {
	b, err := newWorkflow(agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL, cfg.Name, cfg.Description, cfg.SubAgents, cfg.BeforeAgentCallbacks, cfg.AfterAgentCallbacks)
	if err != nil {
		return nil, err
	}
	b.impl = func(ctx InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			for _, sub := range b.subAgents {
				if ctx.Ended() || ctx.Err() != nil {
					return
				}
				for ev, err := range sub.Run(ctx) {
					if !yield(ev, err) {
						return
					}
				}
			}
		}
	}
	return b, nil
}

// NewLoop returns an agent that runs its sub-agents in order, repeatedly,
// until MaxIterations passes are done, an event escalates (the sub-agent
// that escalated finishes first), or the invocation ends.
func NewLoop(cfg LoopConfig) (Agent, error) {
	if cfg.MaxIterations < 0 {
		return nil, fmt.Errorf("loop agent %q: negative MaxIterations %d", cfg.Name, cfg.MaxIterations)
	}
	b, err := newWorkflow(agentrunnerv1.AgentKind_AGENT_KIND_LOOP, cfg.Name, cfg.Description, cfg.SubAgents, cfg.BeforeAgentCallbacks, cfg.AfterAgentCallbacks)
	if err != nil {
		return nil, err
	}
	b.maxIterations = cfg.MaxIterations
	b.impl = func(ctx InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if len(b.subAgents) == 0 {
				return // nothing would ever escalate
			}
			for i := 0; b.maxIterations == 0 || i < b.maxIterations; i++ {
				for _, sub := range b.subAgents {
					if ctx.Ended() || ctx.Err() != nil {
						return
					}
					escalated := false
					for ev, err := range sub.Run(ctx) {
						if ev.GetActions().GetEscalate() && !ev.GetPartial() {
							escalated = true
						}
						if !yield(ev, err) {
							return
						}
					}
					if escalated {
						return
					}
				}
			}
		}
	}
	return b, nil
}

// NewParallel returns an agent that runs its sub-agents at the same time,
// each in its own branch ("<branch>.<parallel>.<child>"), so that siblings
// do not see each other's events. Their events are interleaved in the order
// they are produced; each child waits until its event is persisted before it
// goes on. The agent ends when every child has ended. A child's error is
// delivered, then the other children are cancelled; cancellation of the run
// cancels them all. No child goroutine outlives the agent's Run.
func NewParallel(cfg WorkflowConfig) (Agent, error) {
	b, err := newWorkflow(agentrunnerv1.AgentKind_AGENT_KIND_PARALLEL, cfg.Name, cfg.Description, cfg.SubAgents, cfg.BeforeAgentCallbacks, cfg.AfterAgentCallbacks)
	if err != nil {
		return nil, err
	}
	b.impl = func(ctx InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			runParallel(ctx.internal(), b, yield)
		}
	}
	return b, nil
}

// parallelItem is one event or error from a child, with the channel the
// child waits on until the item has been handled downstream.
type parallelItem struct {
	ev   *agentrunnerv1.Event
	err  error
	done chan struct{}
}

func runParallel(ictx *invocationContext, b *agentBase, yield func(*agentrunnerv1.Event, error) bool) {
	if len(b.subAgents) == 0 {
		return
	}
	cctx, cancel := context.WithCancel(ictx.Context)
	items := make(chan parallelItem)
	var wg sync.WaitGroup
	prefix := b.name
	if ictx.branch != "" {
		prefix = ictx.branch + "." + b.name
	}
	for _, sub := range b.subAgents {
		child := ictx.derive(cctx, prefix+"."+sub.Name())
		wg.Go(func() {
			// The child's iterator runs on this goroutine; it only ever
			// hands items to the parent, which alone yields them.
			for ev, err := range sub.Run(child) {
				it := parallelItem{ev: ev, err: err, done: make(chan struct{})}
				select {
				case items <- it:
				case <-cctx.Done():
					return
				}
				select {
				case <-it.done:
				case <-cctx.Done():
					return
				}
			}
		})
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	// Whatever ends the loop below, cancel the children and wait for them:
	// a child blocked on a send or an acknowledgement sees cctx done.
	defer func() {
		cancel()
		<-finished
	}()

	for {
		select {
		case it := <-items:
			ok := yield(it.ev, it.err)
			close(it.done)
			if !ok {
				return
			}
			if it.err != nil {
				return // a failed child stops its siblings
			}
		case <-finished:
			return
		case <-ictx.Done():
			yield(nil, ictx.Err())
			return
		}
	}
}
