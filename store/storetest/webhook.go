package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// RunWebhooks runs the webhook outbox's conformance tests (store.WebhookOutbox)
// against stores made by open, which must implement it.
func RunWebhooks(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, o store.WebhookOutbox)
	}{
		{"WebhookQueuedWithStop", testWebhookQueuedWithStop},
		{"WebhookEachStop", testWebhookEachStop},
		{"WebhookClaimLease", testWebhookClaimLease},
		{"WebhookFailedKept", testWebhookFailedKept},
		{"WebhookConcurrentClaims", testWebhookConcurrentClaims},
		{"WebhookOutlivesSession", testWebhookOutlivesSession},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			o, ok := s.(store.WebhookOutbox)
			if !ok {
				t.Fatalf("%T is no store.WebhookOutbox", s)
			}
			tc.fn(t, s, o)
		})
	}
}

const hookURL = "http://127.0.0.1:1/hook"

// hookRun is a run record that calls back.
func hookRun(k store.SessionKey, id string, st agentrunnerv1.RunStatus) *agentrunnerv1.Run {
	r := runRec(k, id, 0, st)
	r.Webhook = &agentrunnerv1.Webhook{Url: hookURL}
	return r
}

func pending(t *testing.T, o store.WebhookOutbox) []*agentrunnerv1.WebhookDelivery {
	t.Helper()
	return listDeliveries(t, o, agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_PENDING)
}

func listDeliveries(t *testing.T, o store.WebhookOutbox, st agentrunnerv1.WebhookDeliveryState) []*agentrunnerv1.WebhookDelivery {
	t.Helper()
	ds, err := o.ListDeliveries(t.Context(), st, store.MaxClaim)
	if err != nil {
		t.Fatalf("ListDeliveries(%s): %v", st, err)
	}
	return ds
}

// later is a time after every delivery the tests queue is due.
func later() time.Time { return time.Now().Add(time.Minute) }

func claim(t *testing.T, o store.WebhookOutbox, now time.Time, lease time.Duration) []*agentrunnerv1.WebhookDelivery {
	t.Helper()
	ds, err := o.ClaimDeliveries(t.Context(), now, lease, store.MaxClaim)
	if err != nil {
		t.Fatalf("ClaimDeliveries: %v", err)
	}
	return ds
}

func deliveryIDs(ds []*agentrunnerv1.WebhookDelivery) []string {
	out := make([]string, 0, len(ds))
	for _, d := range ds {
		out = append(out, d.GetDeliveryId())
	}
	slices.Sort(out)
	return out
}

// testWebhookQueuedWithStop: the write that stores a run's end queues
// one delivery holding the record as stored (the sequence of the event
// written with it); writing the same status again, the run's earlier
// statuses, and a run without a webhook queue nothing.
func testWebhookQueuedWithStop(t *testing.T, s store.Store, o store.WebhookOutbox) {
	ctx := t.Context()
	k := key("app", "u", "hook")
	create(t, s, k, nil)
	run := hookRun(k, "r-hook", runPending)
	putRun(t, s, run)
	putRun(t, s, withStatus(run, runRunning))
	plain := runRec(k, "r-plain", 1, runSucceeded)
	putRun(t, s, plain)
	if ds := pending(t, o); len(ds) != 0 {
		t.Fatalf("deliveries before the run ended: %v", deliveryIDs(ds))
	}
	end := withStatus(run, runSucceeded)
	_, stored, err := s.AppendRunEvent(ctx, k, textEvent("agent", "done", nil), end)
	if err != nil {
		t.Fatal(err)
	}
	putRun(t, s, stored) // the same status again
	ds := pending(t, o)
	if len(ds) != 1 {
		t.Fatalf("deliveries after the end = %v, want one", deliveryIDs(ds))
	}
	d := ds[0]
	if d.GetUrl() != hookURL || d.GetAttempts() != 0 || d.GetDeliveryId() == "" {
		t.Fatalf("delivery = %v", d)
	}
	if !proto.Equal(d.GetRun(), stored) {
		t.Fatalf("delivered record = %v, want the stored one %v", d.GetRun(), stored)
	}
	if d.GetRun().GetLastSequence() == 0 {
		t.Fatal("delivered record has no last_sequence")
	}
}

// testWebhookEachStop: a run that waits on its caller calls back, and
// again when it ends; each stop is a delivery of its own.
func testWebhookEachStop(t *testing.T, s store.Store, o store.WebhookOutbox) {
	k := key("app", "u", "stops")
	create(t, s, k, nil)
	run := hookRun(k, "r-stops", runRunning)
	putRun(t, s, run)
	putRun(t, s, withStatus(run, runInput))
	putRun(t, s, withStatus(run, runSucceeded))
	ds := pending(t, o)
	if len(ds) != 2 || ds[0].GetDeliveryId() == ds[1].GetDeliveryId() {
		t.Fatalf("deliveries = %v, want two", deliveryIDs(ds))
	}
	var sts []agentrunnerv1.RunStatus
	for _, d := range ds {
		sts = append(sts, d.GetRun().GetStatus())
	}
	slices.Sort(sts)
	if !slices.Equal(sts, []agentrunnerv1.RunStatus{runInput, runSucceeded}) {
		t.Fatalf("delivered statuses = %v", sts)
	}
}

