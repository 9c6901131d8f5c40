package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
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
	// Branch is the branch the agent ran in (empty outside parallel
	// agents): the runner stores the failure there, as the agent's own
	// events are.
	Branch string
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
	var branch string
	if ic, ok := ctx.(interface{ Branch() string }); ok {
		branch = ic.Branch()
	}
	return &AgentError{Agent: name, Branch: branch, Err: err}
}

// ErrBudgetExceeded is what every *BudgetError wraps: a run was refused,
// or stopped before a model call, because a budget of its app was
// reached.
var ErrBudgetExceeded = errors.New("budget exceeded")

// BudgetError names the budget a run reached: which one, its limit, what
// was spent, and when it resets.
type BudgetError struct {
	// Budget is "run", "session", "user_daily" or "app_daily"; App the
	// app whose budget it is.
	Budget, App string
	// Subject is what spent: "run:<id>", "session:<id>", "user:<id>" or
	// "app:<name>".
	Subject string
	// Unit is "tokens" or the currency of Limit and Spent, which are
	// then micro-units.
	Unit         string
	Limit, Spent int64
	// ResetsAt is when a daily budget starts again (the next UTC
	// midnight); zero for the others, which never reset.
	ResetsAt time.Time
}

// Error never gives an app budget's spend: the message reaches every
// user of the app (a refusal, a failed run's stored error, a stream's
// in-band error), and the app's total is for those who may read it
// (GetUsage of every user). WithSpend gives it, for them.
func (e *BudgetError) Error() string { return e.message(!e.SpendPrivate()) }

// WithSpend is the message with what was spent, whatever the budget.
func (e *BudgetError) WithSpend() string { return e.message(true) }

// SpendPrivate reports whether Spent is the app's total, which only a
// caller allowed every user's usage may see.
func (e *BudgetError) SpendPrivate() bool { return e.Budget == "app_daily" }

func (e *BudgetError) message(spend bool) string {
	amount := func(v int64) string {
		if e.Unit == "tokens" {
			return fmt.Sprintf("%d tokens", v)
		}
		return FormatMicros(v) + " " + e.Unit
	}
	msg := fmt.Sprintf("budget %s of app %q reached: %s spent %s of %s", e.Budget, e.App, e.Subject, amount(e.Spent), amount(e.Limit))
	if !spend {
		msg = fmt.Sprintf("budget %s of app %q reached: %s reached its limit of %s", e.Budget, e.App, e.Subject, amount(e.Limit))
	}
	if !e.ResetsAt.IsZero() {
		msg += "; it resets at " + e.ResetsAt.UTC().Format(time.RFC3339)
	}
	return msg
}

func (e *BudgetError) Unwrap() error { return ErrBudgetExceeded }

// FormatMicros writes an amount of micro-units in units, with at least
// two decimals and at most six: 1500000 is "1.50", 1234 is "0.001234".
func FormatMicros(v int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", v%1_000_000), "0")
	for len(frac) < 2 {
		frac += "0"
	}
	return fmt.Sprintf("%s%d.%s", sign, v/1_000_000, frac)
}
