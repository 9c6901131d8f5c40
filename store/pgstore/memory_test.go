package pgstore_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
)

func textAt(text string, at time.Time) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Author: "user", Timestamp: timestamppb.New(at),
		Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}
}

// memoryRows counts the memory rows of user u of app "app".
func memoryRows(t *testing.T, s *pgstore.Store, u string) (sessions, postings int) {
	t.Helper()
	err := s.Pool().QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM memory_sessions WHERE app_name = 'app' AND user_id = $1),
		(SELECT count(*) FROM memory_postings WHERE app_name = 'app' AND user_id = $1)`, u).Scan(&sessions, &postings)
	if err != nil {
		t.Fatal(err)
	}
	return sessions, postings
}

// TestMemoryRows: the postings are a row per distinct term of each event
// with text of a session in memory (none for a session not in memory),
// and DeleteSession leaves none behind.
func TestMemoryRows(t *testing.T) {
	s := openURL(t, pg.URL(t))
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	in := store.SessionKey{App: "app", User: "u", Session: "in"}
	out := store.SessionKey{App: "app", User: "u", Session: "out"}
	for _, k := range []store.SessionKey{in, out} {
		if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendEvent(t.Context(), k, textAt("red red green", t0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.IndexSession(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	// Terms: red, green; then blue; an event without text has none.
	if _, err := s.AppendEvent(t.Context(), in, textAt("the blue", t0)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(t.Context(), in, &agentrunnerv1.Event{Author: "tool"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(t.Context(), out, textAt("yellow", t0)); err != nil {
		t.Fatal(err)
	}
	if n, p := memoryRows(t, s, "u"); n != 1 || p != 3 {
		t.Fatalf("%d sessions, %d postings in memory, want 1 and 3", n, p)
	}
	if err := s.DeleteSession(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	if n, p := memoryRows(t, s, "u"); n != 0 || p != 0 {
		t.Fatalf("after delete: %d sessions, %d postings in memory", n, p)
	}
}

// memCorpus draws words as boltstore's memory benchmarks do: a Zipf
// distribution over 5,000 words, so that some are in most events.
type memCorpus struct {
	zipf  *rand.Zipf
	words []string
}

func newMemCorpus(seed uint64) *memCorpus {
	r := rand.New(rand.NewPCG(seed, seed))
	words := make([]string, 5000)
	for i := range words {
		words[i] = fmt.Sprintf("w%dx", i)
	}
	return &memCorpus{zipf: rand.NewZipf(r, 1.1, 2, uint64(len(words)-1)), words: words}
}

func (c *memCorpus) text(n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = c.words[c.zipf.Uint64()]
	}
	return strings.Join(ws, " ")
}

// BenchmarkMemorySearch searches the memory of a user with 2,500
// sessions of 4 events of 20 words (10,000 indexed events) beside 5
// other users of 500 sessions, with boltstore's BenchmarkMemorySearch's
// queries (3 words drawn as the texts are, plus "factN", a word of one
// event only), and reports the latency's p50 and p99.
func BenchmarkMemorySearch(b *testing.B) {
	const sessions = 2500
	s, err := openBench(b)
	if err != nil {
		b.Fatal(err)
	}
	c := newMemCorpus(1)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fillMemory(b, s, "u", sessions, c, t0)
	for u := range 5 {
		fillMemory(b, s, fmt.Sprint("other", u), 500, c, t0)
	}
	if _, err := s.Pool().Exec(b.Context(), "VACUUM ANALYZE memory_postings"); err != nil {
		b.Fatal(err)
	}
	q := newMemCorpus(2)
	var lat []time.Duration
	var found int
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		text := fmt.Sprintf("%s fact%d", q.text(3), i%sessions)
		start := time.Now()
		hits, _, err := s.SearchMemory(b.Context(), store.MemoryQuery{App: "app", User: "u", Text: text, Page: store.Page{Size: 10}})
		lat = append(lat, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		found += len(hits)
	}
	b.StopTimer()
	if found == 0 {
		b.Fatal("no search found anything")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// fillMemory creates n sessions of user in memory, each with 4 events
// of 20 words, the second holding "fact<i>", from 16 goroutines.
func fillMemory(b *testing.B, s *pgstore.Store, user string, n int, c *memCorpus, t0 time.Time) {
	texts := make([][4]string, n)
	for i := range texts {
		for j := range 4 {
			texts[i][j] = c.text(20)
		}
		texts[i][1] += fmt.Sprintf(" fact%d", i)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				k := store.SessionKey{App: "app", User: user, Session: fmt.Sprint("s", i)}
				if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
					b.Error(err)
					return
				}
				if err := s.IndexSession(b.Context(), k); err != nil {
					b.Error(err)
					return
				}
				for j, text := range texts[i] {
					if _, err := s.AppendEvent(b.Context(), k, textAt(text, t0.Add(time.Duration(i*4+j)*time.Second))); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
}

// BenchmarkAppendEventMemory: BenchmarkAppendEvent to a session in
// memory, events of 20 words: what indexing adds to an append.
func BenchmarkAppendEventMemory(b *testing.B) {
	s, err := openBench(b)
	if err != nil {
		b.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
		b.Fatal(err)
	}
	if err := s.IndexSession(b.Context(), k); err != nil {
		b.Fatal(err)
	}
	ev := textAt(newMemCorpus(1).text(20), time.Now())
	for b.Loop() {
		if _, err := s.AppendEvent(b.Context(), k, ev); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMemoryMigration: a database at schema 2 (before memory) with
// sessions gets the memory tables from Open, and the events its sessions
// held before are indexed when the sessions are added.
func TestMemoryMigration(t *testing.T) {
	url := pg.URL(t)
	s := openURL(t, url)
	k := store.SessionKey{App: "app", User: "u", Session: "old"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(t.Context(), k, textAt("archive before memory", time.Now())); err != nil {
		t.Fatal(err)
	}
	// Back to schema 2: what 0003_memory adds, gone (empty: no session
	// was in memory), and 0004_run_queue, 0005_runs_across, 0006_spend
	// and 0007_spend_holds, 0008_webhook_outbox, 0009_schedules and
	// 0010_eval_runs after it.
	_, err := s.Pool().Exec(t.Context(), `DROP TABLE memory_postings, memory_sessions, run_queue, spend, spend_holds, webhook_outbox,
		schedules, schedule_state, schedule_fires, eval_runs;
		DROP SEQUENCE run_queue_position;
		DROP INDEX runs_by_user, runs_by_app;
		ALTER TABLE runs DROP COLUMN status;
		DELETE FROM schema_migrations WHERE version >= 3`)
	if err != nil {
		t.Fatal(err)
	}
	s2 := openURL(t, url)
	if v, err := s2.SchemaVersion(t.Context()); err != nil || v != 10 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if err := s2.IndexSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	hits, _, err := s2.SearchMemory(t.Context(), store.MemoryQuery{App: "app", User: "u", Text: "archive"})
	if err != nil || len(hits) != 1 || hits[0].SessionID != "old" || hits[0].Event.GetSequence() != 1 {
		t.Fatalf("search after migration: %v, %v", hits, err)
	}
}

// TestMemoryPostingsCap: a term in more events than MaxPostingsPerTerm,
// all of one time, ranks MaxPostingsPerTerm of them, the same ones on
// every page: pages neither repeat nor skip a hit.
func TestMemoryPostingsCap(t *testing.T) {
	s := openURL(t, pg.URL(t))
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	for range pgstore.MaxPostingsPerTerm + 10 {
		if _, err := s.AppendEvent(t.Context(), k, textAt("plum", at)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.IndexSession(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	q := store.MemoryQuery{App: "app", User: "u", Text: "plum", Page: store.Page{Size: 300}}
	seen := map[uint64]bool{}
	for {
		hits, next, err := s.SearchMemory(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if seen[h.Event.GetSequence()] {
				t.Fatalf("#%d twice", h.Event.GetSequence())
			}
			seen[h.Event.GetSequence()] = true
		}
		if next == "" {
			break
		}
		q.Page.Token = next
	}
	// Ties on time go to the lower sequence: the first events are kept.
	if len(seen) != pgstore.MaxPostingsPerTerm || !seen[1] || seen[pgstore.MaxPostingsPerTerm+1] {
		t.Fatalf("%d hits (#1 %v, #%d %v)", len(seen), seen[1], pgstore.MaxPostingsPerTerm+1, seen[pgstore.MaxPostingsPerTerm+1])
	}
}
