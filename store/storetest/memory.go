package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// memStore is a store with long-term memory: runner/memory's Indexer,
// repeated here because store packages must not import the runner.
type memStore interface {
	store.Store
	IndexSession(ctx context.Context, k store.SessionKey) error
	SearchMemory(ctx context.Context, q store.MemoryQuery) ([]store.MemoryHit, string, error)
}

// RunMemory runs the long-term memory tests against stores made by open,
// which must implement IndexSession and SearchMemory: every store finds
// the same events, in the same order, for a query.
func RunMemory(t *testing.T, open Open) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s memStore)
	}{
		{"FindsOtherSessions", testMemoryFinds},
		{"Pages", testMemoryPages},
		{"PagesBoundedByBytes", testMemoryBytes},
		{"Ranking", testMemoryRanking},
		{"AddAgain", testMemoryAddAgain},
		{"AddWhileAppending", testMemoryAddWhileAppending},
		{"Errors", testMemoryErrors},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			m, ok := s.(memStore)
			if !ok {
				t.Fatalf("%T does not implement IndexSession and SearchMemory", s)
			}
			tc.fn(t, m)
		})
	}
}

var memT0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

func memEvent(author, text string, at time.Time) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Author: author, Timestamp: timestamppb.New(at),
		Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}
}

// memSession creates session k with one event per text, a minute apart
// from t0, and adds it to memory when indexed.
func memSession(t *testing.T, s memStore, k store.SessionKey, indexed bool, t0 time.Time, texts ...string) {
	t.Helper()
	create(t, s, k, nil)
	for i, text := range texts {
		appendEv(t, s, k, memEvent("user", text, t0.Add(time.Duration(i)*time.Minute)))
	}
	if indexed {
		if err := s.IndexSession(t.Context(), k); err != nil {
			t.Fatalf("IndexSession(%s): %v", k, err)
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

func memSearch(t *testing.T, s memStore, q store.MemoryQuery) string {
	t.Helper()
	hits, _, err := s.SearchMemory(t.Context(), q)
	if err != nil {
		t.Fatalf("SearchMemory(%q): %v", q.Text, err)
	}
	return hitLines(hits)
}

// testMemoryFinds: sessions added to memory are found by their terms,
// ranked by overlap then time; sessions not added, other users and
// other apps never are; the current session can be left out; events
// appended after the add, shared state changes or not, are found once
// the append returns; a deleted session is found no more.
func testMemoryFinds(t *testing.T, s memStore) {
	memSession(t, s, key("app", "u1", "a"), true, memT0, "My dog is called Rex", "the weather is sunny")
	memSession(t, s, key("app", "u1", "b"), true, memT0.Add(time.Hour), "Rex likes the park", "dog food brands")
	memSession(t, s, key("app", "u1", "hidden"), false, memT0, "Rex dog secret")
	memSession(t, s, key("app", "u2", "x"), true, memT0, "Rex dog of user two")
	memSession(t, s, key("other", "u1", "y"), true, memT0, "Rex dog of another app")

	q := store.MemoryQuery{App: "app", User: "u1", Text: "What is my DOG called? Rex?"}
	// a#1 has dog, called and rex; b#2 dog, b#1 rex (newer first on ties
	// of one common term: b#2 is a minute after b#1).
	if got, want := memSearch(t, s, q), "a#1 b#2 b#1"; got != want {
		t.Fatalf("search: %q, want %q", got, want)
	}
	q.ExcludeSession = "a"
	if got, want := memSearch(t, s, q), "b#2 b#1"; got != want {
		t.Fatalf("search without a: %q, want %q", got, want)
	}
	q.ExcludeSession = ""
	if got := memSearch(t, s, store.MemoryQuery{App: "app", User: "u2", Text: "rex"}); got != "x#1" {
		t.Fatalf("user u2 found %q", got)
	}
	if got := memSearch(t, s, store.MemoryQuery{App: "other", User: "u1", Text: "rex"}); got != "y#1" {
		t.Fatalf("app other found %q", got)
	}
	if got := memSearch(t, s, store.MemoryQuery{App: "app", User: "u3", Text: "rex"}); got != "" {
		t.Fatalf("unknown user found %q", got)
	}

	appendEv(t, s, key("app", "u1", "b"), memEvent("bot", "Zanzibar trip", memT0.Add(2*time.Hour)))
	if got := memSearch(t, s, store.MemoryQuery{App: "app", User: "u1", Text: "zanzibar"}); got != "b#3" {
		t.Fatalf("appended event: %q", got)
	}
	// An event that changes "user:" state may take another write path.
	shared := memEvent("bot", "Kilimanjaro climb", memT0.Add(3*time.Hour))
	shared.Actions = &agentrunnerv1.EventActions{StateDelta: mustStruct(t, map[string]any{"user:trip": "africa"})}
	appendEv(t, s, key("app", "u1", "b"), shared)
	if got := memSearch(t, s, store.MemoryQuery{App: "app", User: "u1", Text: "kilimanjaro zanzibar"}); got != "b#4 b#3" {
		t.Fatalf("appended event changing user state: %q", got)
	}
	if got := memSearch(t, s, store.MemoryQuery{App: "app", User: "u1", Text: "the of and"}); got != "" {
		t.Fatalf("stop words found %q", got)
	}

	if err := s.DeleteSession(t.Context(), key("app", "u1", "b")); err != nil {
		t.Fatal(err)
	}
	if got := memSearch(t, s, q); got != "a#1" {
		t.Fatalf("after delete: %q", got)
	}
	// A session of the same id made again is not in memory.
	memSession(t, s, key("app", "u1", "b"), false, memT0, "Rex again")
	if got := memSearch(t, s, q); got != "a#1" {
		t.Fatalf("after the session was made again: %q", got)
	}
}

// testMemoryPages: pages of a search go on where the last ended, with no
// hit twice, newest first on ties; a token does not continue another
// search.
func testMemoryPages(t *testing.T, s memStore) {
	var texts []string
	for i := range 25 {
		texts = append(texts, fmt.Sprintf("apple number %d", i))
	}
	memSession(t, s, key("app", "u", "s"), true, memT0, texts...)
	q := store.MemoryQuery{App: "app", User: "u", Text: "apple", Page: store.Page{Size: 10}}
	var all []string
	for pages := 1; ; pages++ {
		hits, next, err := s.SearchMemory(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if pages > 3 || len(hits) == 0 {
			t.Fatalf("page %d of %d hits", pages, len(hits))
		}
		all = append(all, hitLines(hits))
		if next == "" {
			break
		}
		q.Page.Token = next
	}
	var want []string
	for i := 25; i >= 1; i-- {
		want = append(want, fmt.Sprintf("s#%d", i))
	}
	if got := strings.Join(all, " "); got != strings.Join(want, " ") {
		t.Fatalf("pages: %q", got)
	}
	hits, tok, _ := s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "apple", Page: store.Page{Size: 2}})
	if hitLines(hits) != "s#25 s#24" || tok == "" {
		t.Fatalf("first page %q, token %q", hitLines(hits), tok)
	}
	for _, other := range []store.MemoryQuery{
		{App: "app", User: "u", Text: "pear"},
		{App: "app", User: "v", Text: "apple"},
		{App: "app", User: "u", Text: "apple", ExcludeSession: "z"},
	} {
		other.Page.Token = tok
		if _, _, err := s.SearchMemory(t.Context(), other); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("token of another search (%+v): %v", other, err)
		}
	}
}

// testMemoryBytes: MaxBytes ends a page early, never before its first
// hit, and the next page goes on from there.
func testMemoryBytes(t *testing.T, s memStore) {
	long := strings.Repeat("filler ", 300) // about 2100 bytes an event
	memSession(t, s, key("app", "u", "s"), true, memT0, "kiwi "+long, "kiwi "+long, "kiwi "+long)
	q := store.MemoryQuery{App: "app", User: "u", Text: "kiwi", Page: store.Page{MaxBytes: 1}}
	hits, next, err := s.SearchMemory(t.Context(), q)
	if err != nil || hitLines(hits) != "s#3" || next == "" {
		t.Fatalf("page of 1 byte: %q, %q, %v", hitLines(hits), next, err)
	}
	q.Page = store.Page{MaxBytes: 3000, Token: next}
	hits, next, err = s.SearchMemory(t.Context(), q)
	if err != nil || hitLines(hits) != "s#2" || next == "" {
		t.Fatalf("page of 3000 bytes: %q, %q, %v", hitLines(hits), next, err)
	}
}

// testMemoryRanking: a term rare in the user's events weighs more than a
// common one, and a term said twice more than once.
func testMemoryRanking(t *testing.T, s memStore) {
	memSession(t, s, key("app", "u", "s"), true, memT0,
		"coffee in the morning", "coffee again", "coffee and tea", "tea tea tea", "coffee break")
	// tea is in 2 of 5 events, coffee in 4: s#4 (tea thrice) beats s#3
	// (both terms once), the coffee-only events follow, newest first.
	got := memSearch(t, s, store.MemoryQuery{App: "app", User: "u", Text: "tea coffee"})
	if want := "s#4 s#3 s#5 s#2 s#1"; got != want {
		t.Fatalf("ranking: %q, want %q", got, want)
	}
	hits, _, err := s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "tea"})
	if err != nil || len(hits) != 2 || hits[0].Score <= hits[1].Score || hits[1].Score <= 0 {
		t.Fatalf("tea: %q %v", hitLines(hits), err)
	}
}

