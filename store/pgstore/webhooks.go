package pgstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// The webhook outbox (store.WebhookOutbox, migration 0008).

var _ store.WebhookOutbox = (*Store)(nil)

const (
	// sqlQueueDelivery queues a run write's delivery; the same write
	// retried queues nothing more.
	sqlQueueDelivery = `INSERT INTO webhook_outbox (delivery_id, state, next_attempt, create_time, record)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT (delivery_id) DO NOTHING`
	// sqlClaimDeliveries leases the due deliveries no other transaction
	// is claiming, oldest due first.
	sqlClaimDeliveries = `UPDATE webhook_outbox o SET lease_until = $2, claim = o.claim + 1
		FROM (SELECT delivery_id FROM webhook_outbox
			WHERE state = 1 AND next_attempt <= $1 AND lease_until <= $1
			ORDER BY next_attempt, delivery_id LIMIT $3 FOR UPDATE SKIP LOCKED) due
		WHERE o.delivery_id = due.delivery_id
		RETURNING o.record, o.claim, o.lease_until`
	sqlDeleteDelivery = `DELETE FROM webhook_outbox WHERE delivery_id = $1 AND claim = $2 AND state = 1`
	sqlUpdateDelivery = `UPDATE webhook_outbox SET state = $3, next_attempt = $4, lease_until = '-infinity', record = $5
		WHERE delivery_id = $1 AND claim = $2 AND state = 1`
	sqlListDeliveries = `SELECT record, claim FROM webhook_outbox WHERE state = $1 ORDER BY create_time, delivery_id LIMIT $2`
)

// deliveryArgs returns sqlQueueDelivery's arguments for d.
func deliveryArgs(d *agentrunnerv1.WebhookDelivery) ([]any, error) {
	b, err := proto.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("marshal delivery %s: %w", d.GetDeliveryId(), err)
	}
	return []any{d.GetDeliveryId(), int32(d.GetState()), d.GetNextAttemptTime().AsTime(), d.GetCreateTime().AsTime(), b}, nil
}

func decodeDelivery(b []byte) (*agentrunnerv1.WebhookDelivery, error) {
	d := &agentrunnerv1.WebhookDelivery{}
	if err := proto.Unmarshal(b, d); err != nil {
		return nil, fmt.Errorf("decode webhook delivery: %w", err)
	}
	return d, nil
}

// ClaimDeliveries implements store.WebhookOutbox.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, n int) ([]*agentrunnerv1.WebhookDelivery, error) {
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sqlClaimDeliveries, now, now.Add(lease), store.ClaimLimit(n))
	if err != nil {
		return nil, s.mapErr(fmt.Errorf("claim webhook deliveries: %w", err))
	}
	var out []*agentrunnerv1.WebhookDelivery
	for rows.Next() {
		var (
			b     []byte
			claim int64
			until time.Time
		)
		if err := rows.Scan(&b, &claim, &until); err != nil {
			rows.Close()
			return nil, s.mapErr(fmt.Errorf("claim webhook deliveries: %w", err))
		}
		d, err := decodeDelivery(b)
		if err != nil {
			rows.Close()
			return nil, err
		}
		d.Claim, d.LeaseExpireTime = claim, timestamppb.New(until)
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, s.mapErr(fmt.Errorf("claim webhook deliveries: %w", err))
	}
	return out, nil
}

// DeleteDelivery implements store.WebhookOutbox.
func (s *Store) DeleteDelivery(ctx context.Context, id string, claim int64) error {
	if err := s.check(ctx); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, sqlDeleteDelivery, id, claim)
	if err != nil {
		return s.mapErr(fmt.Errorf("delete webhook delivery %s: %w", id, err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("webhook delivery %s under claim %d: %w", id, claim, store.ErrNotFound)
	}
	return nil
}

// UpdateDelivery implements store.WebhookOutbox.
func (s *Store) UpdateDelivery(ctx context.Context, d *agentrunnerv1.WebhookDelivery) error {
	if err := store.CheckDeliveryUpdate(d); err != nil {
		return err
	}
	if err := s.check(ctx); err != nil {
		return err
	}
	id := d.GetDeliveryId()
	return s.inTx(ctx, func(tx pgx.Tx) error {
		var b []byte
		err := tx.QueryRow(ctx, `SELECT record FROM webhook_outbox WHERE delivery_id = $1 AND claim = $2 AND state = 1 FOR UPDATE`, id, d.GetClaim()).Scan(&b)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("webhook delivery %s under claim %d: %w", id, d.GetClaim(), store.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("read webhook delivery %s: %w", id, err)
		}
		cur, err := decodeDelivery(b)
		if err != nil {
			return err
		}
		cur.State, cur.Attempts, cur.NextAttemptTime, cur.LastError = d.GetState(), d.GetAttempts(), d.GetNextAttemptTime(), d.GetLastError()
		cur.LeaseExpireTime, cur.Claim = nil, d.GetClaim()
		if b, err = proto.Marshal(cur); err != nil {
			return fmt.Errorf("marshal delivery %s: %w", id, err)
		}
		if _, err := tx.Exec(ctx, sqlUpdateDelivery, id, d.GetClaim(), int32(cur.GetState()), cur.GetNextAttemptTime().AsTime(), b); err != nil {
			return fmt.Errorf("update webhook delivery %s: %w", id, err)
		}
		return nil
	})
}

// ListDeliveries implements store.WebhookOutbox.
func (s *Store) ListDeliveries(ctx context.Context, st agentrunnerv1.WebhookDeliveryState, n int) ([]*agentrunnerv1.WebhookDelivery, error) {
	if st != agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING && st != agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED {
		return nil, fmt.Errorf("webhook delivery state %s: %w", st, store.ErrInvalidArgument)
	}
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, sqlListDeliveries, int32(st), store.ClaimLimit(n))
	if err != nil {
		return nil, s.mapErr(fmt.Errorf("list webhook deliveries: %w", err))
	}
	defer rows.Close()
	var out []*agentrunnerv1.WebhookDelivery
	for rows.Next() {
		var (
			b     []byte
			claim int64
		)
		if err := rows.Scan(&b, &claim); err != nil {
			return nil, s.mapErr(fmt.Errorf("list webhook deliveries: %w", err))
		}
		d, err := decodeDelivery(b)
		if err != nil {
			return nil, err
		}
		d.Claim = claim
		out = append(out, d)
	}
	return out, s.mapErr(rows.Err())
}
