package runner

import "github.com/agentrunner/agentrunner/runner/internal/budget"

// Budgets cap what an app's runs spend: per run, per session, per user
// per UTC day and for the app per UTC day, each in tokens, money or both.
// A run that would start over one is refused with an error wrapping
// agent.ErrBudgetExceeded (an *agent.BudgetError naming it); a run that
// reaches one stops before its next model call with that error in band
// and ends RUN_STATUS_FAILED. Spend is counted from what is stored, so
// replicas sharing a store share the budgets; runs in flight when a
// shared budget is reached may each finish the model call they are in,
// which is the most a shared budget is passed by. The zero value caps
// nothing.
type Budgets struct {
	Run, Session, UserDaily, AppDaily BudgetLimit
	// Currency names the unit of the Micros limits in errors.
	Currency string
}

// BudgetLimit is one cap of Budgets: in tokens, in micro-units of money,
// or both (whichever is reached first); zero means no cap of that kind.
type BudgetLimit struct {
	Tokens, Micros int64
}

// Any reports whether any cap is set.
func (b Budgets) Any() bool { return b.caps().Any() }

// caps is b as the budget checks take it.
func (b Budgets) caps() budget.Budgets {
	return budget.Budgets{
		Run: budget.Limit(b.Run), Session: budget.Limit(b.Session),
		UserDaily: budget.Limit(b.UserDaily), AppDaily: budget.Limit(b.AppDaily),
		Currency: b.Currency,
	}
}
