package boltstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

func memEvent(author, text string, at time.Time) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Author: author, Timestamp: timestamppb.New(at),
		Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}
}

// memSession creates session k with one event per text, a minute apart
// from t0, and adds it to memory when indexed.
func memSession(t *testing.T, s *Store, k store.SessionKey, indexed bool, t0 time.Time, texts ...string) {
	t.Helper()
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		if _, err := s.AppendEvent(t.Context(), k, memEvent("user", text, t0.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}
	if indexed {
		if err := s.IndexSession(t.Context(), k); err != nil {
			t.Fatal(err)
		}
	}
}

func hitLines(hits []store.MemoryHit) string {
	var out []string
	for _, h := range hits {
		out = append(out, fmt.Sprintf("%s#%d", h.SessionID, h.Event.GetSequence()))
	}
	return strings.Join(out, " ")
}

func search(t *testing.T, s *Store, q store.MemoryQuery) string {
	t.Helper()
	hits, _, err := s.SearchMemory(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	return hitLines(hits)
}

// TestMemoryIndex: sessions added to memory are found by their terms,
// ranked by overlap then time; sessions not added, other users and other
// apps never are; events appended after the add are indexed; a deleted
// session leaves no posting behind.
func TestMemoryIndex(t *testing.T) {
	s, _ := newTestStore(t, Options{})
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	k := func(app, user, id string) store.SessionKey {
		return store.SessionKey{App: app, User: user, Session: id}
	}
	memSession(t, s, k("app", "u1", "a"), true, t0, "My dog is called Rex", "the weather is sunny")
	memSession(t, s, k("app", "u1", "b"), true, t0.Add(time.Hour), "Rex likes the park", "dog food brands")
	memSession(t, s, k("app", "u1", "hidden"), false, t0, "Rex dog secret")
	memSession(t, s, k("app", "u2", "x"), true, t0, "Rex dog of user two")
	memSession(t, s, k("other", "u1", "y"), true, t0, "Rex dog of another app")

	q := store.MemoryQuery{App: "app", User: "u1", Text: "What is my DOG called? Rex?"}
	// a#1 has dog, called and rex; b#2 dog, b#1 rex (newer first on ties
	// of one common term: b#2 is a minute after b#1).
	if got, want := search(t, s, q), "a#1 b#2 b#1"; got != want {
		t.Fatalf("search: %q, want %q", got, want)
	}
	q.ExcludeSession = "a"
	if got, want := search(t, s, q), "b#2 b#1"; got != want {
		t.Fatalf("search without a: %q, want %q", got, want)
	}
	q.ExcludeSession = ""
	// Merged into postings, the index answers the same.
	mergeAll(t, s)
	if got, want := search(t, s, q), "a#1 b#2 b#1"; got != want {
		t.Fatalf("search after merge: %q, want %q", got, want)
	}

	// An append after the add is indexed in its own transaction.
	if _, err := s.AppendEvent(t.Context(), k("app", "u1", "b"), memEvent("bot", "Zanzibar trip", t0.Add(2*time.Hour))); err != nil {
		t.Fatal(err)
	}
	if got := search(t, s, store.MemoryQuery{App: "app", User: "u1", Text: "zanzibar"}); got != "b#3" {
		t.Fatalf("appended event: %q", got)
	}
	if got := search(t, s, store.MemoryQuery{App: "app", User: "u3", Text: "rex"}); got != "" {
		t.Fatalf("unknown user found %q", got)
	}

	if err := s.DeleteSession(t.Context(), k("app", "u1", "b")); err != nil {
		t.Fatal(err)
	}
	if got := search(t, s, q); got != "a#1" {
		t.Fatalf("after delete: %q", got)
	}
	for _, id := range []string{"a", "hidden"} {
		if err := s.DeleteSession(t.Context(), k("app", "u1", id)); err != nil {
			t.Fatal(err)
		}
	}
	mergeAll(t, s)
	// What is left is the other user's and the other app's: a segment
	// for each of their 4 terms, and their users' counts.
	countKeys(t, s, map[string]int{"memory_postings": 8, "memory_users": 2, "memory_sessions": 2})
}

// mergeAll writes the postings of every event not merged yet, as the
// merger does in the background.
func mergeAll(t *testing.T, s *Store) {
	t.Helper()
	for {
		more, err := s.mergeMemory(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return
		}
	}
}

// countKeys checks the number of keys of buckets: what is left of
// memory once sessions went.
func countKeys(t *testing.T, s *Store, want map[string]int) {
	t.Helper()
	err := s.db.View(func(tx *bbolt.Tx) error {
		for name, n := range want {
			if got := tx.Bucket([]byte(name)).Stats().KeyN; got != n {
				t.Errorf("bucket %s holds %d keys, want %d", name, got, n)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMemoryPages: pages of a search go on where the last ended, with no
// hit twice, and a token does not continue another search.
func TestMemoryPages(t *testing.T) {
	s, _ := newTestStore(t, Options{NoSync: true})
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var texts []string
	for i := range 25 {
		texts = append(texts, fmt.Sprintf("apple number %d", i))
	}
	memSession(t, s, store.SessionKey{App: "app", User: "u", Session: "s"}, true, t0, texts...)
	q := store.MemoryQuery{App: "app", User: "u", Text: "apple", Page: store.Page{Size: 10}}
	seen := map[string]bool{}
	var pages int
	for {
		hits, next, err := s.SearchMemory(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, h := range hits {
			id := hitLines([]store.MemoryHit{h})
			if seen[id] {
				t.Fatalf("%s twice", id)
			}
			seen[id] = true
		}
		if next == "" {
			break
		}
		q.Page.Token = next
	}
	if pages != 3 || len(seen) != 25 || !seen["s#25"] {
		t.Fatalf("%d pages, %d hits", pages, len(seen))
	}
	// A token stays good when the events it pages through are merged
	// into postings meanwhile.
	q.Page.Token = ""
	_, tok, err := s.SearchMemory(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	mergeAll(t, s)
	q.Page.Token = tok
	hits, _, err := s.SearchMemory(t.Context(), q)
	if err != nil || hitLines(hits) != "s#15 s#14 s#13 s#12 s#11 s#10 s#9 s#8 s#7 s#6" {
		t.Fatalf("second page after merge: %q, %v", hitLines(hits), err)
	}
	// Newest first: all tie on "apple".
	hits, tok, _ = s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "apple", Page: store.Page{Size: 2}})
	if hitLines(hits) != "s#25 s#24" {
		t.Fatalf("first page %q", hitLines(hits))
	}
	_, _, err = s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "pear", Page: store.Page{Token: tok}})
	if !errors.Is(err, store.ErrInvalidArgument) {
		t.Fatalf("token of another search: %v", err)
	}
}

// TestMemoryIndexSessionMissing: adding a missing session is NotFound.
func TestMemoryIndexSessionMissing(t *testing.T) {
	s, _ := newTestStore(t, Options{})
	err := s.IndexSession(t.Context(), store.SessionKey{App: "a", User: "u", Session: "nope"})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("got %v", err)
	}
}

// TestMemoryMigration: a schema 4 file gets the memory buckets and
// version 5, with no session in memory.
func TestMemoryMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{schema: 4})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	memSession(t, s, k, false, time.Now(), "kept words")
	err = s.db.Update(func(tx *bbolt.Tx) error {
		for _, b := range [][]byte{bucketMemSessions, bucketMemPostings, bucketMemUsers} {
			if err := tx.DeleteBucket(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, _ := s.SchemaVersion(); v != currentSchema {
		t.Fatalf("schema %d", v)
	}
	if err := s.IndexSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if got := search(t, s, store.MemoryQuery{App: "app", User: "u", Text: "words"}); got != "s#1" {
		t.Fatalf("search after migration: %q", got)
	}
}

// TestMemoryRecover: events appended to a session in memory and not
// merged when the store closed are found after it reopens, and merged.
func TestMemoryRecover(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db")
	s, err := Open(path, Options{mergeDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	memSession(t, s, k, true, time.Now(), "first walrus")
	if _, err := s.AppendEvent(t.Context(), k, memEvent("user", "second walrus", time.Now())); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(path, Options{mergeDelay: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	q := store.MemoryQuery{App: "app", User: "u", Text: "walrus"}
	if got := search(t, s, q); got != "s#2 s#1" {
		t.Fatalf("after reopen: %q", got)
	}
	mergeAll(t, s)
	// One merge: a segment for each of first, second and walrus.
	countKeys(t, s, map[string]int{"memory_postings": 3})
	if got := search(t, s, q); got != "s#2 s#1" {
		t.Fatalf("after merge: %q", got)
	}
	// An append after the reopen is indexed too: the store learnt at open
	// that a session is in memory.
	if _, err := s.AppendEvent(t.Context(), k, memEvent("user", "third walrus", time.Now())); err != nil {
		t.Fatal(err)
	}
	if got := search(t, s, q); got != "s#3 s#2 s#1" {
		t.Fatalf("append after reopen: %q", got)
	}
}

// TestMemoryConcurrent: while appends, merges and searches run at once,
// every search finds every event whose append returned before it began.
func TestMemoryConcurrent(t *testing.T) {
	s, _ := newTestStore(t, Options{NoSync: true, mergeDelay: time.Millisecond})
	const sessions, events = 4, 50
	var appended [sessions]atomic.Int64
	var wg sync.WaitGroup
	for i := range sessions {
		k := store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", i)}
		memSession(t, s, k, true, time.Now())
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range events {
				if _, err := s.AppendEvent(t.Context(), k, memEvent("user", "needle", time.Now())); err != nil {
					t.Error(err)
					return
				}
				appended[i].Add(1)
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		default:
		}
		var want int64
		for i := range appended {
			want += appended[i].Load()
		}
		hits, _, err := s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "needle", Page: store.Page{Size: store.MaxPageSize}})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(hits)) < want {
			t.Fatalf("search found %d events, %d were appended before it began", len(hits), want)
		}
	}
}

// TestMemoryMergeBatches: more dirty sessions than one merge takes are
// merged by successive merges, which then report nothing left.
func TestMemoryMergeBatches(t *testing.T) {
	s, _ := newTestStore(t, Options{NoSync: true, mergeDelay: time.Hour})
	n := mergeSessions + 10
	for i := range n {
		memSession(t, s, store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", i)}, true, time.Now(), "kiwi")
	}
	merges := 0
	for more := true; more; merges++ {
		var err error
		if more, err = s.mergeMemory(t.Context()); err != nil {
			t.Fatal(err)
		}
		if merges > 3 {
			t.Fatal("merging does not end")
		}
	}
	// Two merges, each a segment of "kiwi".
	countKeys(t, s, map[string]int{"memory_postings": 2})
	if merges != 2 {
		t.Errorf("%d merges, want 2", merges)
	}
	hits, _, err := s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "kiwi", Page: store.Page{Size: store.MaxPageSize}})
	if err != nil || len(hits) != n {
		t.Fatalf("%d hits (%v), want %d", len(hits), err, n)
	}
}
