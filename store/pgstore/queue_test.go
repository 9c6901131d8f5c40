package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
)

// pendingRun is a pending run record of session k.
func pendingRun(k store.SessionKey, id string) *agentrunnerv1.Run {
	return &agentrunnerv1.Run{RunId: id, AppName: k.App, UserId: k.User, SessionId: k.Session,
		Status: agentrunnerv1.RunStatus_RUN_STATUS_PENDING, CreateTime: timestamppb.Now()}
}

func holderOf(runID string) string { return runID + "@test" }

// TestClaimQueuedRunsOnce: two stores (two replicas' pools) take the
// queued runs of many sessions at once; every run is taken exactly once,
// and each session's runs in queue order (a run queued first goes ahead
// of those queued before it).
func TestClaimQueuedRunsOnce(t *testing.T) {
	url := pg.URL(t)
	stores := []*pgstore.Store{openURL(t, url), openURL(t, url)}
	const sessions, per = 8, 4
	want := map[store.SessionKey][]string{}
	for i := range sessions {
		k := store.SessionKey{App: "app", User: "u", Session: fmt.Sprintf("s%d", i)}
		if _, err := stores[0].CreateSession(t.Context(), k, nil); err != nil {
			t.Fatal(err)
		}
		for j := range per {
			id := fmt.Sprintf("r%d.%d", i, j)
			front := j == per-1
			if err := stores[j%2].EnqueueRun(t.Context(), pendingRun(k, id), front); err != nil {
				t.Fatal(err)
			}
			if front {
				want[k] = append([]string{id}, want[k]...)
			} else {
				want[k] = append(want[k], id)
			}
		}
	}
	var mu sync.Mutex
	got := map[store.SessionKey][]string{}
	var wg sync.WaitGroup
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			claimAll(t, s, &mu, got)
		}()
	}
	wg.Wait()
	for k, ids := range want {
		if !slices.Equal(got[k], ids) {
			t.Errorf("session %s: runs taken %q; want %q", k.Session, got[k], ids)
		}
	}
}

// claimAll takes queued runs until no session has any, recording them in
// got in the order taken, and gives each session's lease up at once.
func claimAll(t *testing.T, s *pgstore.Store, mu *sync.Mutex, got map[store.SessionKey][]string) {
	for {
		keys, err := s.QueuedSessions(t.Context(), "app")
		if err != nil {
			t.Error(err)
			return
		}
		if len(keys) == 0 {
			return
		}
		for _, k := range keys {
			// Taken and recorded under mu: the order of takes is the
			// order recorded.
			mu.Lock()
			rec, l, err := s.ClaimQueuedRun(t.Context(), k, store.Lease{}, holderOf, time.Minute)
			if err == nil {
				got[k] = append(got[k], rec.GetRunId())
			}
			mu.Unlock()
			switch {
			case err == nil:
				if err := s.ReleaseLease(t.Context(), l); err != nil {
					t.Error(err)
				}
			case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrAlreadyExists):
			default:
				t.Error(err)
				return
			}
		}
	}
}

// TestClaimSkipsLockedRow: a queued run whose row another transaction
// holds (FOR UPDATE) is passed over, and a second taker never gets it;
// the hand-off of a lease takes the next run or, with none, releases it.
func TestClaimSkipsLockedRow(t *testing.T) {
	s := openURL(t, pg.URL(t))
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"first", "second"} {
		if err := s.EnqueueRun(t.Context(), pendingRun(k, id), false); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := s.Pool().Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(t.Context(), "SELECT 1 FROM run_queue WHERE run_id = 'first' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	rec, l, err := s.ClaimQueuedRun(t.Context(), k, store.Lease{}, holderOf, time.Minute)
	if err != nil || rec.GetRunId() != "second" || l.Holder != "second@test" {
		t.Fatalf("claim beside a locked row = %s, %v, %v; want second", rec.GetRunId(), l, err)
	}
	if _, _, err := s.ClaimQueuedRun(t.Context(), k, store.Lease{}, holderOf, time.Minute); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("claim of a leased session = %v; want ErrAlreadyExists", err)
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	rec, l2, err := s.ClaimQueuedRun(t.Context(), k, l, holderOf, time.Minute)
	if err != nil || rec.GetRunId() != "first" || l2.Token <= l.Token {
		t.Fatalf("hand-off = %s, %v, %v; want first with a newer token", rec.GetRunId(), l2, err)
	}
	if _, _, err := s.ClaimQueuedRun(t.Context(), k, l2, holderOf, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("hand-off of an empty queue = %v; want ErrNotFound", err)
	}
	if _, err := s.SessionLease(t.Context(), k); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lease after an empty hand-off: %v; want released", err)
	}
}

