package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
)

// pg is this test binary's PostgreSQL cluster, started by the first test
// that needs it (the replica tests); the other tests use bbolt.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &pg)) }

// replicaStore is one replica's connection to the shared database. Cut
// makes its heartbeats fail as a replica cut off from the database (or
// dead) would: its leases expire while it still thinks it runs.
type replicaStore struct {
	*pgstore.Store
	cut atomic.Bool
	// refusals counts the AcquireLease calls refused as a held lease.
	refusals atomic.Int64
}

func (s *replicaStore) AcquireLease(ctx context.Context, k store.SessionKey, holder string, ttl time.Duration) (store.Lease, error) {
	l, err := s.Store.AcquireLease(ctx, k, holder, ttl)
	if errors.Is(err, store.ErrAlreadyExists) {
		s.refusals.Add(1)
	}
	return l, err
}

func (s *replicaStore) RenewLease(ctx context.Context, l store.Lease, ttl time.Duration) (store.Lease, error) {
	if s.cut.Load() {
		return store.Lease{}, errors.New("replica cut off from the database")
	}
	return s.Store.RenewLease(ctx, l, ttl)
}

// openReplicaStore opens a pool of its own on the database at url, as
// each replica process does.
func openReplicaStore(t *testing.T, url string) *replicaStore {
	t.Helper()
	s, err := pgstore.Open(t.Context(), url, pgstore.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return &replicaStore{Store: s}
}

// newReplica returns a runner named name over s, with short leases.
func newReplica(t *testing.T, name string, s *replicaStore, root agent.Agent, ttl time.Duration) *Runner {
	t.Helper()
	r, err := New(Config{AppName: testApp, Root: root, Store: s, Replica: name, LeaseTTL: ttl, LeaseHeartbeat: ttl / 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Bounded: a failed test may leave a run held at its gate.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = r.Shutdown(ctx)
	})
	return r
}

// TestReplicasNeverInterleave: runs of one session sent to two replicas
// at once never interleave: each run's events are contiguous in the
// session, and a run either runs whole or is refused as a busy session.
func TestReplicasNeverInterleave(t *testing.T) {
	url := pg.URL(t)
	sa, sb := openReplicaStore(t, url), openReplicaStore(t, url)
	steps := []string{"one", "two", "three", "four", "five"}
	a := newReplica(t, "a", sa, mustAgent(t, "root", steps...), 5*time.Second)
	b := newReplica(t, "b", sb, mustAgent(t, "root", steps...), 5*time.Second)
	k := store.SessionKey{App: testApp, User: "u1", Session: "s1"}
	if _, err := sa.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	var ran, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := []*Runner{a, b}[i%2]
			for j := range 6 {
				res := collect(t, r.Run(context.Background(), request(k, fmt.Sprintf("m%d.%d", i, j))))
				switch {
				case res.err == nil:
					ran.Add(1)
				case errors.Is(res.err, ErrRunInProgress):
					refused.Add(1)
				default:
					t.Errorf("run: %v", res.err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d runs ran, %d refused as busy", ran.Load(), refused.Load())
	if ran.Load() == 0 {
		t.Fatal("no run ran")
	}
	checkContiguous(t, sa, k, int(ran.Load()), 1+len(steps))
}

// checkContiguous checks that the session holds runs whole runs of per
// events each, one after another, with strictly increasing sequences.
func checkContiguous(t *testing.T, s *replicaStore, k store.SessionKey, runs, per int) {
	t.Helper()
	_, events, err := s.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != runs*per {
		t.Fatalf("%d events stored; want %d runs of %d", len(events), runs, per)
	}
	seen := map[string]bool{}
	var last uint64
	for i, ev := range events {
		if ev.GetSequence() <= last {
			t.Fatalf("event %d has sequence %d after %d", i, ev.GetSequence(), last)
		}
		last = ev.GetSequence()
		if i%per == 0 {
			if seen[ev.GetInvocationId()] {
				t.Fatalf("run %s resumes at event %d after another run's events", ev.GetInvocationId(), i)
			}
			seen[ev.GetInvocationId()] = true
		} else if prev := events[i-1].GetInvocationId(); ev.GetInvocationId() != prev {
			t.Fatalf("event %d is run %s's, inside run %s", i, ev.GetInvocationId(), prev)
		}
	}
}

// gate holds an agent after its first event until the test opens it.
type gate struct {
	reached, open chan struct{}
	once          sync.Once
}

func newGate() *gate { return &gate{reached: make(chan struct{}), open: make(chan struct{})} }

// gatedAgent says "before", waits at g, then says "after".
func gatedAgent(t *testing.T, g *gate) agent.Agent {
	return mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if !yield(say("before"), nil) {
				return
			}
			g.once.Do(func() { close(g.reached) })
			select {
			case <-g.open:
			case <-ctx.Done():
				return
			}
			yield(say("after"), nil)
		}
	}})
}

