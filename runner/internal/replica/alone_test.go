package replica

import (
	"context"
	"fmt"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/live"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
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

// TestAloneDoesNothing: on a store that one process owns, the mode is
// chosen once and a run's every step through it (lease, check, release,
// the end's sweep) touches neither the store nor the runner: there is no
// lease, no queue and nothing to follow elsewhere.
func TestAloneDoesNothing(t *testing.T) {
	h := &touchHost{t: t}
	m := New(Config{AppName: "app", Store: touchStore{t}}, h)
	if _, ok := m.(*alone); !ok {
		t.Fatalf("mode of a store of one process is %T, want *alone", m)
	}
	ctx := t.Context()
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	m.Start()
	if err := m.Take(ctx, k, "e-1", Expect{Stored: true, Resumed: true, Seq: 7}); err != nil {
		t.Fatal(err)
	}
	if got := m.With(ctx, "e-1"); got != ctx {
		t.Error("With added a lease to the run's context")
	}
	var order []string
	m.Release(k, "e-1", func() { order = append(order, "unregister") }, func() { order = append(order, "finish") })
	if fmt.Sprint(order) != "[unregister finish]" {
		t.Errorf("Release did %v, want the run unregistered, then its readers told", order)
	}
	if m.QueuesInStore() || m.QueuesElsewhere(agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE, runrec.ErrRunInProgress) {
		t.Error("a store of one process has a run queue")
	}
	if !m.RunElsewhere(ctx, "e-1", true, runrec.ErrTaken) || m.RunElsewhere(ctx, "e-1", true, runrec.ErrRunInProgress) {
		t.Error("RunElsewhere: only a run another writer took is written elsewhere")
	}
	rec := &agentrunnerv1.Run{RunId: "e-1", Status: agentrunnerv1.RunStatus_RUN_STATUS_RUNNING}
	if done, err := m.RecoverRunning(ctx, rec); err != nil || !done || h.marked != 1 {
		t.Errorf("RecoverRunning = %v, %v (marked %d); want the run marked, at once", done, err, h.marked)
	}
	if here, err := m.RecoverPending(ctx, rec); err != nil || !here {
		t.Errorf("RecoverPending = %v, %v; want it queued here", here, err)
	}
	if n, err := m.Sweep(ctx); n != 0 || err != nil {
		t.Errorf("Sweep = %d, %v", n, err)
	}
	m.Stop()
}
