package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentrunner/agentrunner/store"
)

var _ store.SessionLeaser = (*Store)(nil)

// AcquireLease implements store.SessionLeaser. Expiry is by the
// database's clock, which every replica shares.
func (s *Store) AcquireLease(ctx context.Context, k store.SessionKey, holder string, ttl time.Duration) (store.Lease, error) {
	if err := validateLease(k, holder, ttl); err != nil {
		return store.Lease{}, err
	}
	l := store.Lease{Key: k, Holder: holder}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// No WAL flush to wait for: the holder's first append, durable,
		// flushes this too, and a lease lost in a crash of the database
		// only fences the holder (its token is no longer the session's).
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit TO OFF"); err != nil {
			return fmt.Errorf("set synchronous_commit: %w", err)
		}
		var (
			cur     *string
			expires *time.Time
			left    int64 // microseconds, 0 when not live
		)
		err := tx.QueryRow(ctx, `SELECT lease_holder, lease_expires,
				coalesce(greatest((extract(epoch FROM lease_expires - clock_timestamp()) * 1e6)::bigint, 0), 0)
			FROM sessions WHERE app_name = $1 AND user_id = $2 AND session_id = $3 FOR UPDATE`,
			k.App, k.User, k.Session).Scan(&cur, &expires, &left)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("session %s: %w", k, store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("read lease of %s: %w", k, err)
		}
		if left > 0 && cur != nil && expires != nil && *cur != holder {
			return &store.LeaseHeld{Key: k, Holder: *cur, Expires: *expires, Left: time.Duration(left) * time.Microsecond}
		}
		if cur != nil && *cur != holder {
			// Expired, not released: ReleaseLease clears the holder.
			l.Replaced = *cur
		}
		var token int64
		err = tx.QueryRow(ctx, `UPDATE sessions SET lease_holder = $4, lease_token = lease_token + 1,
			lease_expires = clock_timestamp() + $5 * interval '1 microsecond'
			WHERE app_name = $1 AND user_id = $2 AND session_id = $3 RETURNING lease_token, lease_expires`,
			k.App, k.User, k.Session, holder, ttl.Microseconds()).Scan(&token, &l.Expires)
		l.Token = uint64(token)
		return err
	})
	if err != nil {
		return store.Lease{}, err
	}
	return l, nil
}

// RenewLease implements store.SessionLeaser.
func (s *Store) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if err := validateLease(l.Key, l.Holder, ttl); err != nil {
		return store.Lease{}, err
	}
	k := l.Key
	err := s.query(ctx, func() error {
		err := s.pool.QueryRow(ctx, `UPDATE sessions SET lease_expires = clock_timestamp() + $6 * interval '1 microsecond'
			WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND lease_holder = $4 AND lease_token = $5
			RETURNING lease_expires`, k.App, k.User, k.Session, l.Holder, int64(l.Token), ttl.Microseconds()).Scan(&l.Expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return s.lostLease(ctx, l)
		}
		return err
	})
	if err != nil {
		return store.Lease{}, err
	}
	return l, nil
}

// ReleaseLease implements store.SessionLeaser. The token stays, so that
// the next acquisition fences this holder's late writes too.
func (s *Store) ReleaseLease(ctx context.Context, l store.Lease) error {
	if err := validateLease(l.Key, l.Holder, time.Second); err != nil {
		return err
	}
	k := l.Key
	return s.query(ctx, func() error {
		tag, err := s.pool.Exec(ctx, `UPDATE sessions SET lease_holder = NULL, lease_expires = NULL
			WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND lease_holder = $4 AND lease_token = $5`,
			k.App, k.User, k.Session, l.Holder, int64(l.Token))
		if err == nil && tag.RowsAffected() == 0 {
			return s.lostLease(ctx, l)
		}
		return err
	})
}

// lostLease tells a missing session (ErrNotFound) from a lease taken
// over (ErrFenced).
func (s *Store) lostLease(ctx context.Context, l store.Lease) error {
	if err := sessionExists(ctx, s.pool, l.Key); err != nil {
		return err
	}
	return fmt.Errorf("lease %d of %s on session %s: %w", l.Token, l.Holder, l.Key, store.ErrFenced)
}

func validateLease(k store.SessionKey, holder string, ttl time.Duration) error {
	if err := validateKey(k); err != nil {
		return err
	}
	if holder == "" {
		return fmt.Errorf("lease holder is empty: %w", store.ErrInvalidArgument)
	}
	if err := checkText(holder); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("lease ttl %s is not positive: %w", ttl, store.ErrInvalidArgument)
	}
	return nil
}

// checkFence refuses an append under a lease whose token is no longer
// the session's (token, read with the row lock held).
func checkFence(ctx context.Context, k store.SessionKey, token int64) error {
	l, ok := store.LeaseFrom(ctx, k)
	if !ok || uint64(token) == l.Token {
		return nil
	}
	return fmt.Errorf("append to %s under lease %d of %s, now at %d: %w", k, l.Token, l.Holder, token, store.ErrFenced)
}
