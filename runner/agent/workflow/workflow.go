// Package workflow holds the agents that orchestrate their children
// without a model: sequential, parallel and loop agents.
//
// Imports: agent and the generated messages. It must not import the
// runner, llmagent, tool, model, plugin or gRPC (runner/deps_test.go
// checks).
package workflow

import (
	"context"
	"fmt"
	"iter"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// Config configures a sequential or parallel agent.
type Config struct {
	Name        string
	Description string
	// SubAgents are run in order (sequential) or at the same time
	// (parallel).
	SubAgents            []agent.Agent
	BeforeAgentCallbacks []agent.BeforeAgentCallback
	AfterAgentCallbacks  []agent.AfterAgentCallback
}

// LoopConfig configures a loop agent.
type LoopConfig struct {
	Name        string
	Description string
	// SubAgents are run in order, over and over.
	SubAgents []agent.Agent
	// MaxIterations bounds the number of passes; 0 means no bound, so the
	// loop runs until an event escalates, the invocation ends or the run's
	// context is done: a loop without a bound whose children never
	// escalate relies on the run's deadline.
	MaxIterations        int
	BeforeAgentCallbacks []agent.BeforeAgentCallback
	AfterAgentCallbacks  []agent.AfterAgentCallback
}

func newWorkflow(kind agentrunnerv1.AgentKind, cfg Config, run func(subs []agent.Agent) agent.RunFunc, describe func(*agentrunnerv1.AgentInfo, *agent.Tree)) (agent.Agent, error) {
	// The children are fixed once the agent is made; the copy keeps the
	// caller's slice out of it.
	subs := append([]agent.Agent(nil), cfg.SubAgents...)
	return agent.New(agent.Config{
		Name:                 cfg.Name,
		Description:          cfg.Description,
		SubAgents:            subs,
		Run:                  run(subs),
		BeforeAgentCallbacks: cfg.BeforeAgentCallbacks,
		AfterAgentCallbacks:  cfg.AfterAgentCallbacks,
		Kind:                 kind,
		Describe:             describe,
	})
}

// NewSequential returns an agent that runs its sub-agents one after
// another, in the same branch, so that each sees what the previous ones
// produced.
func NewSequential(cfg Config) (agent.Agent, error) {
	return newWorkflow(agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL, cfg, func(subs []agent.Agent) agent.RunFunc {
		return func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) {
				for _, sub := range subs {
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
	}, nil)
}

// NewLoop returns an agent that runs its sub-agents in order, repeatedly,
// until MaxIterations passes are done, an event escalates (the sub-agent
// that escalated finishes first), or the invocation ends.
func NewLoop(cfg LoopConfig) (agent.Agent, error) {
	if cfg.MaxIterations < 0 {
		return nil, fmt.Errorf("loop agent %q: negative MaxIterations %d", cfg.Name, cfg.MaxIterations)
	}
	maxIter := cfg.MaxIterations
	wcfg := Config{Name: cfg.Name, Description: cfg.Description, SubAgents: cfg.SubAgents,
		BeforeAgentCallbacks: cfg.BeforeAgentCallbacks, AfterAgentCallbacks: cfg.AfterAgentCallbacks}
	return newWorkflow(agentrunnerv1.AgentKind_AGENT_KIND_LOOP, wcfg, func(subs []agent.Agent) agent.RunFunc {
		return func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) { runLoop(ctx, subs, maxIter, yield) }
		}
	}, func(info *agentrunnerv1.AgentInfo, _ *agent.Tree) { info.MaxIterations = int32(maxIter) })
}

func runLoop(ctx agent.InvocationContext, subs []agent.Agent, maxIter int, yield func(*agentrunnerv1.Event, error) bool) {
	if len(subs) == 0 {
		return // nothing would ever escalate
	}
	for i := 0; maxIter == 0 || i < maxIter; i++ {
		for _, sub := range subs {
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
			// A child that escalated before a resumed run was cut is not
			// run again; the loop stops as it did then.
			if escalated || agent.EscalatedBeforeCut(ctx) {
				return
			}
		}
	}
}

// NewParallel returns an agent that runs its sub-agents at the same time,
// each in its own branch ("<branch>.<parallel>.<child>"), so that siblings
// do not see each other's events. Their events are interleaved in the order
// they are produced; each child waits until its event is persisted before it
// goes on. The agent ends when every child has ended. A child's error is
// delivered, then the other children are cancelled; cancellation of the run
// cancels them all. A panic on a child's goroutine is recovered into that
// child's in-band error. No child goroutine outlives the agent's Run.
func NewParallel(cfg Config) (agent.Agent, error) {
	var self agent.Agent
	a, err := newWorkflow(agentrunnerv1.AgentKind_AGENT_KIND_PARALLEL, cfg, func(subs []agent.Agent) agent.RunFunc {
		return func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) { runParallel(ctx, self.Name(), subs, yield) }
		}
	}, nil)
	self = a
	return a, err
}

// parallelItem is one event or error from a child, with the channel the
// child waits on until the item has been handled downstream.
type parallelItem struct {
	ev   *agentrunnerv1.Event
	err  error
	done chan struct{}
}

func runParallel(ctx agent.InvocationContext, name string, subs []agent.Agent, yield func(*agentrunnerv1.Event, error) bool) {
	if len(subs) == 0 {
		return
	}
	cctx, cancel := context.WithCancel(ctx)
	items := make(chan parallelItem)
	var wg sync.WaitGroup
	prefix := name
	if ctx.Branch() != "" {
		prefix = ctx.Branch() + "." + name
	}
	for _, sub := range subs {
		child := agent.WithBranch(ctx, cctx, prefix+"."+sub.Name())
		wg.Go(func() { runChild(cctx, child, sub, items) })
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
		case <-ctx.Done():
			yield(nil, ctx.Err())
			return
		}
	}
}

// runChild runs one child on its own goroutine. The child's iterator runs
// here; it only ever hands items to the parent, which alone yields them.
// Its body is recovered by agent.Run already; the guard here catches
// anything else, since a panic on this goroutine would kill the process.
func runChild(cctx context.Context, child agent.InvocationContext, sub agent.Agent, items chan<- parallelItem) {
	send := func(ev *agentrunnerv1.Event, err error) bool {
		it := parallelItem{ev: ev, err: err, done: make(chan struct{})}
		select {
		case items <- it:
		case <-cctx.Done():
			return false
		}
		select {
		case <-it.done:
			return true
		case <-cctx.Done():
			return false
		}
	}
	stopped, panicked := agent.RangeGuarded(child, agent.Logger(child), "parallel branch "+child.Branch(), sub.Run(child), send)
	if !stopped && panicked != nil {
		send(nil, &agent.AgentError{Agent: sub.Name(), Err: panicked})
	}
}
