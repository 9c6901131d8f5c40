package pgstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
)

// TestBatchFailsOnlyItsBadWrite: in one batch, a write to a missing
// session and one under a stale lease fail alone while the others commit
// together; a write PostgreSQL refuses rolls the batch back, and then
// each write is retried alone, so that only it fails. The ledger counts
// every committed write once.
func TestBatchFailsOnlyItsBadWrite(t *testing.T) {
	var batches, single atomic.Int64
	s, err := pgstore.Open(t.Context(), pg.URL(t), pgstore.Options{Logger: quiet, OnCommit: func(_ time.Duration, writes int) {
		if writes > 1 {
			batches.Add(1)
		} else {
			single.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	for i := range 6 {
		if _, err := s.CreateSession(ctx, key(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	single.Store(0)
	stale := store.WithLease(ctx, store.Lease{Key: key(3), Holder: "gone", Token: 7})
	round := func(bad bool) []*pgstore.BatchWrite {
		ws := []*pgstore.BatchWrite{{Ctx: ctx, Key: key(4)}, {Ctx: ctx, Key: key(99)}, {Ctx: ctx, Key: key(0)},
			{Ctx: stale, Key: key(3)}, {Ctx: ctx, Key: key(1)}, {Ctx: ctx, Key: key(5), BadID: bad}}
		if !bad {
			ws = ws[:5]
		}
		for _, w := range ws {
			w.Event = &agentrunnerv1.Event{Author: "model", UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: 10}}
		}
		if err := s.CommitBatch(ws); err != nil {
			t.Fatal(err)
		}
		return ws
	}
	check := func(name string, ws []*pgstore.BatchWrite, seq uint64) {
		t.Helper()
		for _, w := range ws {
			switch w.Key {
			case key(99):
				if !errors.Is(w.Err, store.ErrNotFound) {
					t.Errorf("%s: append to a missing session: %v", name, w.Err)
				}
			case key(3):
				if !errors.Is(w.Err, store.ErrFenced) {
					t.Errorf("%s: append under a stale lease: %v", name, w.Err)
				}
			case key(5):
				if w.Err == nil || errors.Is(w.Err, store.ErrNotFound) {
					t.Errorf("%s: the refused write: %v", name, w.Err)
				}
			default:
				if w.Err != nil || w.Stored.GetSequence() != seq {
					t.Errorf("%s: append to %s: sequence %d, %v; want %d", name, w.Key, w.Stored.GetSequence(), w.Err, seq)
				}
			}
		}
	}
	check("batch", round(false), 1)
	if batches.Load() != 1 || single.Load() != 0 {
		t.Fatalf("batch: %d batches and %d single commits, want one batch", batches.Load(), single.Load())
	}
	check("batch with a refused write", round(true), 2)
	if batches.Load() != 1 || single.Load() != 3 {
		t.Fatalf("refused batch: %d batches and %d single commits, want the 3 good writes alone", batches.Load()-1, single.Load())
	}
	for _, i := range []int{0, 1, 4, 3, 5} {
		_, evs, err := s.GetSession(ctx, key(i), store.GetOptions{})
		want := 2
		if i == 3 || i == 5 {
			want = 0
		}
		if err != nil || len(evs) != want {
			t.Errorf("session %d holds %d events (%v), want %d", i, len(evs), err, want)
		}
	}
	user, app, err := s.DailySpend(ctx, "app", "u", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if user.GetModelCalls() != 6 || app.GetModelCalls() != 6 || user.GetUsage().GetPromptTokenCount() != 60 {
		t.Errorf("ledger: user %d calls, %d prompt tokens; app %d calls; want 6, 60, 6",
			user.GetModelCalls(), user.GetUsage().GetPromptTokenCount(), app.GetModelCalls())
	}
}

// TestConcurrentAppendsBatch: many sessions appending at once, each
// waiting for its own append before the next, end with every event in
// order and the ledger's sums exact, however the writes were batched.
func TestConcurrentAppendsBatch(t *testing.T) {
	s := openURL(t, pg.URL(t))
	ctx := t.Context()
	const sessions, appends = 48, 8
	for i := range sessions {
		if _, err := s.CreateSession(ctx, key(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, sessions)
	for i := range sessions {
		go func() {
			for range appends {
				ev := &agentrunnerv1.Event{Author: "model", UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: 1}}
				if _, err := s.AppendEvent(ctx, key(i), ev); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range sessions {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range sessions {
		_, evs, err := s.GetSession(ctx, key(i), store.GetOptions{})
		if err != nil || len(evs) != appends || evs[appends-1].GetSequence() != appends {
			t.Fatalf("session %d: %d events, %v", i, len(evs), err)
		}
	}
	user, app, err := s.DailySpend(context.WithoutCancel(ctx), "app", "u", time.Now())
	if err != nil || user.GetModelCalls() != sessions*appends || app.GetModelCalls() != sessions*appends {
		t.Fatalf("ledger: user %d, app %d calls (%v), want %d", user.GetModelCalls(), app.GetModelCalls(), err, sessions*appends)
	}
}