// testMemoryAddAgain: adding a session again indexes nothing twice.
func testMemoryAddAgain(t *testing.T, s memStore) {
	memSession(t, s, key("app", "u", "s"), true, memT0, "lemon", "lime")
	for range 3 {
		if err := s.IndexSession(t.Context(), key("app", "u", "s")); err != nil {
			t.Fatal(err)
		}
	}
	appendEv(t, s, key("app", "u", "s"), memEvent("user", "lemon tart", memT0.Add(time.Hour)))
	hits, _, err := s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "lemon lime"})
	// lime, in one event of three, weighs more than lemon, in two.
	if err != nil || hitLines(hits) != "s#2 s#3 s#1" {
		t.Fatalf("after adding thrice: %q, %v", hitLines(hits), err)
	}
}

// testMemoryAddWhileAppending: events appended while the session is
// added are each found once, whichever commits first.
func testMemoryAddWhileAppending(t *testing.T, s memStore) {
	k := key("app", "u", "s")
	create(t, s, k, nil)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			if _, err := s.AppendEvent(t.Context(), k, memEvent("user", fmt.Sprintf("melon %d", i), memT0.Add(time.Duration(i)*time.Second))); err != nil {
				errs <- err
				return
			}
		}
	}()
	errs <- s.IndexSession(t.Context(), k)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	hits, _, err := s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "melon", Page: store.Page{Size: store.MaxPageSize}})
	if err != nil || len(hits) != n {
		t.Fatalf("found %d of %d events: %v", len(hits), n, err)
	}
	for i, h := range hits {
		if h.Event.GetSequence() != uint64(n-i) {
			t.Fatalf("hit %d is %s", i, hitLines(hits))
		}
	}
}

// testMemoryErrors: a missing session is NotFound; a missing app or
// user, or a malformed token, InvalidArgument.
func testMemoryErrors(t *testing.T, s memStore) {
	if err := s.IndexSession(t.Context(), key("app", "u", "nope")); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("add a missing session: %v", err)
	}
	for _, q := range []store.MemoryQuery{
		{User: "u", Text: "x"},
		{App: "app", Text: "x"},
		{App: "app", User: "u", Text: "x", Page: store.Page{Token: "not a token!"}},
		{App: "app", User: "u", Text: "x", Page: store.Page{Token: "AAAA"}},
	} {
		if _, _, err := s.SearchMemory(t.Context(), q); !errors.Is(err, store.ErrInvalidArgument) {
			t.Fatalf("search %+v: %v", q, err)
		}
	}
	if hits, next, err := s.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u"}); err != nil || len(hits) != 0 || next != "" {
		t.Fatalf("empty query: %v %q %v", hits, next, err)
	}
}
