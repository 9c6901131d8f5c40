package memory

import (
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

// fill creates sessions with their turns and adds them to m.
func fill(t testing.TB, db *boltstore.Store, m Service, sessions map[store.SessionKey][]turn) {
	t.Helper()
	for k, turns := range sessions {
		if _, err := db.CreateSession(t.Context(), k, nil); err != nil {
			t.Fatal(err)
		}
		if err := m.AddSession(t.Context(), k); err != nil {
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
		out = append(out, e.SessionID+" "+e.Author+": "+Text(e))
	}
	return out
}

func TestIndexSearch(t *testing.T) {
	db := newStore(t)
	m := NewIndex(db)
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	key := func(app, user, id string) store.SessionKey {
		return store.SessionKey{App: app, User: user, Session: id}
	}
	fill(t, db, m, map[store.SessionKey][]turn{
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
		{name: "newest first on ties, case-insensitive", query: "weather?", want: []string{
			"c user: WEATHER at home", "b user: weather in Rome", "a user: Weather in Paris?"}},
		{name: "more terms rank first", query: "paris weather", want: []string{
			"a user: Weather in Paris?", "a bot: Sunny in Paris.", "c user: WEATHER at home", "b user: weather in Rome"}},
		{name: "limit", query: "weather", limit: 2, want: []string{"c user: WEATHER at home", "b user: weather in Rome"}},
		{name: "no match", query: "snow"},
		{name: "no words", query: "?!"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := m.Search(t.Context(), Query{App: "app", User: "u1", Query: tc.query, ExcludeSession: "now", Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(lines(got), tc.want) {
				t.Fatalf("got %q, want %q", lines(got), tc.want)
			}
			for _, e := range got {
				if e.Time.Before(t0) || e.Sequence == 0 {
					t.Errorf("entry %v has no time or sequence", e)
				}
			}
		})
	}
}
