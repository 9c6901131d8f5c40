package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// The webhook outbox. A run record that names a webhook (Run.webhook)
// and is written with a status where the run stops (CallsBack), other
// than the status stored before, queues a delivery (WebhookDelivery) in
// the same transaction as the record: every write of a run record
// (AppendRunEvent, PutRun, PutRunLater) does so, so that no run stops
// without its call back queued, whichever path wrote its end, recovery
// included. A delivery carries the record as stored, never a secret.
//
// Deliveries are claimed for a lease (ClaimDeliveries): while it runs,
// no other claimer gets the delivery; once it passes, one does. A
// claimer that dies mid-delivery thus leaves it to be made again: at
// least once. A claimer's report (DeleteDelivery, UpdateDelivery) counts
// only while nobody claimed the delivery after it.

// CallsBack reports whether a run stops at status st: it ended, or it
// waits on its caller. A run with a webhook calls back at each such
// status it reaches.
func CallsBack(st agentrunnerv1.RunStatus) bool {
	switch st {
	case agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED,
		agentrunnerv1.RunStatus_RUN_STATUS_FAILED, agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED,
		agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
		return true
	}
	return false
}

// QueuesDelivery reports whether writing run over its stored record
// (found, of status old) queues a delivery: the run names a webhook and
// reaches a status where it stops that is not the one stored.
func QueuesDelivery(run *agentrunnerv1.Run, found bool, old agentrunnerv1.RunStatus) bool {
	return run.GetWebhook().GetUrl() != "" && CallsBack(run.GetStatus()) && (!found || old != run.GetStatus())
}

// NewDelivery returns the delivery that writing rec (as stored, its
// sequences set) queues at now. Its id names the run, the status and the
// last sequence, which together happen once: the same write retried
// queues the same delivery.
func NewDelivery(rec *agentrunnerv1.Run, now time.Time) *agentrunnerv1.WebhookDelivery {
	st := strings.ToLower(strings.TrimPrefix(rec.GetStatus().String(), "RUN_STATUS_"))
	ts := timestamppb.New(now)
	return &agentrunnerv1.WebhookDelivery{
		DeliveryId:      fmt.Sprintf("%s.%s.%d", rec.GetRunId(), st, rec.GetLastSequence()),
		Url:             rec.GetWebhook().GetUrl(),
		Run:             rec,
		State:           agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING,
		CreateTime:      ts,
		NextAttemptTime: ts,
	}
}

// Due reports whether a pending delivery may be claimed at now: its next
// attempt is due and no claimer's lease holds it.
func Due(d *agentrunnerv1.WebhookDelivery, now time.Time) bool {
	return d.GetState() == agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING &&
		!d.GetNextAttemptTime().AsTime().After(now) && !d.GetLeaseExpireTime().AsTime().After(now)
}

// MaxClaim bounds the deliveries one ClaimDeliveries returns.
const MaxClaim = 100

// WebhookOutbox is the store's side of webhooks: the deliveries run
// writes queue, claimed and settled by the delivery worker
// (server/webhook). Both stores implement it.
type WebhookOutbox interface {
	// ClaimDeliveries claims up to n (at most MaxClaim) pending
	// deliveries due at now, leasing each until now+lease
	// with a new claim number, and returns them as claimed.
	ClaimDeliveries(ctx context.Context, now time.Time, lease time.Duration, n int) ([]*agentrunnerv1.WebhookDelivery, error)
	// DeleteDelivery deletes a delivery made under claim. A delivery
	// claimed again since, or gone, is ErrNotFound.
	DeleteDelivery(ctx context.Context, id string, claim int64) error
	// UpdateDelivery writes d's state, attempts, next_attempt_time and
	// last_error after an attempt under d.claim, and ends its lease. A
	// delivery claimed again since, or gone, is ErrNotFound.
	UpdateDelivery(ctx context.Context, d *agentrunnerv1.WebhookDelivery) error
	// ListDeliveries returns up to n (at most MaxClaim) deliveries in
	// state st: what waits, and what failed for good.
	ListDeliveries(ctx context.Context, st agentrunnerv1.WebhookDeliveryState, n int) ([]*agentrunnerv1.WebhookDelivery, error)
}

// ClaimLimit returns n bounded to 1..MaxClaim.
func ClaimLimit(n int) int {
	return min(max(n, 1), MaxClaim)
}

// CheckDeliveryUpdate refuses an update no claimer makes.
func CheckDeliveryUpdate(d *agentrunnerv1.WebhookDelivery) error {
	switch {
	case d.GetDeliveryId() == "":
		return fmt.Errorf("delivery_id is empty: %w", ErrInvalidArgument)
	case d.GetState() != agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING &&
		d.GetState() != agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED:
		return fmt.Errorf("delivery %s: state %s: %w", d.GetDeliveryId(), d.GetState(), ErrInvalidArgument)
	case d.GetNextAttemptTime().CheckValid() != nil:
		return fmt.Errorf("delivery %s: next_attempt_time is missing or invalid: %w", d.GetDeliveryId(), ErrInvalidArgument)
	}
	return nil
}
