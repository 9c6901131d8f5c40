package runner

import (
	"context"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// TestRecoverLoopAdoptsTakenRun: a pending run that a replica took from
// the store's queue and died before starting (PENDING, out of the queue,
// its session's lease free) is found by nothing but Recover: the sweeper
// reads the queue, the reaper RUNNING runs. A runner made by New on
// PostgreSQL recovers periodically on its own (Config.RecoverEvery), so it
// puts the run back in the queue and runs it, with no Recover called, as
// serve's loop used to for the binary only.
func TestRecoverLoopAdoptsTakenRun(t *testing.T) {
	s := openReplicaStore(t, pg.URL(t))
	k := store.SessionKey{App: testApp, User: "u1", Session: "s1"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	rec := runrec.Pending("e-taken-by-a-dead-replica", k, time.Now())
	rec.Input = request(k, "hi").input()
	if err := s.PutRun(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{AppName: testApp, Root: mustAgent(t, "root", "adopted"), Store: s, Replica: "b", RecoverEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
	})
	until(t, "the runner's own recovery runs the taken run", func() bool {
		got, err := r.GetRun(t.Context(), rec.GetRunId())
		return err == nil && got.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	})
	if got := storedTexts(t, s, k); !equalStrings(got, []string{"hi", "adopted"}) {
		t.Errorf("stored %q; want the run's message and its answer", got)
	}
}
