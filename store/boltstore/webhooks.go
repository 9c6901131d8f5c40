package boltstore

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// The webhook outbox (store.WebhookOutbox), bucket webhook_outbox:
//
//	webhook_outbox  'p' delivery_id -> WebhookDelivery, pending
//	webhook_outbox  'f' delivery_id -> WebhookDelivery, failed for good
//
// A run write that calls back (runPlan.callback) puts its delivery in
// its own transaction. Delivered entries are deleted, so the pending
// range holds what waits: a claim walks it whole, which stays small as
// long as receivers answer.

// bucketWebhooks holds the outbox (schema 9).
var bucketWebhooks = []byte("webhook_outbox")

const (
	prefixPending = 'p'
	prefixFailed  = 'f'
)

// migrateWebhooks adds the outbox bucket, empty. Open creates it before it
// migrates; the version is raised all the same so that an older binary,
// which would end runs without queueing their deliveries, refuses the
// file.
func migrateWebhooks(tx *bbolt.Tx) error {
	if _, err := tx.CreateBucketIfNotExists(bucketWebhooks); err != nil {
		return fmt.Errorf("create bucket %s: %w", bucketWebhooks, err)
	}
	return nil
}

func deliveryKey(prefix byte, id string) []byte {
	return append([]byte{prefix}, id...)
}

// queueDelivery puts the delivery a planned write calls back with, the
// record as stored (seq as in apply), unless it is queued already. It
// fails only with an abortError.
func (p *runPlan) queueDelivery(tx *bbolt.Tx, seq uint64) error {
	if !p.callback {
		return nil
	}
	rec := p.w.rec.CloneVT()
	if p.createTime != nil {
		rec.CreateTime = p.createTime
	}
	if seq != 0 {
		rec.LastSequence = seq
		if rec.FirstSequence == 0 {
			rec.FirstSequence = seq
		}
	}
	d := store.NewDelivery(rec, time.Now())
	b := tx.Bucket(bucketWebhooks)
	if b.Get(deliveryKey(prefixPending, d.GetDeliveryId())) != nil || b.Get(deliveryKey(prefixFailed, d.GetDeliveryId())) != nil {
		return nil
	}
	v, err := proto.Marshal(d)
	if err != nil {
		return abortError{fmt.Errorf("marshal delivery %s: %w", d.GetDeliveryId(), err)}
	}
	return put(b, deliveryKey(prefixPending, d.GetDeliveryId()), v)
}

func decodeDelivery(v []byte) (*agentrunnerv1.WebhookDelivery, error) {
	d := &agentrunnerv1.WebhookDelivery{}
	if err := proto.Unmarshal(v, d); err != nil {
		return nil, fmt.Errorf("decode webhook delivery: %w", err)
	}
	return d, nil
}

