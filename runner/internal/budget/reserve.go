package budget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

// holdTTL is how long a daily hold counts if its release never comes
// (its replica died mid-call): longer than any call with its retries.
const holdTTL = 30 * time.Minute

// held is what the calls in flight of one run hold against its run and
// session budgets, which only this run spends while it runs (a session
// runs one run at a time). Parallel branches share it.
type held struct {
	mu       sync.Mutex
	spent    agent.Spent
	uncapped int
	// free is closed and replaced each time a hold is released, for the
	// calls that wait on an uncapped one.
	free chan struct{}
}

// Reserve holds est against every budget of the run before a model call,
// given what this execution's stored events spent (spent, read under the
// holds' lock: a hold is released only once its call's event is
// recorded, so that a call never sees neither); it is
// agent.InvocationConfig.Reserve. The run's and the session's budgets are
// held in memory; the daily ones in the store (store.SpendHolder), which
// all runs and replicas share. While an uncapped call (no output cap)
// holds a budget whole, the call waits for it to be released, then checks
// again. release ends the hold; the caller calls it once the call's event
// is stored, so that its usage is counted before the hold stops counting.
func (c *Run) Reserve(ctx context.Context, spent func() agent.Spent, est agent.Estimate) (release func(), err error) {
	for {
		release, wait, err := c.tryReserve(ctx, spent, est)
		if wait == nil {
			return release, err
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// tryReserve makes one attempt; a non-nil wait means another call holds a
// budget whole: try again once it is closed.
func (c *Run) tryReserve(ctx context.Context, spentNow func() agent.Spent, est agent.Estimate) (release func(), wait <-chan struct{}, err error) {
	c.held.mu.Lock()
	if c.held.free == nil {
		c.held.free = make(chan struct{})
	}
	if c.held.uncapped > 0 {
		defer c.held.mu.Unlock()
		return nil, c.held.free, nil
	}
	// Read now, not when the call first asked: a call that waited on
	// another counts what that one stored.
	spent := spentNow()
	run := agent.Spent{Tokens: c.prior.Tokens + spent.Tokens + c.held.spent.Tokens, Micros: c.prior.Micros + spent.Micros + c.held.spent.Micros}
	if err := c.checkHold("run", "run:", c.runID, c.b.Run, run, est); err != nil {
		c.held.mu.Unlock()
		return nil, nil, err
	}
	session := agent.Spent{Tokens: c.before.Tokens + run.Tokens, Micros: c.before.Micros + run.Micros}
	if err := c.checkHold("session", "session:", c.key.Session, c.b.Session, session, est); err != nil {
		c.held.mu.Unlock()
		return nil, nil, err
	}
	c.held.spent.Tokens += est.Tokens
	c.held.spent.Micros += est.Micros
	if est.Uncapped {
		c.held.uncapped++
	}
	c.held.mu.Unlock()
	local := func() { c.unhold(est) }
	daily, wait, err := c.holdDaily(ctx, est)
	if err != nil || wait != nil {
		local()
		return nil, wait, err
	}
	return func() { daily(); local() }, nil, nil
}

// unhold gives back what tryReserve held in memory.
func (c *Run) unhold(est agent.Estimate) {
	c.held.mu.Lock()
	defer c.held.mu.Unlock()
	c.held.spent.Tokens -= est.Tokens
	c.held.spent.Micros -= est.Micros
	if est.Uncapped {
		c.held.uncapped--
	}
	close(c.held.free)
	c.held.free = make(chan struct{})
}

// checkHold fails when l has no room for est on top of spent: a capped
// call needs room for all it may spend; an uncapped one only some room
// left, what it spends past the limit being the one call a budget may be
// passed by.
func (c *Run) checkHold(name, kind, id string, l Limit, spent agent.Spent, est agent.Estimate) error {
	if err := c.check(name, kind, id, l, spent, time.Time{}); err != nil {
		return err
	}
	over := func(limit, spent, asked int64) bool {
		if est.Uncapped {
			asked = 1
		}
		return limit > 0 && spent+max(asked, 1) > limit
	}
	switch {
	case over(l.Tokens, spent.Tokens, est.Tokens):
		return &agent.BudgetError{Budget: name, App: c.key.App, Subject: kind + id, Unit: "tokens", Limit: l.Tokens, Spent: spent.Tokens}
	case over(l.Micros, spent.Micros, est.Micros):
		return &agent.BudgetError{Budget: name, App: c.key.App, Subject: kind + id, Unit: c.b.Currency, Limit: l.Micros, Spent: spent.Micros}
	}
	return nil
}

// holdDaily holds est against the daily budgets in the store; without
// daily budgets, or a store that holds, it only checks them (Call).
func (c *Run) holdDaily(ctx context.Context, est agent.Estimate) (release func(), wait <-chan struct{}, err error) {
	noop := func() {}
	if !c.b.daily() {
		return noop, nil, nil
	}
	h, ok := c.r.(store.SpendHolder)
	if !ok {
		return noop, nil, c.Call(ctx, agent.Spent{})
	}
	now := c.now().UTC()
	hold := store.SpendHold{ID: newHoldID(), App: c.key.App, User: c.key.User, Day: now, Tokens: est.Tokens, Micros: est.Micros,
		Uncapped: est.Uncapped, UserLimit: store.SpendLimit(c.b.UserDaily), AppLimit: store.SpendLimit(c.b.AppDaily), Expires: now.Add(holdTTL)}
	err = h.HoldSpend(ctx, hold)
	var refused *store.HoldRefusal
	switch {
	case errors.As(err, &refused) && refused.Busy:
		// Another run's uncapped call holds the budget whole: poll, as
		// its release is in another run (or replica).
		poll := make(chan struct{})
		time.AfterFunc(busyPoll, func() { close(poll) })
		return nil, poll, nil
	case errors.As(err, &refused):
		return nil, nil, c.dailyRefusal(refused, now)
	case err != nil:
		return nil, nil, fmt.Errorf("hold today's spend: %w", err)
	}
	return func() {
		// The hold expires anyway; a failed release only holds the
		// budget longer than needed.
		if err := h.ReleaseSpend(context.WithoutCancel(ctx), c.key.App, hold.ID); err != nil {
			slog.Default().Warn("release spend hold", "app", c.key.App, "err", err)
		}
	}, nil, nil
}

// busyPoll is how often a call waiting on another run's uncapped call
// asks the store again.
const busyPoll = 20 * time.Millisecond

// dailyRefusal is the BudgetError of a refused daily hold.
func (c *Run) dailyRefusal(r *store.HoldRefusal, now time.Time) error {
	y, m, d := now.Date()
	e := &agent.BudgetError{Budget: "user_daily", App: c.key.App, Subject: "user:" + c.key.User, ResetsAt: time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC),
		Unit: "tokens", Limit: r.Limit, Spent: r.Spent + r.Held}
	if r.Scope == "app" {
		e.Budget, e.Subject = "app_daily", "app:"+c.key.App
	}
	if r.Unit == "micros" {
		e.Unit = c.b.Currency
	}
	return e
}

func newHoldID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
