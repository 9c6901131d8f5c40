// Package budget enforces an app's budgets (AppConfig.budgets): it
// refuses a run that would start over one, and stops a run before a model
// call once one is reached.
//
// What a run, a session, a user and an app spent comes from what is
// stored: the session record's totals, the run's own stored events, and
// the store's daily spend (store.SpendStore), which the store keeps in the
// transactions that store the events. Nothing is counted in memory apart
// from the store, so replicas sharing a store share the budgets. Spend is
// counted when a model call's event is stored; runs in flight when a
// shared budget is reached may each finish the call they are in: that is
// the most a shared budget is passed by.
//
// It knows spend, the store and agents' errors only: it must not import
// the runner, another room of it, the models, tools, plugins or gRPC
// (runner/deps_test.go checks).
package budget

import (
	"context"
	"fmt"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

// Limit caps spend in tokens, in micro-units of money, or both (whichever
// is reached first); zero means no cap of that kind.
type Limit struct {
	Tokens, Micros int64
}

func (l Limit) set() bool { return l.Tokens > 0 || l.Micros > 0 }

// Budgets are an app's caps. The zero value caps nothing.
type Budgets struct {
	Run, Session, UserDaily, AppDaily Limit
	// Currency names the unit of the Micros limits in errors.
	Currency string
}

// Any reports whether any cap is set.
func (b Budgets) Any() bool {
	return b.Run.set() || b.Session.set() || b.UserDaily.set() || b.AppDaily.set()
}

func (b Budgets) daily() bool { return b.UserDaily.set() || b.AppDaily.set() }

// Reader reads what an app and a user spent on a day.
type Reader interface {
	DailySpend(ctx context.Context, app, user string, day time.Time) (userSpend, appSpend *agentrunnerv1.Spend, err error)
}

// Run is the budget check of one run.
type Run struct {
	b     Budgets
	r     Reader
	key   store.SessionKey
	runID string
	now   func() time.Time
	// before is what the session spent before this run; prior what the
	// run itself spent before this execution (a resumed run's earlier
	// events, which the session's totals include too).
	before, prior agent.Spent
	// held is what this run's calls in flight hold (reserve.go).
	held held
}

// ForRun returns the check of run runID on session sess, whose record
// rec says what the run spent so far (nothing for a new run). It is nil
// when b caps nothing.
func (b Budgets) ForRun(r Reader, sess *agentrunnerv1.Session, rec *agentrunnerv1.Run, now func() time.Time) *Run {
	if !b.Any() {
		return nil
	}
	prior := spentOf(rec.GetTotalTokens(), rec.GetUsage(), rec.GetCost())
	total := spentOf(sess.GetTotalTokens(), sess.GetUsage(), sess.GetCost())
	before := agent.Spent{Tokens: max(total.Tokens-prior.Tokens, 0), Micros: max(total.Micros-prior.Micros, 0)}
	key := store.SessionKey{App: sess.GetAppName(), User: sess.GetUserId(), Session: sess.GetSessionId()}
	return &Run{b: b, r: r, key: key, runID: rec.GetRunId(), now: now, before: before, prior: prior, held: held{free: make(chan struct{})}}
}

// spentOf is what a session's or a run's totals say was spent: their
// 64-bit total_tokens, or, for a record written before it existed, the
// 32-bit usage total.
func spentOf(total int64, u *agentrunnerv1.UsageMetadata, c *agentrunnerv1.Cost) agent.Spent {
	return agent.Spent{Tokens: max(total, int64(u.GetTotalTokenCount())), Micros: c.GetMicros()}
}

// daySpent is a day's spend: its 64-bit token sum, which a busy app's day
// needs.
func daySpent(s *agentrunnerv1.Spend) agent.Spent {
	return agent.Spent{Tokens: s.GetTotalTokens(), Micros: s.GetCost().GetMicros()}
}

// Start checks that the run may start: no budget is reached yet.
func (c *Run) Start(ctx context.Context) error {
	return c.Call(ctx, agent.Spent{})
}

// Call checks that the run may make a model call, given what this
// execution's stored events spent; it is agent.InvocationConfig.Budget.
func (c *Run) Call(ctx context.Context, spent agent.Spent) error {
	run := agent.Spent{Tokens: c.prior.Tokens + spent.Tokens, Micros: c.prior.Micros + spent.Micros}
	if err := c.check("run", "run:", c.runID, c.b.Run, run, time.Time{}); err != nil {
		return err
	}
	session := agent.Spent{Tokens: c.before.Tokens + run.Tokens, Micros: c.before.Micros + run.Micros}
	if err := c.check("session", "session:", c.key.Session, c.b.Session, session, time.Time{}); err != nil {
		return err
	}
	if !c.b.daily() {
		return nil
	}
	now := c.now().UTC()
	user, app, err := c.r.DailySpend(ctx, c.key.App, c.key.User, now)
	if err != nil {
		return fmt.Errorf("read today's spend: %w", err)
	}
	y, m, d := now.Date()
	resets := time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
	if err := c.check("user_daily", "user:", c.key.User, c.b.UserDaily, daySpent(user), resets); err != nil {
		return err
	}
	return c.check("app_daily", "app:", c.key.App, c.b.AppDaily, daySpent(app), resets)
}

// check fails when spent has reached l, naming the budget and its
// subject (kind and id, as "user:alice").
func (c *Run) check(name, kind, id string, l Limit, spent agent.Spent, resets time.Time) error {
	// Built only when a limit is reached: this runs before every model
	// call of a budgeted app.
	reached := func(unit string, limit, spent int64) error {
		return &agent.BudgetError{Budget: name, App: c.key.App, Subject: kind + id, ResetsAt: resets, Unit: unit, Limit: limit, Spent: spent}
	}
	switch {
	case l.Tokens > 0 && spent.Tokens >= l.Tokens:
		return reached("tokens", l.Tokens, spent.Tokens)
	case l.Micros > 0 && spent.Micros >= l.Micros:
		return reached(c.b.Currency, l.Micros, spent.Micros)
	}
	return nil
}