// streamEnd is how a stream ended: its last record and terminal error.
type streamEnd struct {
	rec *agentrunnerv1.Run
	err error
}

// streamInBackground runs req on r and reports how its stream ended.
func streamInBackground(r *Runner, req Request) <-chan streamEnd {
	ch := make(chan streamEnd, 1)
	go func() {
		var end streamEnd
		for u, err := range r.Stream(context.Background(), req) {
			if err != nil {
				end.err = err
				break
			}
			if u.Run != nil {
				end.rec = u.Run
			}
		}
		ch <- end
	}()
	return ch
}

// until calls cond until it holds, failing after a bound.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// failoverTTL is the lease lifetime of the failover tests: short, so that
// an expiry comes soon, but many heartbeats (an eighth of it) long, so
// that a live replica on a loaded machine keeps its leases.
const failoverTTL = 1500 * time.Millisecond

// failover is two replicas on one database, and a run of replica a held
// at its gate after its first event.
type failover struct {
	sa, sb *replicaStore
	a, b   *Runner
	g      *gate
	k      store.SessionKey
	runID  string
	endA   <-chan streamEnd
}

// startFailover starts replica a's run and checks that replica b leaves
// it alone while a renews its lease: b refuses the session as busy,
// naming the run, and b's Recover interrupts nothing over several lease
// periods.
func startFailover(t *testing.T, ttl time.Duration) *failover {
	url := pg.URL(t)
	f := &failover{sa: openReplicaStore(t, url), sb: openReplicaStore(t, url), g: newGate()}
	f.a = newReplica(t, "a", f.sa, gatedAgent(t, f.g), ttl)
	f.b = newReplica(t, "b", f.sb, mustAgent(t, "root", "resumed"), ttl)
	f.k = store.SessionKey{App: testApp, User: "u1", Session: "s1"}
	if _, err := f.sa.CreateSession(t.Context(), f.k, nil); err != nil {
		t.Fatal(err)
	}
	f.endA = streamInBackground(f.a, request(f.k, "hi"))
	waitClosed(t, f.g.reached, "replica a's run to store its first event")
	recs, err := f.sb.ListUnfinishedRuns(t.Context())
	if err != nil || len(recs) != 1 || recs[0].GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING {
		t.Fatalf("unfinished runs = %v, %v; want a's run RUNNING", recs, err)
	}
	f.runID = recs[0].GetRunId()
	res := collect(t, f.b.Run(t.Context(), request(f.k, "meanwhile")))
	if !errors.Is(res.err, ErrRunInProgress) || !strings.Contains(res.err.Error(), f.runID) {
		t.Fatalf("run on replica b = %v; want ErrRunInProgress naming %s", res.err, f.runID)
	}
	for start := time.Now(); time.Since(start) < 2*ttl; time.Sleep(ttl / 4) {
		if n, _, err := f.b.Recover(t.Context()); err != nil || n != 0 {
			t.Fatalf("Recover on replica b beside a live a = %d, %v; want 0 interrupted", n, err)
		}
	}
	return f
}

// enqueueOnA queues a run ("queued") behind a's blocked run, on a.
func (f *failover) enqueueOnA(t *testing.T) *agentrunnerv1.Run {
	t.Helper()
	req := request(f.k, "queued")
	req.Strategy = agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE
	queued, err := f.a.Start(t.Context(), req)
	if err != nil || queued.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
		t.Fatalf("enqueue on a = %v, %v; want PENDING", queued.GetStatus(), err)
	}
	return queued
}

