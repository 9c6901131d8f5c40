package boltstore

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
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
	// What is left is the other user's and the other app's: 4 terms
	// each, and their users' counts.
	countKeys(t, s, map[string]int{"memory_postings": 8, "memory_pending": 2, "memory_sessions": 2})
}

// mergeAll moves every pending memory record into postings, as the
// merger does in the background.
func mergeAll(t *testing.T, s *Store) {
	t.Helper()
	for {
		n, err := s.mergeMemory(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
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
		for _, b := range [][]byte{bucketMemSessions, bucketMemPostings, bucketMemPending} {
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
	if v, _ := s.SchemaVersion(); v != 5 {
		t.Fatalf("schema %d", v)
	}
	if err := s.IndexSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	if got := search(t, s, store.MemoryQuery{App: "app", User: "u", Text: "words"}); got != "s#1" {
		t.Fatalf("search after migration: %q", got)
	}
}
