package runner

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

// countingStore records the options of every GetSession.
type countingStore struct {
	Store
	mu   sync.Mutex
	gets []store.GetOptions
}

func (c *countingStore) GetSession(ctx context.Context, k store.SessionKey, opts store.GetOptions) (*agentrunnerv1.Session, []*agentrunnerv1.Event, error) {
	c.mu.Lock()
	c.gets = append(c.gets, opts)
	c.mu.Unlock()
	return c.Store.GetSession(ctx, k, opts)
}

func (c *countingStore) last() store.GetOptions {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gets[len(c.gets)-1]
}

// seenAgent answers with the sequences of the events it was given.
func seenAgent(t *testing.T, seen *[][]uint64) agent.Agent {
	t.Helper()
	return mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			var seqs []uint64
			for ev := range ctx.Session().Events().All() {
				seqs = append(seqs, ev.GetSequence())
			}
			*seen = append(*seen, seqs)
			yield(&agentrunnerv1.Event{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{textPart("ok")}}}, nil)
		}
	}})
}

func TestHistoryLoadsOnlyWhatIsNew(t *testing.T) {
	var seen [][]uint64
	db := newTestStore(t)
	cs := &countingStore{Store: db}
	r, err := New(Config{AppName: testApp, Root: seenAgent(t, &seen), Store: cs, HistoryEvents: 5})
	if err != nil {
		t.Fatal(err)
	}
	k := newSession(t, db, "u1", "s1")
	run := func() {
		t.Helper()
		if res := collect(t, r.Run(t.Context(), request(k, "hi"))); res.err != nil {
			t.Fatal(res.err)
		}
	}
	run() // events 1 (user), 2 (answer)
	if got := cs.last(); got.AfterSequence != 0 || got.NumRecentEvents != 5 {
		t.Fatalf("first run read %+v; want the last 5 events", got)
	}
	run() // 3, 4
	if got := cs.last(); got.AfterSequence != 2 {
		t.Fatalf("second run read %+v; want only events after 2", got)
	}
	// An event appended outside the runner between runs is seen.
	if _, err := db.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "root", Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{textPart("outside")}}}); err != nil {
		t.Fatal(err)
	}
	run() // loads 1..5 (5 is the outside event), then adds 6 and 7
	run()
	// The window bounds what is read, never what agents see.
	want := [][]uint64{{1}, {1, 2, 3}, {1, 2, 3, 4, 5, 6}, {1, 2, 3, 4, 5, 6, 7, 8}}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("agents saw %v, want %v", seen, want)
	}
}

// TestHistoryNeverCut: a run on a session longer than the window, with
// nothing in the cache, still hands its agents every event; once a
// compaction covers the older ones, it hands them the compaction and what
// follows it.
func TestHistoryNeverCut(t *testing.T) {
	var seen [][]uint64
	db := newTestStore(t)
	k := newSession(t, db, "u1", "s1")
	for i := range 8 {
		if _, err := db.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "root", Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{textPart(fmt.Sprint("old ", i))}}}); err != nil {
			t.Fatal(err)
		}
	}
	runFresh := func() {
		t.Helper()
		r, err := New(Config{AppName: testApp, Root: seenAgent(t, &seen), Store: db, HistoryEvents: 3})
		if err != nil {
			t.Fatal(err)
		}
		if res := collect(t, r.Run(t.Context(), request(k, "hi"))); res.err != nil {
			t.Fatal(res.err)
		}
	}
	runFresh() // sees 1..9 (9 is its user message), adds 10
	compaction := &agentrunnerv1.Event{Author: "user", Actions: &agentrunnerv1.EventActions{Compaction: &agentrunnerv1.EventCompaction{
		StartSequence: 1, EndSequence: 6, Summary: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{textPart("earlier")}}}}}
	if _, err := db.AppendEvent(t.Context(), k, compaction); err != nil { // 11
		t.Fatal(err)
	}
	runFresh() // 7..11, then its message 12
	want := [][]uint64{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {7, 8, 9, 10, 11, 12}}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("agents saw %v, want %v", seen, want)
	}
}

func TestHistoryDropsARecreatedSession(t *testing.T) {
	var seen [][]uint64
	db := newTestStore(t)
	r, err := New(Config{AppName: testApp, Root: seenAgent(t, &seen), Store: db})
	if err != nil {
		t.Fatal(err)
	}
	k := newSession(t, db, "u1", "s1")
	for range 2 {
		if res := collect(t, r.Run(t.Context(), request(k, "hi"))); res.err != nil {
			t.Fatal(res.err)
		}
	}
	if err := db.DeleteSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	newSession(t, db, "u1", "s1")
	// Grow the new session past the old one's length, so only the create
	// time tells them apart.
	for range 5 {
		if _, err := db.AppendEvent(t.Context(), k, &agentrunnerv1.Event{Author: "root"}); err != nil {
			t.Fatal(err)
		}
	}
	if res := collect(t, r.Run(t.Context(), request(k, "hi"))); res.err != nil {
		t.Fatal(res.err)
	}
	if got := seen[len(seen)-1]; fmt.Sprint(got) != "[1 2 3 4 5 6]" {
		t.Fatalf("after recreation the agent saw %v; want the new session's events only", got)
	}
}

func TestHistoryGapIsNotCached(t *testing.T) {
	// An agent whose run is interleaved with an outside append: the next
	// run must still see the outside event.
	var seen [][]uint64
	db := newTestStore(t)
	var k store.SessionKey
	first := true
	root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			var seqs []uint64
			for ev := range ctx.Session().Events().All() {
				seqs = append(seqs, ev.GetSequence())
			}
			seen = append(seen, seqs)
			if first {
				first = false
				if _, err := db.AppendEvent(context.Background(), k, &agentrunnerv1.Event{Author: "root"}); err != nil {
					yield(nil, err)
					return
				}
			}
			yield(&agentrunnerv1.Event{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{textPart("ok")}}}, nil)
		}
	}})
	r, err := New(Config{AppName: testApp, Root: root, Store: db})
	if err != nil {
		t.Fatal(err)
	}
	k = newSession(t, db, "u1", "s1")
	for range 2 {
		if res := collect(t, r.Run(t.Context(), request(k, "hi"))); res.err != nil {
			t.Fatal(res.err)
		}
	}
	if got := seen[1]; fmt.Sprint(got) != "[1 2 3 4]" {
		t.Fatalf("second run saw %v; want the outside event 2 too", got)
	}
}