// cutA cuts replica a off and waits until b, once a's lease has expired,
// marks a's run INTERRUPTED: its Recover, or its reaper, which looks as
// the lease runs out (whichever comes first).
func (f *failover) cutA(t *testing.T) {
	t.Helper()
	f.sa.cut.Store(true)
	until(t, "replica b interrupts a's run", func() bool {
		if _, _, err := f.b.Recover(t.Context()); err != nil {
			t.Fatal(err)
		}
		rec, err := f.b.GetRun(t.Context(), f.runID)
		return err == nil && rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED
	})
	if rec, err := f.b.GetRun(t.Context(), f.runID); err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("GetRun on b = %v, %v; want INTERRUPTED", rec.GetStatus(), err)
	}
}

// endOfA waits for replica a's run to end, and checks it ended fenced.
func (f *failover) endOfA(t *testing.T) {
	t.Helper()
	select {
	case end := <-f.endA:
		if !errors.Is(end.err, store.ErrFenced) || end.rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_FAILED {
			t.Fatalf("a's run ended %v with %v; want FAILED, fenced", end.rec.GetStatus(), end.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a's run to end")
	}
}

// storedTexts returns the texts of the session's stored events.
func storedTexts(t *testing.T, s *replicaStore, k store.SessionKey) []string {
	t.Helper()
	_, events, err := s.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, ev := range events {
		texts = append(texts, textOf(ev.GetContent())+ev.GetErrorCode())
	}
	return texts
}

// TestReplicaFailover: replica a's run outlives a's lease (a is cut off
// from the database); replica b's Recover marks it INTERRUPTED, ResumeRun
// on b completes it, and when a's agent goes on, a is a stale writer: its
// append is refused, it stores nothing more, and b's record stands.
func TestReplicaFailover(t *testing.T) {
	f := startFailover(t, failoverTTL)
	f.cutA(t)
	var final *agentrunnerv1.Run
	for u, err := range f.b.Resume(t.Context(), ResumeRequest{RunID: f.runID}) {
		if err != nil {
			t.Fatalf("ResumeRun on b: %v", err)
		}
		if u.Run != nil {
			final = u.Run
		}
	}
	if final.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("resumed run ended %v; want SUCCEEDED", final.GetStatus())
	}
	want := []string{"hi", "before", "INTERRUPTED", "resumed"}
	if got := storedTexts(t, f.sb, f.k); !equalStrings(got, want) {
		t.Fatalf("stored %q; want %q", got, want)
	}
	close(f.g.open)
	f.endOfA(t)
	if got := storedTexts(t, f.sb, f.k); !equalStrings(got, want) {
		t.Errorf("after a's stale write, stored %q; want %q", got, want)
	}
	if rec, err := f.b.GetRun(t.Context(), f.runID); err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("GetRun = %v, %v; want b's SUCCEEDED", rec.GetStatus(), err)
	}
	// Both replicas run the session again.
	for _, r := range []*Runner{f.a, f.b} {
		f.sa.cut.Store(false)
		if res := collect(t, r.Run(t.Context(), request(f.k, "again"))); res.err != nil && !errors.Is(res.err, ErrRunInProgress) {
			t.Errorf("run after the failover: %v", res.err)
		}
	}
}

// TestHeartbeatStopsFencedRun: a replica whose heartbeat finds its lease
// taken over stops its run at once, without waiting for its next append.
func TestHeartbeatStopsFencedRun(t *testing.T) {
	f := startFailover(t, failoverTTL)
	f.cutA(t)
	f.sa.cut.Store(false) // a's next heartbeat reaches the database
	f.endOfA(t)
	want := []string{"hi", "before", "INTERRUPTED"}
	if got := storedTexts(t, f.sb, f.k); !equalStrings(got, want) {
		t.Errorf("stored %q; want %q", got, want)
	}
}

