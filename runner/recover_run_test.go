package runner

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// panickyStore panics in PutRun once: a panic in the runner's own
// code after the run's agents are done.
type panickyStore struct {
	*boltstore.Store
	armed atomic.Bool
}

func (s *panickyStore) PutRun(ctx context.Context, rec *agentrunnerv1.Run) error {
	if s.armed.CompareAndSwap(true, false) {
		panic("store bug")
	}
	return s.Store.PutRun(ctx, rec)
}

// TestPanicInRunnerCodeEndsTheRun: a panic in the runner's own code around
// a run (here, storing its final record) ends that run FAILED with the
// panic for its reader, frees the session, and the process goes on.
func TestPanicInRunnerCodeEndsTheRun(t *testing.T) {
	db := newTestStore(t)
	ps := &panickyStore{Store: db}
	ps.armed.Store(true)
	r, err := New(Config{AppName: testApp, Root: mustAgent(t, "root", "hello"), Store: ps})
	if err != nil {
		t.Fatal(err)
	}
	k := newSession(t, db, "u1", "s1")
	var last *agentrunnerv1.Run
	var terminal error
	for u, err := range r.Stream(t.Context(), request(k, "hi")) {
		if err != nil {
			terminal = err
			break
		}
		if u.Run != nil {
			last = u.Run
		}
	}
	var pe *agent.PanicError
	if !errors.As(terminal, &pe) || last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_FAILED {
		t.Fatalf("run ended %v with %v; want FAILED and the runner's panic", last.GetStatus(), terminal)
	}
	// The session is free, and the record says FAILED.
	res := collect(t, r.Run(t.Context(), request(k, "again")))
	if res.err != nil {
		t.Fatalf("next run: %v", res.err)
	}
	got, err := r.GetRun(t.Context(), last.GetRunId())
	if err != nil || got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_FAILED {
		t.Errorf("GetRun = %v, %v; want FAILED", got, err)
	}
}
