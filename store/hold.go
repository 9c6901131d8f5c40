package store

import (
	"context"
	"fmt"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// SpendHolder reserves what a model call may spend against an app's daily
// budgets before the call, so that calls in flight at once, in any run
// and on any replica sharing the store, see each other's reservations.
// A hold lasts until it is released (after the call's event is stored,
// whose usage the ledger then counts) or, should its holder die, until it
// expires.
type SpendHolder interface {
	// HoldSpend adds h to the holds of its user's and its app's day when
	// each daily limit h carries still has room for it: the day's ledger
	// plus the holds outstanding plus h's own within the limit. The check
	// and the hold are one atomic step across replicas. A refusal is a
	// *HoldRefusal.
	HoldSpend(ctx context.Context, h SpendHold) error
	// ReleaseSpend removes the hold id of app; a hold gone already is no
	// error.
	ReleaseSpend(ctx context.Context, app, id string) error
}

// SpendHold is one model call's reservation against daily budgets.
type SpendHold struct {
	// ID names the hold, fresh for each call.
	ID        string
	App, User string
	// Day is any instant of the UTC day the hold counts on.
	Day time.Time
	// Tokens and Micros are what the call may spend: its prompt estimate
	// plus its output cap, priced.
	Tokens, Micros int64
	// Uncapped: the call has no output cap, so it may spend any amount.
	// Such a hold leaves no room to anyone else while it lasts, so that a
	// budget is passed by at most that one call.
	Uncapped bool
	// User and App are the daily limits (zero: none of that kind).
	UserLimit, AppLimit SpendLimit
	// Expires is when the hold stops counting if never released.
	Expires time.Time
}

// SpendLimit caps a day's spend in tokens, micro-units, or both.
type SpendLimit struct {
	Tokens, Micros int64
}

func (l SpendLimit) set() bool { return l.Tokens > 0 || l.Micros > 0 }

// HoldRefusal is HoldSpend's refusal: the budget (Scope "user" or "app")
// has no room, in Unit ("tokens" or "micros"), for the hold.
type HoldRefusal struct {
	Scope, Unit string
	// Limit is the budget; Spent the day's ledger and Held the holds
	// outstanding; Busy that an uncapped call in flight holds it whole.
	Limit, Spent, Held int64
	Busy               bool
}

func (e *HoldRefusal) Error() string {
	if e.Busy {
		return fmt.Sprintf("%s daily budget in %s held whole by a call in flight", e.Scope, e.Unit)
	}
	return fmt.Sprintf("%s daily budget of %d %s: %d spent, %d held", e.Scope, e.Limit, e.Unit, e.Spent, e.Held)
}

// Held is the sum of holds outstanding on one user's or app's day.
type Held struct {
	Tokens, Micros int64
	// Uncapped counts the uncapped holds among them.
	Uncapped int
}

// Add counts h.
func (s *Held) Add(h SpendHold) {
	s.Tokens += h.Tokens
	s.Micros += h.Micros
	if h.Uncapped {
		s.Uncapped++
	}
}

// CheckHold decides HoldSpend for a store: spent is the day's ledger of
// the user and of the app, held their holds outstanding. Every store
// decides the same way.
func CheckHold(h SpendHold, userSpent, appSpent *agentrunnerv1.Spend, userHeld, appHeld Held) error {
	for _, c := range []struct {
		scope string
		limit SpendLimit
		spent *agentrunnerv1.Spend
		held  Held
	}{{"user", h.UserLimit, userSpent, userHeld}, {"app", h.AppLimit, appSpent, appHeld}} {
		if !c.limit.set() {
			continue
		}
		for _, u := range []struct {
			unit                      string
			limit, spent, held, asked int64
		}{
			{"tokens", c.limit.Tokens, c.spent.GetTotalTokens(), c.held.Tokens, h.Tokens},
			{"micros", c.limit.Micros, c.spent.GetCost().GetMicros(), c.held.Micros, h.Micros},
		} {
			if u.limit <= 0 {
				continue
			}
			refusal := &HoldRefusal{Scope: c.scope, Unit: u.unit, Limit: u.limit, Spent: u.spent, Held: u.held}
			if c.held.Uncapped > 0 {
				refusal.Busy = true
				return refusal
			}
			// An uncapped call needs only some room left: what it spends
			// past the limit is the one call a budget may be passed by.
			asked := max(u.asked, 1)
			if h.Uncapped {
				asked = 1
			}
			if u.spent+u.held+asked > u.limit {
				return refusal
			}
		}
	}
	return nil
}
