package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Runs across replicas (package replica): two replicas on one database, both
// with the gated agent (user message, "before", the gate, "after": three
// events a run), and replica a's first run held at the gate.

// xreplicaTTL is long: these tests wait for no lease to expire, and a live
// replica on a loaded machine must keep its leases.
const xreplicaTTL = 10 * time.Second

type pair struct {
	sa, sb *replicaStore
	a, b   *Runner
	g      *gate
	k      store.SessionKey
	runID  string           // a's run, held at the gate
	endA   <-chan streamEnd // how a's run's stream ended
}

// startPair starts replica a's run and waits until it holds the gate.
func startPair(t *testing.T) *pair {
	url := pg.URL(t)
	p := &pair{sa: openReplicaStore(t, url), sb: openReplicaStore(t, url), g: newGate()}
	p.a = newReplica(t, "a", p.sa, gatedAgent(t, p.g), xreplicaTTL)
	p.b = newReplica(t, "b", p.sb, gatedAgent(t, p.g), xreplicaTTL)
	p.k = store.SessionKey{App: testApp, User: "u1", Session: "s1"}
	if _, err := p.sa.CreateSession(t.Context(), p.k, nil); err != nil {
		t.Fatal(err)
	}
	p.endA = streamInBackground(p.a, request(p.k, "hi"))
	waitClosed(t, p.g.reached, "replica a's run to store its first event")
	recs, err := p.sb.ListUnfinishedRuns(t.Context())
	if err != nil || len(recs) != 1 {
		t.Fatalf("unfinished runs = %v, %v; want a's run", recs, err)
	}
	p.runID = recs[0].GetRunId()
	return p
}

// enqueue sends a run with strategy s to r and checks that it is queued.
func (p *pair) enqueue(t *testing.T, r *Runner, text string, s agentrunnerv1.MultitaskStrategy) string {
	t.Helper()
	req := request(p.k, text)
	req.Strategy = s
	rec, err := r.Start(t.Context(), req)
	if err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
		t.Fatalf("start %q = %v, %v; want PENDING", text, rec.GetStatus(), err)
	}
	return rec.GetRunId()
}

// waitStatus waits until run id's stored record has status want.
func waitStatus(t *testing.T, s *replicaStore, id string, want agentrunnerv1.RunStatus) {
	t.Helper()
	until(t, "run "+id+" is "+want.String(), func() bool {
		rec, err := s.GetRun(t.Context(), id)
		return err == nil && rec.GetStatus() == want
	})
}

// runOrder returns the runs of the session's stored events, in order.
func runOrder(t *testing.T, s *replicaStore, k store.SessionKey) []string {
	t.Helper()
	_, events, err := s.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ev := range events {
		if len(ids) == 0 || ids[len(ids)-1] != ev.GetInvocationId() {
			ids = append(ids, ev.GetInvocationId())
		}
	}
	return ids
}

// TestEnqueueAcrossReplicas: runs enqueued on both replicas while replica
// a runs the session are PENDING at once, and run after a's run, each
// exactly once, whole, in the order they were queued; b's stream of the
// run it queued follows it to its end, wherever it runs.
func TestEnqueueAcrossReplicas(t *testing.T) {
	p := startPair(t)
	enq := agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE
	req := request(p.k, "q1")
	req.Strategy = enq
	first := make(chan *agentrunnerv1.Run, 1)
	streamed := make(chan []Update, 1)
	go func() {
		var got []Update
		for u, err := range p.b.Stream(context.Background(), req) {
			if len(got) == 0 {
				first <- u.Run
			}
			if err != nil {
				u.Err = err
			}
			got = append(got, u)
		}
		streamed <- got
	}()
	var rec *agentrunnerv1.Run
	select {
	case rec = <-first:
	case <-time.After(20 * time.Second):
		t.Fatal("b's stream did not start")
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
		t.Fatalf("b's stream starts with %v; want PENDING", rec)
	}
	want := []string{p.runID, rec.GetRunId()}
	want = append(want, p.enqueue(t, p.a, "q2", enq), p.enqueue(t, p.b, "q3", enq), p.enqueue(t, p.a, "q4", enq))
	close(p.g.open)
	for _, id := range want[1:] {
		waitStatus(t, p.sa, id, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	}
	if got := runOrder(t, p.sa, p.k); !equalStrings(got, want) {
		t.Errorf("runs in the session %q; want %q", got, want)
	}
	checkContiguous(t, p.sa, p.k, len(want), 3)
	got := <-streamed
	var texts []string
	for _, u := range got[1 : len(got)-1] {
		texts = append(texts, textOf(u.Event.GetContent()))
	}
	last := got[len(got)-1].Run
	if !equalStrings(texts, []string{"before", "after"}) || last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("b's stream = %q, then %v; want before, after, SUCCEEDED", texts, last.GetStatus())
	}
}

