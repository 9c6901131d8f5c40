package runner

import (
	"context"
	"errors"
	"fmt"
	"math"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// CheckBudgets returns the error a run of user on session would be
// refused with at once by a budget of the app (an *agent.BudgetError),
// without creating or storing anything: for a session that does not
// exist yet, what the user and the app spent today. A front end that
// creates the session of a run (A2A) asks first, so that a refused send
// leaves nothing behind. The run itself is still checked when admitted:
// runs in flight may reach a budget in between.
func (r *Runner) CheckBudgets(ctx context.Context, user, session string) error {
	c := r.config()
	if !c.env.Budgets.Any() {
		return nil
	}
	key := store.SessionKey{App: r.appName, User: user, Session: session}
	if err := key.Validate(); err != nil {
		return err
	}
	// The record only: no event is after the largest sequence.
	sess, _, err := r.store.GetSession(ctx, key, store.GetOptions{AfterSequence: math.MaxUint64})
	switch {
	case errors.Is(err, store.ErrNotFound):
		sess = &agentrunnerv1.Session{AppName: key.App, UserId: key.User, SessionId: key.Session}
	case err != nil:
		return fmt.Errorf("check budgets: load session: %w", err)
	}
	return c.env.CheckBudgets(ctx, sess, nil, "")
}
