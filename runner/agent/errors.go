package agent

import (
	"context"
	"errors"
	"fmt"
)

// ErrMaxLLMCalls ends a run that reached its max_llm_calls limit.
var ErrMaxLLMCalls = errors.New("max LLM calls reached")

// AgentError is an error an agent produced during a run (or a plugin hook
// or callback produced on its behalf). The runner yields it in place of an
// event and the run goes on; every other error the runner yields is
// terminal and the last element of the sequence.
type AgentError struct {
	// Agent is the name of the agent that failed.
	Agent string
	// Err is what went wrong.
	Err error
}

func (e *AgentError) Error() string { return fmt.Sprintf("agent %s: %v", e.Agent, e.Err) }

func (e *AgentError) Unwrap() error { return e.Err }

// PanicError is a panic recovered from an agent's body, a callback, a
// plugin hook, a tool or a model stream. The stack is logged, never sent.
type PanicError struct {
	// Where names what panicked ("agent x", "tool y", "plugin z before_agent").
	Where string
	// Value is the value passed to panic.
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("%s panicked: %v", e.Where, e.Value) }

// IsTerminal reports whether err, yielded by an agent, ends the run rather
// than being delivered in-band: the LLM call limit was reached, or the
// run's context is done.
func IsTerminal(ctx context.Context, err error) bool {
	return errors.Is(err, ErrMaxLLMCalls) ||
		(ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)))
}

// asAgentError wraps err for in-band delivery as the error of agent name,
// unless it is one already or ends the run.
func asAgentError(ctx context.Context, name string, err error) error {
	var ae *AgentError
	if errors.As(err, &ae) || IsTerminal(ctx, err) {
		return err
	}
	return &AgentError{Agent: name, Err: err}
}