// TestQueuedRunOutlivesItsReplica: a run queued on replica b, which
// closes before it starts, runs on a when a's run ends.
func TestQueuedRunOutlivesItsReplica(t *testing.T) {
	p := startPair(t)
	id := p.enqueue(t, p.b, "queued", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := p.b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.sb.Close(); err != nil {
		t.Fatal(err)
	}
	close(p.g.open)
	waitStatus(t, p.sa, id, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	if got, want := runOrder(t, p.sa, p.k), []string{p.runID, id}; !equalStrings(got, want) {
		t.Errorf("runs in the session %q; want %q", got, want)
	}
	checkContiguous(t, p.sa, p.k, 2, 3)
}

// TestInterruptAcrossReplicas: a run sent to b with
// MULTITASK_STRATEGY_INTERRUPT cancels a's run, goes ahead of a run
// queued before it, and runs once a's run has ended.
func TestInterruptAcrossReplicas(t *testing.T) {
	p := startPair(t)
	queued := p.enqueue(t, p.a, "queued", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	id := p.enqueue(t, p.b, "interrupt", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_INTERRUPT)
	select {
	case end := <-p.endA:
		if end.rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || !errors.Is(end.err, context.Canceled) {
			t.Fatalf("a's run ended %v, %v; want CANCELLED", end.rec.GetStatus(), end.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a's run was not interrupted")
	}
	close(p.g.open)
	waitStatus(t, p.sa, queued, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	if rec, err := p.sa.GetRun(t.Context(), id); err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("interrupting run = %v, %v; want SUCCEEDED", rec.GetStatus(), err)
	}
	if got, want := runOrder(t, p.sa, p.k), []string{p.runID, id, queued}; !equalStrings(got, want) {
		t.Errorf("runs in the session %q; want %q", got, want)
	}
	want := []string{"hi", "before", "CANCELLED", "interrupt", "before", "after", "queued", "before", "after"}
	if got := storedTexts(t, p.sa, p.k); !equalStrings(got, want) {
		t.Errorf("stored %q; want %q", got, want)
	}
}

// TestAttachAcrossReplicas: AttachRun on b of a's run gets every stored
// event once, in order, those stored after it attached too, and the
// final record; an attacher that goes away returns.
func TestAttachAcrossReplicas(t *testing.T) {
	p := startPair(t)
	events := make(chan string, 16)
	final := make(chan *agentrunnerv1.Run, 1)
	go func() {
		var last *agentrunnerv1.Run
		for u, err := range p.b.Attach(context.Background(), p.runID, 0) {
			switch {
			case err != nil:
				t.Errorf("attach: %v", err)
			case u.Event != nil:
				events <- textOf(u.Event.GetContent())
			case u.Run != nil:
				last = u.Run
			}
		}
		final <- last
	}()
	next := func() string {
		select {
		case s := <-events:
			return s
		case <-time.After(20 * time.Second):
			t.Fatal("no event")
			return ""
		}
	}
	if got := []string{next(), next()}; !equalStrings(got, []string{"hi", "before"}) {
		t.Fatalf("attacher got %q first; want hi, before", got)
	}
	// A second attacher, from after "hi", goes away before the run ends,
	// and leaves nothing behind: its subscription is closed.
	subs := p.sb.Subscribers() // b's runner and the first attacher
	ctx, cancel := context.WithCancel(t.Context())
	gone := make(chan error, 1)
	go func() {
		var last error
		for u, err := range p.b.Attach(ctx, p.runID, 1) {
			if u.Run != nil && u.Run.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_RUNNING {
				// Subscribed before its first record.
				if n := p.sb.Subscribers(); n != subs+1 {
					t.Errorf("%d subscriptions with a second attacher; want %d", n, subs+1)
				}
				cancel()
			}
			last = err
		}
		gone <- last
	}()
	select {
	case err := <-gone:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled attacher ended with %v; want context.Canceled", err)
		}
		if n := p.sb.Subscribers(); n != subs {
			t.Errorf("%d subscriptions after the attacher went away; want %d", n, subs)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a cancelled attacher did not return")
	}
	close(p.g.open)
	if got := next(); got != "after" {
		t.Fatalf("attacher got %q; want after", got)
	}
	select {
	case rec := <-final:
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || rec.GetLastSequence() != 3 {
			t.Fatalf("attacher's last record %v; want SUCCEEDED at 3", rec)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the attacher did not end")
	}
	if len(events) != 0 {
		t.Fatalf("attacher got %q after the end", <-events)
	}
}

// TestCancelAcrossReplicas: CancelRun on b of a run queued in the store
// ends it CANCELLED and it never runs; of a's running run, a's run ends
// CANCELLED and b's call returns the CANCELLED record.
func TestCancelAcrossReplicas(t *testing.T) {
	p := startPair(t)
	queued := p.enqueue(t, p.a, "queued", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	rec, err := p.b.Cancel(t.Context(), queued)
	if err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Fatalf("cancel of the queued run = %v, %v; want CANCELLED", rec.GetStatus(), err)
	}
	rec, err = p.b.Cancel(t.Context(), p.runID)
	if err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Fatalf("cancel of a's run on b = %v, %v; want CANCELLED", rec.GetStatus(), err)
	}
	select {
	case end := <-p.endA:
		if end.rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
			t.Fatalf("a's run ended %v, %v; want CANCELLED", end.rec.GetStatus(), end.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a's run did not end")
	}
	close(p.g.open)
	until(t, "a's session is free", func() bool { return !p.a.HasLiveRun(p.runID) })
	if _, err := p.sa.SessionLease(t.Context(), p.k); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session lease after the runs: %v; want none", err)
	}
	want := []string{"hi", "before", "CANCELLED"}
	if got := storedTexts(t, p.sa, p.k); !equalStrings(got, want) {
		t.Errorf("stored %q; want %q", got, want)
	}
	if rec, err := p.sa.GetRun(t.Context(), queued); err != nil || rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Errorf("queued run = %v, %v; want CANCELLED", rec.GetStatus(), err)
	}
}

// TestEnqueueBehindQueuedRuns: an ENQUEUE run sent while the session's
// lease is free but runs wait in the store's queue (their replica went
// away between two runs) goes behind them.
func TestEnqueueBehindQueuedRuns(t *testing.T) {
	url := pg.URL(t)
	sa := openReplicaStore(t, url)
	b := newReplica(t, "b", openReplicaStore(t, url), mustAgent(t, "root", "ok"), xreplicaTTL)
	k := store.SessionKey{App: testApp, User: "u1", Session: "s1"}
	// b's sweeper looks at every queue once its listener is connected:
	// before the queue below has anything, so that b's own run finds the
	// waiting one.
	until(t, "b's store listens", func() bool {
		var n int
		err := sa.Pool().QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND application_name = 'agentrunner-listener' AND query LIKE 'LISTEN agentrunner_cancel%'`).Scan(&n)
		return err == nil && n == 1
	})
	if _, err := sa.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	// Left in the queue by a replica that went away between two runs:
	// written here without the notification EnqueueRun sends, which would
	// wake b's sweeper.
	waiting := &agentrunnerv1.Run{RunId: "e-waiting", AppName: k.App, UserId: k.User, SessionId: k.Session,
		Status: agentrunnerv1.RunStatus_RUN_STATUS_PENDING, CreateTime: timestamppb.Now(),
		Input: &agentrunnerv1.RunInput{NewMessage: userText("waiting")}}
	if err := sa.PutRun(t.Context(), waiting); err != nil {
		t.Fatal(err)
	}
	_, err := sa.Pool().Exec(t.Context(), `INSERT INTO run_queue (run_id, app_name, user_id, session_id, position)
		VALUES ($1, $2, $3, $4, nextval('run_queue_position'))`, waiting.GetRunId(), k.App, k.User, k.Session)
	if err != nil {
		t.Fatal(err)
	}
	req := request(k, "late")
	req.Strategy = agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE
	res := collect(t, b.Run(t.Context(), req))
	if res.err != nil {
		t.Fatal(res.err)
	}
	if got, want := storedTexts(t, sa, k), []string{"waiting", "ok", "late", "ok"}; !equalStrings(got, want) {
		t.Errorf("stored %q; want %q", got, want)
	}
}

// TestQueuedRunStreamsPartialsHere: a run queued in the store behind a
// run of the same replica, which runs it next, is streamed to its reader
// from the live run once it starts there: partial events included.
func TestQueuedRunStreamsPartialsHere(t *testing.T) {
	g := newGate()
	root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			partial := say("typing")
			partial.Partial = true
			if !yield(partial, nil) || !yield(say("before"), nil) {
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
	s := openReplicaStore(t, pg.URL(t))
	a := newReplica(t, "a", s, root, xreplicaTTL)
	k := store.SessionKey{App: testApp, User: "u1", Session: "s1"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	first := streamInBackground(a, request(k, "hi"))
	waitClosed(t, g.reached, "the first run to reach the gate")
	req := request(k, "queued")
	req.Strategy = agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE
	var got []string
	var last *agentrunnerv1.Run
	for u, err := range a.Stream(t.Context(), req) {
		switch {
		case err != nil:
			t.Fatal(err)
		case u.Event != nil:
			got = append(got, fmt.Sprintf("%s/%v", textOf(u.Event.GetContent()), u.Event.GetPartial()))
		case u.Run != nil:
			if last == nil {
				if u.Run.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_PENDING {
					t.Fatalf("queued run starts %v; want PENDING", u.Run.GetStatus())
				}
				close(g.open)
			}
			last = u.Run
		}
	}
	if want := []string{"typing/true", "before/false", "after/false"}; !equalStrings(got, want) {
		t.Errorf("queued run's stream %q; want %q", got, want)
	}
	if last.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("queued run ended %v", last.GetStatus())
	}
	if end := <-first; end.rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("first run ended %v, %v", end.rec.GetStatus(), end.err)
	}
}

// TestDrainingReplicaHandsQueueOver: replica a, shutting down, interrupts
// its run and gives the session up without taking its queue: replica b,
// told so, runs the run queued there.
func TestDrainingReplicaHandsQueueOver(t *testing.T) {
	p := startPair(t)
	id := p.enqueue(t, p.b, "queued", agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_ENQUEUE)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // no drain: a's run is interrupted at once
	if err := p.a.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("shutdown of a = %v; want its runs interrupted", err)
	}
	if end := <-p.endA; end.rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("a's run ended %v, %v; want INTERRUPTED", end.rec.GetStatus(), end.err)
	}
	close(p.g.open)
	waitStatus(t, p.sb, id, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	if got, want := runOrder(t, p.sb, p.k), []string{p.runID, id}; !equalStrings(got, want) {
		t.Errorf("runs in the session %q; want %q", got, want)
	}
}

// deafStore is a replica's store whose notices can be lost, as while its
// listening connection reconnects, and resynced (NoticeResync).
type deafStore struct {
	*replicaStore
	deaf atomic.Bool
	mu   sync.Mutex
	fns  map[int]func(store.Notice)
	next int
}

func (s *deafStore) Subscribe(fn func(store.Notice)) func() {
	s.mu.Lock()
	id := s.next
	s.next++
	if s.fns == nil {
		s.fns = map[int]func(store.Notice){}
	}
	s.fns[id] = fn
	s.mu.Unlock()
	unsub := s.replicaStore.Subscribe(func(n store.Notice) {
		if !s.deaf.Load() {
			fn(n)
		}
	})
	return func() {
		unsub()
		s.mu.Lock()
		delete(s.fns, id)
		s.mu.Unlock()
	}
}

// resync hears again and tells the subscribers that notices were lost.
func (s *deafStore) resync() {
	s.deaf.Store(false)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, fn := range s.fns {
		fn(store.Notice{Kind: store.NoticeResync})
	}
}

// TestAttachCatchesUpAfterLostNotices: an attacher on b whose store lost
// the notices of a's last event and record (b's listener was away) gets
// them once the listener is back (NoticeResync), from the store.
func TestAttachCatchesUpAfterLostNotices(t *testing.T) {
	p := startPair(t)
	sb := &deafStore{replicaStore: p.sb}
	b, err := New(Config{AppName: testApp, Root: gatedAgent(t, p.g), Store: sb, Replica: "b2", LeaseTTL: xreplicaTTL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Shutdown(context.Background()) })
	events := make(chan string, 16)
	final := make(chan *agentrunnerv1.Run, 1)
	go func() {
		var last *agentrunnerv1.Run
		for u, err := range b.Attach(context.Background(), p.runID, 0) {
			switch {
			case err != nil:
				t.Errorf("attach: %v", err)
			case u.Event != nil:
				events <- textOf(u.Event.GetContent())
			case u.Run != nil:
				last = u.Run
			}
		}
		final <- last
	}()
	for _, want := range []string{"hi", "before"} {
		select {
		case got := <-events:
			if got != want {
				t.Fatalf("attacher got %q; want %q", got, want)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("attacher did not get %q", want)
		}
	}
	sb.deaf.Store(true)
	close(p.g.open)
	waitStatus(t, p.sa, p.runID, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED)
	sb.resync()
	select {
	case rec := <-final:
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Fatalf("attacher's last record %v; want SUCCEEDED", rec.GetStatus())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the attacher did not catch up")
	}
	if got := <-events; got != "after" || len(events) != 0 {
		t.Fatalf("attacher caught up with %q (and %d more); want after", got, len(events))
	}
}
