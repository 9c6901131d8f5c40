package replica

import (
	"context"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/store"
)

// touchStore is a store of one process (no leases, no queue) that fails
// the test at any call: a run on it must not read or write anything for
// the replicas.
type touchStore struct{ t *testing.T }

func (s touchStore) fail(what string) {
	s.t.Helper()
	s.t.Errorf("the mode of a store of one process called %s", what)
}

func (s touchStore) ListEvents(context.Context, store.SessionKey, store.EventFilter, store.Page) ([]*agentrunnerv1.Event, string, error) {
	s.fail("ListEvents")
	return nil, "", nil
}

func (s touchStore) GetSession(context.Context, store.SessionKey, store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error) {
	s.fail("GetSession")
	return nil, nil, nil
}

func (s touchStore) GetRun(context.Context, string) (*agentrunnerv1.Run, error) {
	s.fail("GetRun")
	return nil, nil
}

func (s touchStore) ListRuns(context.Context, store.SessionKey, store.Page) ([]*agentrunnerv1.Run, string, error) {
	s.fail("ListRuns")
	return nil, "", nil
}

// touchHost fails the test at any call but MarkInterrupted, which
// Recover asks for.
type touchHost struct {
	t      *testing.T
	marked int
}

func (h *touchHost) Lookup(string) *live.Run           { h.t.Error("Lookup"); return nil }
func (h *touchHost) SessionFree(store.SessionKey) bool { h.t.Error("SessionFree"); return false }
func (h *touchHost) CancelLocal(string, error)         { h.t.Error("CancelLocal") }
func (h *touchHost) StartClaimed(*agentrunnerv1.Run, func(*live.Run)) bool {
	h.t.Error("StartClaimed")
	return false
}

func (h *touchHost) MarkInterrupted(context.Context, *agentrunnerv1.Run) error {
	h.marked++
	return nil
}

// TestAloneHasNoLeaseNorQueue: on a store that one process owns, the
// capabilities are chosen once and the store's absent ones are absent
// (no lease, no queue, no background work, no recovery loop however
// short its period), and recovery, the one thing left to decide, touches
// neither the store nor the runner beyond marking the run.
func TestAloneHasNoLeaseNorQueue(t *testing.T) {
	h := &touchHost{t: t}
	called := false
	set := New(Config{AppName: "app", Store: touchStore{t}, RecoverEvery: time.Nanosecond}, h,
		func(context.Context) (int, int, error) { called = true; return 0, 0, nil })
	if set.Leases != nil || set.Queue != nil || len(set.daemons) != 0 {
		t.Fatalf("a store of one process has leases %T, queue %T, %d daemons; want none", set.Leases, set.Queue, len(set.daemons))
	}
	if _, ok := set.Recovery.(alone); !ok {
		t.Fatalf("recovery of a store of one process is %T, want alone", set.Recovery)
	}
	if set.Claims == nil {
		t.Fatal("no claims")
	}
	ctx := t.Context()
	set.Start()
	rec := &agentrunnerv1.Run{RunId: "e-1", Status: agentrunnerv1.RunStatus_RUN_STATUS_RUNNING}
	if done, err := set.Recovery.RecoverRunning(ctx, rec); err != nil || !done || h.marked != 1 {
		t.Errorf("RecoverRunning = %v, %v (marked %d); want the run marked, at once", done, err, h.marked)
	}
	if here, err := set.Recovery.RecoverPending(ctx, rec); err != nil || !here {
		t.Errorf("RecoverPending = %v, %v; want it queued here", here, err)
	}
	set.Stop()
	if called {
		t.Error("a store of one process ran the recovery loop")
	}
}
