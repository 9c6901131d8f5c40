package pgstore_test

import (
	"context"
	"errors"
	"fmt"
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

// TestConcurrentAppendsBatch: many sessions of three users, two writers
// each, appending at once end with every event stored once, sequences
// without gaps, and the ledger's sums exact, however the writes were
// batched (batches lock the ledger's shared rows in one order, so none
// deadlocks).
func TestConcurrentAppendsBatch(t *testing.T) {
	var biggest atomic.Int64 // the largest batch, for the log: how writes group is timing's
	s, err := pgstore.Open(t.Context(), pg.URL(t), pgstore.Options{Logger: quiet, OnCommit: func(_ time.Duration, writes int) {
		for n := biggest.Load(); int64(writes) > n && !biggest.CompareAndSwap(n, int64(writes)); n = biggest.Load() {
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	const sessions, writers, appends = 48, 2, 6
	k := func(i int) store.SessionKey {
		return store.SessionKey{App: "app", User: fmt.Sprint("u", i%3), Session: fmt.Sprint("s", i)}
	}
	for i := range sessions {
		if _, err := s.CreateSession(ctx, k(i), nil); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, sessions*writers)
	for i := range sessions * writers {
		go func() {
			for range appends {
				ev := &agentrunnerv1.Event{Author: "model", UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: 1}}
				if _, err := s.AppendEvent(ctx, k(i%sessions), ev); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range sessions * writers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := range sessions {
		_, evs, err := s.GetSession(ctx, k(i), store.GetOptions{})
		if err != nil || len(evs) != writers*appends {
			t.Fatalf("session %d: %d events, %v", i, len(evs), err)
		}
		for j, ev := range evs {
			if ev.GetSequence() != uint64(j+1) {
				t.Fatalf("session %d: event %d has sequence %d", i, j, ev.GetSequence())
			}
		}
	}
	var users int64
	for u := range 3 {
		user, app, err := s.DailySpend(context.WithoutCancel(ctx), "app", fmt.Sprint("u", u), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		users += user.GetModelCalls()
		if app.GetModelCalls() != sessions*writers*appends {
			t.Fatalf("ledger: app %d calls, want %d", app.GetModelCalls(), sessions*writers*appends)
		}
	}
	if users != sessions*writers*appends {
		t.Fatalf("ledger: users' calls sum to %d, want %d", users, sessions*writers*appends)
	}
	t.Logf("largest batch: %d writes", biggest.Load())
}
