package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/protobuf/types/known/timestamppb"
)

func newStore(t testing.TB) *boltstore.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func text(role, s string) *agentrunnerv1.Content {
	return &agentrunnerv1.Content{Role: role, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
}

// turn is one stored event: who said what, and when.
type turn struct {
	author, text string
	at           time.Time
}

// fill creates the sessions of user u1 of app "app" (and one of another
// user and app each) with their turns.
func fill(t testing.TB, db *boltstore.Store, sessions map[store.SessionKey][]turn) {
	t.Helper()
	for k, turns := range sessions {
		if _, err := db.CreateSession(t.Context(), k, nil); err != nil {
			t.Fatal(err)
		}
		for _, tr := range turns {
			role := "model"
			if tr.author == "user" {
				role = "user"
			}
			ev := &agentrunnerv1.Event{Author: tr.author, Content: text(role, tr.text), Timestamp: timestamppb.New(tr.at)}
			if _, err := db.AppendEvent(t.Context(), k, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func lines(entries []*Entry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.SessionID+" "+e.Author+": "+textOf(e.Content))
	}
	return out
}

func TestStoreMemorySearch(t *testing.T) {
	db := newStore(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	key := func(app, user, id string) store.SessionKey {
		return store.SessionKey{App: app, User: user, Session: id}
	}
	// Session ids sort a < b < c; their last updates go b, c, a, newest
	// last, so "most recent first" is a, c, b.
	fill(t, db, map[store.SessionKey][]turn{
		key("app", "u1", "a"):   {{"user", "Weather in Paris?", at(1)}, {"bot", "Sunny in Paris.", at(2)}, {"user", "thanks", at(30)}},
		key("app", "u1", "b"):   {{"user", "weather in Rome", at(3)}, {"bot", "rain", at(10)}},
		key("app", "u1", "c"):   {{"user", "WEATHER at home", at(20)}},
		key("app", "u1", "now"): {{"user", "weather again", at(40)}},
		key("app", "u2", "x"):   {{"user", "weather for u2", at(5)}},
		key("other", "u1", "y"): {{"user", "weather elsewhere", at(5)}},
	})
	tests := []struct {
		name  string
		query string
		limit int
		want  []string
	}{
		{name: "newest session first, events in order, case-insensitive", query: "weather?", want: []string{
			"a user: Weather in Paris?", "c user: WEATHER at home", "b user: weather in Rome"}},
		{name: "any word", query: "paris thanks rain", want: []string{
			"a user: Weather in Paris?", "a bot: Sunny in Paris.", "a user: thanks", "b bot: rain"}},
		{name: "limit", query: "weather", limit: 2, want: []string{"a user: Weather in Paris?", "c user: WEATHER at home"}},
		{name: "no match", query: "snow"},
		{name: "no words", query: "?!"},
	}
	m := NewStoreMemory(db)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.Search(t.Context(), Query{App: "app", User: "u1", Query: tc.query, ExcludeSession: "now", Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(lines(got), tc.want) {
				t.Fatalf("got %q, want %q", lines(got), tc.want)
			}
			for _, e := range got {
				if e.Time.Before(t0) {
					t.Errorf("entry %v has no time", e)
				}
			}
		})
	}
}

// deletingLister lists the real sessions, then deletes one of them before
// the search reads it, as a concurrent DeleteSession would.
type deletingLister struct {
	*boltstore.Store
	victim store.SessionKey
}

func (d deletingLister) ListSessions(ctx context.Context, app, user string, page store.Page) ([]*agentrunnerv1.Session, string, error) {
	sessions, next, err := d.Store.ListSessions(ctx, app, user, page)
	if err != nil {
		return nil, "", err
	}
	if err := d.Store.DeleteSession(ctx, d.victim); err != nil {
		return nil, "", fmt.Errorf("delete victim: %w", err)
	}
	return sessions, next, nil
}

func TestStoreMemorySkipsDeletedSession(t *testing.T) {
	db := newStore(t)
	now := time.Now()
	gone := store.SessionKey{App: "app", User: "u1", Session: "gone"}
	fill(t, db, map[store.SessionKey][]turn{
		gone: {{"user", "weather 1", now}},
		{App: "app", User: "u1", Session: "kept"}: {{"user", "weather 2", now.Add(-time.Minute)}},
	})
	got, err := NewStoreMemory(deletingLister{Store: db, victim: gone}).Search(t.Context(), Query{App: "app", User: "u1", Query: "weather"})
	if err != nil {
		t.Fatalf("search failed as a whole: %v", err)
	}
	if want := []string{"kept user: weather 2"}; !slices.Equal(lines(got), want) {
		t.Fatalf("got %q, want %q", lines(got), want)
	}
}

func BenchmarkStoreMemorySearch(b *testing.B) {
	db := newStore(b)
	sessions := map[store.SessionKey][]turn{}
	now := time.Now()
	for i := range 100 {
		var turns []turn
		for j := range 20 {
			turns = append(turns, turn{"user", fmt.Sprintf("message %d of session %d about nothing", j, i), now.Add(time.Duration(i*20+j) * time.Second)})
		}
		sessions[store.SessionKey{App: "app", User: "u1", Session: fmt.Sprintf("s%03d", i)}] = turns
	}
	fill(b, db, sessions)
	m := NewStoreMemory(db)
	for b.Loop() {
		if _, err := m.Search(b.Context(), Query{App: "app", User: "u1", Query: "weather"}); err != nil {
			b.Fatal(err)
		}
	}
}

// pagedLister hands out the sessions of a real store one per page, and
// gives two of them the same update time, so that the search must read
// every page and break the tie by id.
type pagedLister struct{ *boltstore.Store }

func (p pagedLister) ListSessions(ctx context.Context, app, user string, page store.Page) ([]*agentrunnerv1.Session, string, error) {
	all, _, err := p.Store.ListSessions(ctx, app, user, store.Page{Size: store.MaxPageSize})
	if err != nil {
		return nil, "", err
	}
	i := 0
	if page.Token != "" {
		if _, err := fmt.Sscanf(page.Token, "%d", &i); err != nil {
			return nil, "", err
		}
	}
	if i >= len(all) {
		return nil, "", nil
	}
	s := all[i]
	if s.GetSessionId() != "c" {
		s.UpdateTime = all[0].GetUpdateTime() // a and b tie
	}
	next := ""
	if i+1 < len(all) {
		next = fmt.Sprint(i + 1)
	}
	return []*agentrunnerv1.Session{s}, next, nil
}

func TestStoreMemoryPagesTiesAndThoughts(t *testing.T) {
	db := newStore(t)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	fill(t, db, map[store.SessionKey][]turn{
		{App: "app", User: "u1", Session: "b"}: {{"user", "rain in b", t0}},
		{App: "app", User: "u1", Session: "a"}: {{"user", "rain in a", t0}},
		{App: "app", User: "u1", Session: "c"}: {{"user", "rain in c", t0.Add(-time.Hour)}},
	})
	// A thought that mentions the word is not a match.
	thought := &agentrunnerv1.Event{Author: "bot", Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "rain?"}, Thought: true}}}, Timestamp: timestamppb.New(t0.Add(-2 * time.Hour))}
	if _, err := db.AppendEvent(t.Context(), store.SessionKey{App: "app", User: "u1", Session: "c"}, thought); err != nil {
		t.Fatal(err)
	}
	got, err := NewStoreMemory(pagedLister{db}).Search(t.Context(), Query{App: "app", User: "u1", Query: "rain"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a user: rain in a", "b user: rain in b", "c user: rain in c"}; !slices.Equal(lines(got), want) {
		t.Fatalf("got %q, want %q (every page, ties by id, no thoughts)", lines(got), want)
	}
	if got, err := NewStoreMemory(db).Search(t.Context(), Query{App: "app", User: "u1", Query: ""}); err != nil || got != nil {
		t.Fatalf("an empty query found %v, %v", got, err)
	}
}
