package agent

import (
	"context"
	"log/slog"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/seal"
)

// This file is the kit agent implementations build on (the LLM agent,
// workflow agents, custom agents that call models or run children in
// goroutines): plumbing that does not belong on InvocationContext.

// NewCallbackContext returns a context for a group of callbacks run on
// behalf of ctx's agent. Its state changes and artifact saves are kept
// apart from the agent's until FlushActions moves them into an event.
func NewCallbackContext(ctx InvocationContext) CallbackContext {
	return ctx.impl().callbackContext()
}

// FlushActions moves the state changes and artifact saves made through cc
// into ev's actions; what ev already carries for a key wins.
func FlushActions(cc CallbackContext, ev *agentrunnerv1.Event) {
	cc.impl().pending.flushInto(ev)
}

// FillEvent completes an event of ctx's agent as the runner will see it:
// author (the agent, or "user" for content of role "user"), branch and
// invocation id, where they are empty.
func FillEvent(ctx CallbackContext, ev *agentrunnerv1.Event) { ctx.impl().fill(ev) }

// WithBranch returns ctx running under c (for cancellation) in branch, for
// a child an agent runs on a goroutine of its own, as parallel agents do.
func WithBranch(ctx InvocationContext, c context.Context, branch string) InvocationContext {
	ic := ctx.impl()
	return &invocationContext{Context: c, inv: ic.inv, agent: ic.agent, branch: branch, pending: &pendingActions{}}
}

// CountModelCall counts a model call against the run's max_llm_calls; past
// the limit it returns an error wrapping ErrMaxLLMCalls, which ends the
// run. An agent calls it before every model call it makes.
func CountModelCall(ctx CallbackContext) error {
	ic := ctx.impl()
	return ic.inv.countLLMCall(ic)
}

// ReserveModelCall is CountModelCall for a call that may spend est: it
// also holds est against the run's budgets until release is called, which
// the agent does once the call's event is stored (or the call failed).
func ReserveModelCall(ctx CallbackContext, est Estimate) (release func(), err error) {
	ic := ctx.impl()
	return ic.inv.reserveLLMCall(ic, est)
}

// NewID returns a fresh id from the runner's generator.
func NewID(ctx CallbackContext) string { return ctx.impl().inv.cfg.NewID() }

// Now returns the time on the runner's clock: the one event timestamps
// come from, so that timings and timestamps agree, and that tests can set.
func Now(ctx CallbackContext) time.Time { return ctx.impl().inv.cfg.Now() }

// Logger returns the runner's logger.
func Logger(ctx CallbackContext) *slog.Logger { return ctx.impl().inv.log }

// TreeOf returns the tree the runner serves, in which ctx's agent runs.
func TreeOf(ctx CallbackContext) *Tree { return ctx.impl().inv.cfg.Tree }

// HooksOf returns the runner's plugin hooks, nil when it has none. The LLM
// agent looks on it for the model and tool hooks.
func HooksOf(ctx CallbackContext) Hooks { return ctx.impl().inv.hooks }

// SharedEvents returns the stored events visible in ctx's branch, oldest
// first: the instances the runner's history cache holds, not copies. It is
// sealed (only code under runner/ can make a seal.Key) and is for the LLM
// agent, which reads the history on every model call and must not pay for
// a copy of it each time; it hands them only to the model, and copies what
// callbacks and plugins may see.
func SharedEvents(ctx InvocationContext, _ seal.Key) []*agentrunnerv1.Event {
	ic := ctx.impl()
	return ic.inv.eventsIn(ic.branch)
}

// SharedUserContent returns the stored user message the run answers, not a
// copy; sealed like SharedEvents, for the LLM agent, which looks at it at
// the start of every turn.
func SharedUserContent(ctx InvocationContext, _ seal.Key) *agentrunnerv1.Content {
	return ctx.impl().inv.userContent
}

// RetryCalls returns the ids of the calls the run was asked to run again
// (see InvocationConfig.RetryCalls); sealed like SharedEvents, for the LLM
// agent, which runs those of its own calls before its next step.
func RetryCalls(ctx InvocationContext, _ seal.Key) []string {
	return ctx.impl().inv.cfg.RetryCalls
}

// EscalatedBeforeCut reports, and forgets, that a child ctx's agent ran
// had escalated before a resumed run was cut (see Replay): the child was
// skipped or went on, and the loop running it stops as it would have.
func EscalatedBeforeCut(ctx InvocationContext) bool {
	return ctx.impl().replayEscalated.Swap(false)
}