// TestAdoptQueuedRun: a run queued on replica a behind a's running run
// (in the store's queue) is left alone by b's Recover while a lives; once
// a's leases expire, b takes it from the queue and runs it, and a, when
// its run ends, does not run it a second time.
func TestAdoptQueuedRun(t *testing.T) {
	f := startFailover(t, failoverTTL)
	queued := f.enqueueOnA(t)
	if _, n, err := f.b.Recover(t.Context()); err != nil || n != 0 {
		t.Fatalf("Recover on b beside a live a requeued %d, %v; want 0", n, err)
	}
	f.sa.cut.Store(true)
	// The queued run waits in the store's queue: b's Recover takes it
	// once a's lease expired (or b's sweeper does, woken by the queue).
	// Whichever takes it first marks a's cut run INTERRUPTED before the
	// queued run starts.
	until(t, "b interrupts a's run", func() bool {
		if _, _, err := f.b.Recover(t.Context()); err != nil {
			t.Fatal(err)
		}
		rec, err := f.b.GetRun(t.Context(), f.runID)
		return err == nil && rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED
	})
	until(t, "b runs the adopted run", func() bool {
		rec, err := f.b.GetRun(t.Context(), queued.GetRunId())
		return err == nil && rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	})
	f.sa.cut.Store(false)
	close(f.g.open)
	f.endOfA(t)
	until(t, "a's queue drops the run", func() bool { return !f.a.HasLiveRun(queued.GetRunId()) })
	want := []string{"hi", "before", "INTERRUPTED", "queued", "resumed"}
	if got := storedTexts(t, f.sb, f.k); !equalStrings(got, want) {
		t.Errorf("stored %q; want %q", got, want)
	}
	if rec, err := f.b.GetRun(t.Context(), queued.GetRunId()); err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("GetRun = %v, %v; want b's SUCCEEDED", rec.GetStatus(), err)
	}
}

// TestSweeperInterruptsBeforeQueuedRun: when a replica's sweep takes a
// queued run of a session whose replica died mid-run (its lease expired),
// the cut run is marked INTERRUPTED before the queued run starts, with no
// Recover in between: the session's history says where the cut run ended
// before the next run adds to it. (Recover sweeps the queues too, so a
// Recover that found the lease still live a moment before did the same.)
func TestSweeperInterruptsBeforeQueuedRun(t *testing.T) {
	f := startFailover(t, failoverTTL)
	queued := f.enqueueOnA(t)
	f.sa.cut.Store(true)
	// b's reaper may interrupt the cut run first, as the lease runs out,
	// and wake b's sweeper: the queued run then starts either way, after
	// the interruption.
	until(t, "b's sweep runs the queued run", func() bool {
		if _, err := f.b.replicas.Queue.Sweep(t.Context()); err != nil {
			t.Fatal(err)
		}
		rec, err := f.b.GetRun(t.Context(), queued.GetRunId())
		return err == nil && rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	})
	want := []string{"hi", "before", "INTERRUPTED", "queued", "resumed"}
	if got := storedTexts(t, f.sb, f.k); !equalStrings(got, want) {
		t.Errorf("stored %q; want %q", got, want)
	}
	if rec, err := f.b.GetRun(t.Context(), f.runID); err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Errorf("cut run = %v, %v; want INTERRUPTED", rec.GetStatus(), err)
	}
	f.sa.cut.Store(false)
	close(f.g.open)
	f.endOfA(t)
}

// TestRunWaitsForRecoveryClaim: a run that finds its session held by a
// replica's recovery, which claims a session's lease for a moment to look
// at a run left behind, waits for the claim to end instead of being
// refused as a busy session (each replica's Recover runs every lease
// lifetime, so a run sent just then would be refused for nothing).
func TestRunWaitsForRecoveryClaim(t *testing.T) {
	url := pg.URL(t)
	sa, sb := openReplicaStore(t, url), openReplicaStore(t, url)
	a := newReplica(t, "a", sa, mustAgent(t, "root", "answer"), 5*time.Second)
	k := store.SessionKey{App: testApp, User: "u1", Session: "claimed"}
	if _, err := sa.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	// "recover@" prefixes the holder of the claims Recover takes (see
	// package replica).
	claim, err := sb.Store.AcquireLease(t.Context(), k, "recover@b", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	end := streamInBackground(a, request(k, "while recovery looks"))
	until(t, "the run found the session claimed", func() bool { return sa.refusals.Load() > 0 })
	if err := sb.ReleaseLease(t.Context(), claim); err != nil {
		t.Fatal(err)
	}
	got := <-end
	if got.err != nil || got.rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("run = %v, %v; want SUCCEEDED once the claim ended", got.rec.GetStatus(), got.err)
	}
}
