package storetest

import (
	"errors"
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// RunLeases runs the session lease tests against stores made by open,
// which must implement store.SessionLeaser.
func RunLeases(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store, l store.SessionLeaser)
	}{
		{"StaleWriterFenced", testStaleWriterFenced},
		{"LeaseArguments", testLeaseArguments},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			l, ok := s.(store.SessionLeaser)
			if !ok {
				t.Fatalf("%T does not implement store.SessionLeaser", s)
			}
			tc.fn(t, s, l)
		})
	}
}

// testStaleWriterFenced: a writer whose session lease was taken over (it
// expired, another writer acquired it) is refused on every append, with
// nothing stored, and can neither renew nor release; the new holder
// appends; a released lease is free, and its next holder's token grows.
func testStaleWriterFenced(t *testing.T, s store.Store, l store.SessionLeaser) {
	ctx := t.Context()
	k := key("app", "u", "leased")
	create(t, s, k, nil)
	// A lease of a microsecond has expired by the next call.
	old, err := l.AcquireLease(ctx, k, "replica-a", time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	appendEv(t, s, k, textEvent("agent", "a, leased", nil))
	if _, err := s.AppendEvent(store.WithLease(ctx, old), k, textEvent("agent", "a, under its lease", nil)); err != nil {
		t.Fatalf("append under a lease not yet taken: %v", err)
	}
	cur, err := l.AcquireLease(ctx, k, "replica-b", time.Minute)
	if err != nil || cur.Token <= old.Token {
		t.Fatalf("acquire an expired lease: token %d (old %d), %v", cur.Token, old.Token, err)
	}
	if _, err := l.AcquireLease(ctx, k, "replica-a", time.Minute); !errors.Is(err, store.ErrAlreadyExists) || !strings.Contains(err.Error(), "replica-b") {
		t.Fatalf("acquire of a live lease held by another: %v", err)
	}
	stale := store.WithLease(ctx, old)
	_, err = s.AppendEvent(stale, k, textEvent("agent", "a, stale", nil))
	wantErr(t, err, store.ErrFenced, "AppendEvent by a stale writer")
	_, _, err = s.AppendEventOnce(stale, k, &agentrunnerv1.Event{Id: "x", Author: "agent"})
	wantErr(t, err, store.ErrFenced, "AppendEventOnce by a stale writer")
	_, _, err = s.AppendRunEvent(stale, k, textEvent("agent", "a, stale run", map[string]any{"user:x": 1}), runRec(k, "e-1", 0, runRunning))
	wantErr(t, err, store.ErrFenced, "AppendRunEvent (with a user: delta) by a stale writer")
	_, err = l.RenewLease(ctx, old, time.Minute)
	wantErr(t, err, store.ErrFenced, "RenewLease by a stale writer")
	wantErr(t, l.ReleaseLease(ctx, old), store.ErrFenced, "ReleaseLease by a stale writer")

	if _, err := s.AppendEvent(store.WithLease(ctx, cur), k, textEvent("agent", "b", nil)); err != nil {
		t.Fatalf("append by the new holder: %v", err)
	}
	if cur, err = l.RenewLease(ctx, cur, time.Minute); err != nil {
		t.Fatalf("renew by the holder: %v", err)
	}
	sess, evs := get(t, s, k, store.GetOptions{})
	if len(evs) != 3 || evs[2].GetContent().GetParts()[0].GetText() != "b" || stateOf(sess)["user:x"] != nil {
		t.Fatalf("session holds %d events, state %v: want the leased writers' three and no stale delta", len(evs), stateOf(sess))
	}
	_, err = s.GetRun(ctx, "e-1")
	wantErr(t, err, store.ErrNotFound, "GetRun of a fenced AppendRunEvent's run")
	if err := l.ReleaseLease(ctx, cur); err != nil {
		t.Fatal(err)
	}
	next, err := l.AcquireLease(ctx, k, "replica-a", time.Minute)
	if err != nil || next.Token <= cur.Token {
		t.Fatalf("acquire after release: token %d (was %d), %v", next.Token, cur.Token, err)
	}
	_, err = s.AppendEvent(store.WithLease(ctx, cur), k, textEvent("agent", "b, after release", nil))
	wantErr(t, err, store.ErrFenced, "AppendEvent under a released lease, taken again")
}

// testLeaseArguments: leases of missing sessions are not found; empty
// holders and non-positive ttls are invalid; a lease in the context of
// another session's append is not checked.
func testLeaseArguments(t *testing.T, s store.Store, l store.SessionLeaser) {
	ctx := t.Context()
	k, other := key("app", "u", "l1"), key("app", "u", "l2")
	create(t, s, k, nil)
	create(t, s, other, nil)
	_, err := l.AcquireLease(ctx, key("app", "u", "missing"), "r", time.Minute)
	wantErr(t, err, store.ErrNotFound, "AcquireLease of a missing session")
	_, err = l.AcquireLease(ctx, k, "", time.Minute)
	wantErr(t, err, store.ErrInvalidArgument, "AcquireLease with an empty holder")
	_, err = l.AcquireLease(ctx, k, "r", 0)
	wantErr(t, err, store.ErrInvalidArgument, "AcquireLease with a zero ttl")
	a, err := l.AcquireLease(ctx, k, "r", time.Microsecond)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AcquireLease(ctx, k, "r2", time.Minute); err != nil {
		t.Fatal(err)
	}
	// a is stale for k, but says nothing about other.
	if _, _, err := s.AppendRunEvent(store.WithLease(ctx, a), other, textEvent("agent", "x", nil), runRec(other, "e-o", 0, runRunning)); err != nil {
		t.Fatalf("append to another session under k's stale lease: %v", err)
	}
	if got := getRun(t, s, "e-o"); got.GetLastSequence() != 1 {
		t.Fatalf("run e-o = %v; want its event at sequence 1", got)
	}
}