// testWebhookClaimLease: a claimed delivery is nobody else's until its
// lease passes, then it is claimed again with a new claim number, and a
// report under the old claim counts for nothing.
func testWebhookClaimLease(t *testing.T, s store.Store, o store.WebhookOutbox) {
	ctx := t.Context()
	k := key("app", "u", "lease")
	create(t, s, k, nil)
	putRun(t, s, hookRun(k, "r-lease", runFailed))
	now, lease := later(), time.Minute
	if ds := claim(t, o, time.Now().Add(-time.Hour), lease); len(ds) != 0 {
		t.Fatalf("claimed before it was due: %v", deliveryIDs(ds))
	}
	first := claim(t, o, now, lease)
	if len(first) != 1 {
		t.Fatalf("first claim = %v, want one", deliveryIDs(first))
	}
	d1 := first[0]
	if ds := claim(t, o, now.Add(lease/2), lease); len(ds) != 0 {
		t.Fatalf("claimed again within the lease: %v", deliveryIDs(ds))
	}
	second := claim(t, o, now.Add(lease+time.Second), lease)
	if len(second) != 1 || second[0].GetClaim() == d1.GetClaim() {
		t.Fatalf("claim after the lease = %v", second)
	}
	d2 := second[0]
	if err := o.DeleteDelivery(ctx, d1.GetDeliveryId(), d1.GetClaim()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteDelivery under a stale claim = %v, want ErrNotFound", err)
	}
	retry := proto.CloneOf(d2)
	retry.Attempts, retry.LastError = 1, "503 Service Unavailable"
	next := now.Add(2 * lease)
	retry.NextAttemptTime = timestamppb.New(next)
	if err := o.UpdateDelivery(ctx, retry); err != nil {
		t.Fatal(err)
	}
	if err := o.UpdateDelivery(ctx, retry); err != nil {
		t.Fatalf("a second report under the same claim: %v", err)
	}
	if ds := claim(t, o, next.Add(-time.Second), lease); len(ds) != 0 {
		t.Fatalf("claimed before its next attempt: %v", deliveryIDs(ds))
	}
	third := claim(t, o, next, lease)
	if len(third) != 1 || third[0].GetAttempts() != 1 || third[0].GetLastError() != retry.GetLastError() {
		t.Fatalf("claim after the retry time = %v", third)
	}
	if err := o.DeleteDelivery(ctx, third[0].GetDeliveryId(), third[0].GetClaim()); err != nil {
		t.Fatal(err)
	}
	if ds := pending(t, o); len(ds) != 0 {
		t.Fatalf("deliveries after the delete: %v", deliveryIDs(ds))
	}
	if err := o.UpdateDelivery(ctx, retry); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("UpdateDelivery of a deleted delivery = %v, want ErrNotFound", err)
	}
}

// testWebhookFailedKept: a delivery given up is kept, listed as failed,
// and claimed no more.
func testWebhookFailedKept(t *testing.T, s store.Store, o store.WebhookOutbox) {
	k := key("app", "u", "failed")
	create(t, s, k, nil)
	putRun(t, s, hookRun(k, "r-failed", runCancelled))
	ds := claim(t, o, later(), time.Minute)
	if len(ds) != 1 {
		t.Fatalf("claim = %v", deliveryIDs(ds))
	}
	d := ds[0]
	d.State, d.Attempts, d.LastError = agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED, 7, "gave up"
	if err := o.UpdateDelivery(t.Context(), d); err != nil {
		t.Fatal(err)
	}
	failed := listDeliveries(t, o, agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_FAILED)
	if len(failed) != 1 || failed[0].GetAttempts() != 7 || failed[0].GetLastError() != "gave up" || failed[0].GetRun().GetRunId() != "r-failed" {
		t.Fatalf("failed deliveries = %v", failed)
	}
	if got := pending(t, o); len(got) != 0 {
		t.Fatalf("pending after failing: %v", deliveryIDs(got))
	}
	if got := claim(t, o, later().Add(time.Hour), time.Minute); len(got) != 0 {
		t.Fatalf("claimed a failed delivery: %v", deliveryIDs(got))
	}
	if _, err := o.ListDeliveries(t.Context(), agentrunnerv1.WebhookDeliveryState_WEBHOOK_DELIVERY_STATE_UNSPECIFIED, 1); !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("ListDeliveries(UNSPECIFIED) = %v, want ErrInvalidArgument", err)
	}
}

// testWebhookConcurrentClaims: claimers racing (replicas) never get the
// same delivery within its lease: each is claimed exactly once.
func testWebhookConcurrentClaims(t *testing.T, s store.Store, o store.WebhookOutbox) {
	k := key("app", "u", "race")
	create(t, s, k, nil)
	const runs, claimers = 30, 4
	for i := range runs {
		putRun(t, s, hookRun(k, fmt.Sprintf("r-race-%02d", i), runSucceeded))
	}
	now := later()
	var (
		mu   sync.Mutex
		got  = map[string]int{}
		wg   sync.WaitGroup
		errs = make(chan error, claimers)
	)
	for range claimers {
		wg.Go(func() {
			for {
				ds, err := o.ClaimDeliveries(t.Context(), now, time.Hour, 3)
				if err != nil {
					errs <- err
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					got[d.GetDeliveryId()]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(got) != runs {
		t.Fatalf("%d deliveries claimed, want %d", len(got), runs)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("delivery %s claimed %d times within its lease", id, n)
		}
	}
}

// testWebhookOutlivesSession: deleting the session leaves its runs'
// deliveries, which carry their records.
func testWebhookOutlivesSession(t *testing.T, s store.Store, o store.WebhookOutbox) {
	k := key("app", "u", "gone")
	create(t, s, k, nil)
	putRun(t, s, hookRun(k, "r-gone", runSucceeded))
	if err := s.DeleteSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	ds := pending(t, o)
	if len(ds) != 1 || ds[0].GetRun().GetRunId() != "r-gone" {
		t.Fatalf("deliveries after the session was deleted = %v", ds)
	}
}