// TestCancelQueuedRun: a cancelled queued run leaves the queue with its
// record stored as end made it; a run that is not queued is ErrNotFound.
func TestCancelQueuedRun(t *testing.T) {
	s := openURL(t, pg.URL(t))
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueRun(t.Context(), pendingRun(k, "q"), false); err != nil {
		t.Fatal(err)
	}
	end := func(rec *agentrunnerv1.Run) *agentrunnerv1.Run {
		rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED
		return rec
	}
	rec, err := s.CancelQueuedRun(t.Context(), "q", end)
	if err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Fatalf("cancel = %v, %v", rec.GetStatus(), err)
	}
	if got, err := s.GetRun(t.Context(), "q"); err != nil || got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Fatalf("stored %v, %v; want CANCELLED", got.GetStatus(), err)
	}
	if _, err := s.CancelQueuedRun(t.Context(), "q", end); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second cancel = %v; want ErrNotFound", err)
	}
	if _, _, err := s.ClaimQueuedRun(t.Context(), k, store.Lease{}, holderOf, time.Minute); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("claim after cancel = %v; want ErrNotFound", err)
	}
	if err := s.EnqueueRun(t.Context(), pendingRun(k, "q"), false); !errors.Is(err, store.ErrAlreadyExists) {
		t.Fatalf("enqueue of a cancelled run = %v; want ErrAlreadyExists", err)
	}
}

// notices subscribes to s and returns a channel of what it hears.
func notices(t *testing.T, s *pgstore.Store) <-chan store.Notice {
	ch := make(chan store.Notice, 256)
	unsub := s.Subscribe(func(n store.Notice) {
		select {
		case ch <- n:
		default:
			t.Errorf("notice %v dropped: the test reads too slowly", n)
		}
	})
	t.Cleanup(unsub)
	return ch
}

// next returns the next notice of a kind, skipping others.
func next(t *testing.T, ch <-chan store.Notice, kind store.NoticeKind) store.Notice {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case n := <-ch:
			if n.Kind == kind {
				return n
			}
		case <-timeout:
			t.Fatalf("no notice of kind %d", kind)
		}
	}
}

// TestNotifications: another store's commits are heard: a run's events
// (readable once heard), its records, a queued run and a cancel request;
// a write that fails is never heard of.
func TestNotifications(t *testing.T) {
	url := pg.URL(t)
	a, b := openURL(t, url), openURL(t, url)
	ch := notices(t, b)
	next(t, ch, store.NoticeResync)
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := a.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	ghost := store.SessionKey{App: "app", User: "u", Session: "missing"}
	if _, err := a.AppendEvent(t.Context(), ghost, textEvent("lost", "ghost")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("append to a missing session = %v", err)
	}
	if _, err := a.AppendEvent(t.Context(), k, textEvent("hello", "run-1")); err != nil {
		t.Fatal(err)
	}
	n := next(t, ch, store.NoticeRun)
	if n.RunID != "run-1" || n.Sequence != 1 {
		t.Fatalf("first run notice = %+v; want run-1 at 1 (none for the failed append)", n)
	}
	evs, _, err := b.ListEvents(t.Context(), k, store.EventFilter{}, store.Page{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("event heard of but not readable: %v, %v", evs, err)
	}
	if err := a.EnqueueRun(t.Context(), pendingRun(k, "run-2"), false); err != nil {
		t.Fatal(err)
	}
	if n := next(t, ch, store.NoticeQueued); n.RunID != "run-2" || n.Key != k {
		t.Fatalf("queued notice = %+v", n)
	}
	if err := a.NotifyCancel(t.Context(), "run-2", "cancel"); err != nil {
		t.Fatal(err)
	}
	if n := next(t, ch, store.NoticeCancel); n.RunID != "run-2" || n.Cause != "cancel" {
		t.Fatalf("cancel notice = %+v", n)
	}
	if err := a.NotifyQueued(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if n := next(t, ch, store.NoticeQueued); n.RunID != "" || n.Key != k {
		t.Fatalf("free session notice = %+v", n)
	}
}

// textEvent is a model's event of run inv saying text.
func textEvent(text, inv string) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Author: "model", InvocationId: inv, Timestamp: timestamppb.Now(),
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}
}

// TestListenerReconnects: when the listening connection is killed, the
// store reconnects, says so (NoticeResync), and hears commits again.
func TestListenerReconnects(t *testing.T) {
	s := openURL(t, pg.URL(t))
	ch := notices(t, s)
	next(t, ch, store.NoticeResync)
	var killed int
	err := s.Pool().QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'agentrunner-listener' AND datname = current_database()`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("killed %d listening connections, %v; want 1", killed, err)
	}
	next(t, ch, store.NoticeResync)
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(t.Context(), k, textEvent("again", "run-3")); err != nil {
		t.Fatal(err)
	}
	if n := next(t, ch, store.NoticeRun); n.RunID != "run-3" {
		t.Fatalf("notice after reconnecting = %+v", n)
	}
}
