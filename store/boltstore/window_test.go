package boltstore

import (
	"fmt"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// TestCommitWindowFill checks the adaptive commit window's wait: a batch
// takes writes as they come until it holds as many as wanted (at most
// MaxBatch), and no longer than the window or past the store's close.
func TestCommitWindowFill(t *testing.T) {
	newOp := func() *writeOp { return &writeOp{done: make(chan error, 1)} }
	s := &Store{ops: make(chan *writeOp), quit: make(chan struct{}), opts: Options{MaxBatch: 5}}
	hour := newWindow(time.Hour)

	go func() {
		for range 5 {
			s.ops <- newOp()
		}
	}()
	// Five writes come, one at a time; the batch stops at MaxBatch, long
	// before the hour's window ends.
	if got := s.fill([]*writeOp{newOp()}, 8, hour, time.Hour); len(got) != 5 {
		t.Fatalf("filled to %d writes, want MaxBatch, 5", len(got))
	}
	if got := s.fill([]*writeOp{<-s.ops}, 1, hour, time.Hour); len(got) != 1 {
		t.Fatalf("a batch already as large as wanted grew to %d", len(got))
	}

	// No write comes: the window ends the wait.
	start := time.Now()
	if got := s.fill([]*writeOp{newOp()}, 4, hour, 20*time.Millisecond); len(got) != 1 {
		t.Fatalf("filled to %d writes with none coming", len(got))
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Errorf("returned after %v, before the 20ms window", d)
	}
	// Nor past a close, whatever the window.
	close(s.quit)
	if got := s.fill([]*writeOp{newOp()}, 4, hour, time.Hour); len(got) != 1 {
		t.Fatalf("filled to %d writes after close", len(got))
	}
	// Without a window, nothing waits.
	if got := s.fill([]*writeOp{newOp()}, 4, newWindow(-1), time.Hour); len(got) != 1 {
		t.Fatalf("filled to %d writes without a window", len(got))
	}
}

// TestCommitWindowConcurrent: with a long commit window, many writers'
// writes are all committed.
func TestCommitWindowConcurrent(t *testing.T) {
	s, _ := newTestStore(t, Options{CommitWindow: 50 * time.Millisecond})
	keys := make([]store.SessionKey, 32)
	for i := range keys {
		keys[i] = store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", i)}
		if _, err := s.CreateSession(t.Context(), keys[i], nil); err != nil {
			t.Fatal(err)
		}
	}
	errs := make(chan error, len(keys))
	for _, k := range keys {
		go func() {
			for range 10 {
				if _, err := s.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "bot"}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range keys {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		_, events, err := s.GetSession(t.Context(), k, store.GetOptions{})
		if err != nil || len(events) != 10 {
			t.Fatalf("%s: %d events, %v; want 10", k.Session, len(events), err)
		}
	}
}

// TestCommitWindowLoneWriter: a lone writer's batches are never full,
// so its writes never wait for the window, here an hour: were they to,
// the test would fail at its deadline. Nor do they linger: each comes
// after its last commit, never sooner after the last write than that
// commit took.
func TestCommitWindowLoneWriter(t *testing.T) {
	s, _ := newTestStore(t, Options{CommitWindow: time.Hour})
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	done := make(chan error, 1)
	go func() {
		_, err := s.CreateSession(t.Context(), k, nil)
		for i := 0; i < 20 && err == nil; i++ {
			_, err = s.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "bot"})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("20 lone writes not done within a minute: they waited for the window")
	}
	if n := s.lingers.Load(); n != 0 {
		t.Fatalf("a lone writer's batches lingered %d times", n)
	}
}

// TestLingerBackoff: a small batch lingers until a linger gains nothing;
// then it skips 1, 2, 4, ... chances (at most maxLingerSkip) between
// fruitless lingers, and lingers at every chance again once one gains.
func TestLingerBackoff(t *testing.T) {
	var l linger
	taken := func(chances int, gains bool) (n int) {
		for range chances {
			if l.ready() {
				n++
				l.gained(gains)
			}
		}
		return n
	}
	if n := taken(10, true); n != 10 {
		t.Fatalf("gaining lingers: %d of 10 chances taken", n)
	}
	// Fruitless: taken at chances 1, 3, 6, 11, 20, 37, 70, 135, then
	// every 65th.
	if n := taken(135, false); n != 8 {
		t.Fatalf("fruitless lingers: %d of 135 chances taken, want 8", n)
	}
	if n := taken(65*10, false); n != 10 {
		t.Fatalf("fruitless lingers at the bound: %d of 650 chances taken, want 10", n)
	}
	// One that gains starts afresh.
	for i := 0; !l.ready(); i++ {
		if i > maxLingerSkip {
			t.Fatalf("no chance to linger in %d", i)
		}
	}
	l.gained(true)
	if n := taken(10, true); n != 10 {
		t.Fatalf("after a gain: %d of 10 chances taken", n)
	}
}
