package pgstore

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// Holds (store.SpendHolder): table spend_holds (migration 0007). Every
// hold and release of an app takes its advisory lock, then reads, in the
// same transaction, the ledger and the holds: a release comes after the
// append that put its call's usage in the ledger, so a check never
// misses both.

var _ store.SpendHolder = (*Store)(nil)

const sqlLockApp = `SELECT pg_advisory_xact_lock(hashtextextended('spend_holds/' || $1, 0))`

// HoldSpend implements store.SpendHolder.
func (s *Store) HoldSpend(ctx context.Context, h store.SpendHold) error {
	if h.ID == "" || h.App == "" || h.User == "" {
		return fmt.Errorf("hold needs an id, an app and a user: %w", store.ErrInvalidArgument)
	}
	if err := store.CheckSessionList(h.App, h.User, checkPart); err != nil {
		return err
	}
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlLockApp, h.App); err != nil {
			return fmt.Errorf("lock holds: %w", err)
		}
		day := dayDate(h.Day)
		userSpent, appSpent, err := dailySpendIn(ctx, tx, h.App, h.User, day)
		if err != nil {
			return err
		}
		userHeld, appHeld, err := heldIn(ctx, tx, h.App, h.User, day, s.opts.Now())
		if err != nil {
			return err
		}
		if err := store.CheckHold(h, userSpent, appSpent, userHeld, appHeld); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO spend_holds (app_name, hold_id, user_id, day, tokens, micros, uncapped, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, h.App, h.ID, h.User, day, max(h.Tokens, 0), max(h.Micros, 0), h.Uncapped, h.Expires)
		if err != nil {
			return fmt.Errorf("hold spend: %w", err)
		}
		return nil
	})
}

// heldIn sums the holds of app's day not expired at now, the user's and
// all of them; it deletes the expired ones.
func heldIn(ctx context.Context, tx pgx.Tx, app, user string, day, now time.Time) (userHeld, appHeld store.Held, err error) {
	if _, err := tx.Exec(ctx, `DELETE FROM spend_holds WHERE app_name = $1 AND day = $2 AND expires_at < $3`, app, day, now); err != nil {
		return userHeld, appHeld, fmt.Errorf("expire holds: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT user_id, tokens, micros, uncapped FROM spend_holds WHERE app_name = $1 AND day = $2`, app, day)
	if err != nil {
		return userHeld, appHeld, fmt.Errorf("read holds: %w", err)
	}
	var h store.SpendHold
	var u string
	_, err = pgx.ForEachRow(rows, []any{&u, &h.Tokens, &h.Micros, &h.Uncapped}, func() error {
		appHeld.Add(h)
		if u == user {
			userHeld.Add(h)
		}
		return nil
	})
	if err != nil {
		return userHeld, appHeld, fmt.Errorf("read holds: %w", err)
	}
	return userHeld, appHeld, nil
}

// dailySpendIn is DailySpend read in tx.
func dailySpendIn(ctx context.Context, tx pgx.Tx, app, user string, day time.Time) (userSpend, appSpend *agentrunnerv1.Spend, err error) {
	userSpend, appSpend = &agentrunnerv1.Spend{}, &agentrunnerv1.Spend{}
	rows, err := tx.Query(ctx, `SELECT user_id, `+spendSums+` FROM spend
		WHERE app_name = $1 AND user_id IN ($2, '') AND day = $3 GROUP BY user_id, model ORDER BY user_id, model`, app, user, day)
	if err != nil {
		return nil, nil, fmt.Errorf("read spend: %w", err)
	}
	_, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var u string
		sp, err := scanSpend(row, &u)
		if err != nil {
			return struct{}{}, err
		}
		if u == allUsers {
			store.AddSpend(appSpend, sp)
		} else {
			store.AddSpend(userSpend, sp)
		}
		return struct{}{}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return userSpend, appSpend, nil
}

// ReleaseSpend implements store.SpendHolder.
func (s *Store) ReleaseSpend(ctx context.Context, app, id string) error {
	return s.inTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlLockApp, app); err != nil {
			return fmt.Errorf("lock holds: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM spend_holds WHERE app_name = $1 AND hold_id = $2`, app, id); err != nil {
			return fmt.Errorf("release hold: %w", err)
		}
		return nil
	})
}