// ClaimDeliveries implements store.WebhookOutbox.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, n int) ([]*agentrunnerv1.WebhookDelivery, error) {
	n = store.ClaimLimit(n)
	// An idle poll reads: a write transaction would commit (and sync)
	// the file every poll for nothing.
	if due, err := s.anyDue(ctx, now); err != nil || !due {
		return nil, err
	}
	var out []*agentrunnerv1.WebhookDelivery
	err := s.write(ctx, func(tx *bbolt.Tx) error {
		out = out[:0]
		b := tx.Bucket(bucketWebhooks)
		var keys, vals [][]byte
		c := b.Cursor()
		for k, v := c.Seek([]byte{prefixPending}); k != nil && k[0] == prefixPending && len(out) < n; k, v = c.Next() {
			d, err := decodeDelivery(v)
			if err != nil {
				return fmt.Errorf("delivery %q: %w", k[1:], err)
			}
			if !store.Due(d, now) {
				continue
			}
			d.Claim++
			d.LeaseExpireTime = timestamppb.New(now.Add(lease))
			nv, err := proto.Marshal(d)
			if err != nil {
				return fmt.Errorf("marshal delivery %s: %w", d.GetDeliveryId(), err)
			}
			out = append(out, d)
			keys, vals = append(keys, bytes.Clone(k)), append(vals, nv)
		}
		// Everything checked: now the writes (see writeOp).
		for i := range keys {
			if err := put(b, keys[i], vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// anyDue reports whether a pending delivery is due at now.
func (s *Store) anyDue(ctx context.Context, now time.Time) (bool, error) {
	due := false
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketWebhooks).Cursor()
		for k, v := c.Seek([]byte{prefixPending}); k != nil && k[0] == prefixPending && !due; k, v = c.Next() {
			d, err := decodeDelivery(v)
			if err != nil {
				return fmt.Errorf("delivery %q: %w", k[1:], err)
			}
			due = store.Due(d, now)
		}
		return nil
	})
	return due, err
}

// claimed returns the pending delivery id under claim, or ErrNotFound.
func claimed(b *bbolt.Bucket, id string, claim int64) (*agentrunnerv1.WebhookDelivery, error) {
	v := b.Get(deliveryKey(prefixPending, id))
	if v == nil {
		return nil, fmt.Errorf("webhook delivery %s: %w", id, store.ErrNotFound)
	}
	d, err := decodeDelivery(v)
	if err != nil {
		return nil, err
	}
	if d.GetClaim() != claim {
		return nil, fmt.Errorf("webhook delivery %s was claimed again (claim %d, not %d): %w", id, d.GetClaim(), claim, store.ErrNotFound)
	}
	return d, nil
}

// DeleteDelivery implements store.WebhookOutbox.
func (s *Store) DeleteDelivery(ctx context.Context, id string, claim int64) error {
	return s.write(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketWebhooks)
		if _, err := claimed(b, id, claim); err != nil {
			return err
		}
		return del(b, deliveryKey(prefixPending, id))
	})
}

// UpdateDelivery implements store.WebhookOutbox.
func (s *Store) UpdateDelivery(ctx context.Context, d *agentrunnerv1.WebhookDelivery) error {
	if err := store.CheckDeliveryUpdate(d); err != nil {
		return err
	}
	return s.write(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketWebhooks)
		cur, err := claimed(b, d.GetDeliveryId(), d.GetClaim())
		if err != nil {
			return err
		}
		cur.State, cur.Attempts, cur.NextAttemptTime, cur.LastError = d.GetState(), d.GetAttempts(), d.GetNextAttemptTime(), d.GetLastError()
		cur.LeaseExpireTime = nil
		v, err := proto.Marshal(cur)
		if err != nil {
			return fmt.Errorf("marshal delivery %s: %w", cur.GetDeliveryId(), err)
		}
		key := deliveryKey(prefixPending, cur.GetDeliveryId())
		if cur.GetState() == agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED {
			if err := del(b, key); err != nil {
				return err
			}
			key = deliveryKey(prefixFailed, cur.GetDeliveryId())
		}
		return put(b, key, v)
	})
}

// ListDeliveries implements store.WebhookOutbox.
func (s *Store) ListDeliveries(ctx context.Context, st agentrunnerv1.WebhookDeliveryState, n int) ([]*agentrunnerv1.WebhookDelivery, error) {
	prefix := byte(prefixPending)
	switch st {
	case agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING:
	case agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED:
		prefix = prefixFailed
	default:
		return nil, fmt.Errorf("webhook delivery state %s: %w", st, store.ErrInvalidArgument)
	}
	n = store.ClaimLimit(n)
	var out []*agentrunnerv1.WebhookDelivery
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketWebhooks).Cursor()
		for k, v := c.Seek([]byte{prefix}); k != nil && k[0] == prefix && len(out) < n; k, v = c.Next() {
			d, err := decodeDelivery(v)
			if err != nil {
				return fmt.Errorf("delivery %q: %w", k[1:], err)
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

var _ store.WebhookOutbox = (*Store)(nil)
