package boltstore

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// BenchmarkMemoryAppend compares durable appends (fsync on) to a session
// in memory (nothing written for memory in the append's transaction,
// postings by the merger) with appends to one that is not, on a file holding 1,000 other sessions (in memory
// too when the session is): one appender, one without fsync (the CPU the
// index adds, which the fsync hides otherwise), and 256 sessions at once.
// pages/op counts the pages written per append, merges included.
func BenchmarkMemoryAppend(b *testing.B) {
	for _, indexed := range []bool{false, true} {
		name := map[bool]string{false: "memory=off", true: "memory=on"}[indexed]
		b.Run(name+"/serial", func(b *testing.B) { benchMemoryAppendSerial(b, indexed, false) })
		b.Run(name+"/serial-nosync", func(b *testing.B) { benchMemoryAppendSerial(b, indexed, true) })
		b.Run(name+"/sessions=256", func(b *testing.B) { benchMemoryAppendSessions(b, indexed, 256) })
	}
}

func benchMemoryAppendSerial(b *testing.B, indexed, noSync bool) {
	path := filepath.Join(b.TempDir(), "db")
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	grow(b, path, func(s *Store) {
		for i := range 1000 {
			ok := store.SessionKey{App: "app", User: fmt.Sprint("u", i%16), Session: fmt.Sprint("other", i)}
			benchSession(b, s, ok, indexed)
			for range 3 {
				if _, err := s.AppendEvent(b.Context(), ok, benchEvent()); err != nil {
					b.Fatal(err)
				}
			}
		}
		benchSession(b, s, k, indexed)
	})
	s, err := Open(path, Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ev := benchEvent()
	before := s.db.Stats().TxStats
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.AppendEvent(b.Context(), k, ev); err != nil {
			b.Fatal(err)
		}
	}
	// The merges of the events appended, which the loop may not have
	// waited for: pages/op counts what memory costs the disk in all.
	for {
		more, err := s.mergeMemory(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if !more {
			break
		}
	}
	after := s.db.Stats().TxStats
	b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(b.N), "pages/op")
}

// benchSession creates k, in memory when indexed.
func benchSession(b *testing.B, s *Store, k store.SessionKey, indexed bool) {
	if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
		b.Fatal(err)
	}
	if indexed {
		if err := s.IndexSession(b.Context(), k); err != nil {
			b.Fatal(err)
		}
	}
}

func benchMemoryAppendSessions(b *testing.B, indexed bool, sessions int) {
	s, _ := newTestStore(b, Options{})
	keys := make([]store.SessionKey, sessions)
	for i := range keys {
		keys[i] = store.SessionKey{App: "app", User: fmt.Sprint("u", i%16), Session: fmt.Sprint("s", i)}
		benchSession(b, s, keys[i], indexed)
	}
	ev := benchEvent()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := s.AppendEvent(b.Context(), keys[i], ev); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// memCorpus makes texts of words drawn from a vocabulary of 5,000 with a
// Zipf distribution, as natural text is: a few words in most events,
// most words in a few.
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

// BenchmarkMemorySearch searches the memory of a user with 10,000
// sessions of 4 events of 20 words each (40,000 indexed events), beside
// 20 other users of 500 sessions each: queries of 3 words drawn as the
// texts are, plus "factN", a word of one event only. It reports the
// latency's p50 and p99 over every search.
func BenchmarkMemorySearch(b *testing.B) {
	const sessions = 10_000
	s, _ := newTestStore(b, Options{NoSync: true})
	c := newMemCorpus(1)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fillMemory(b, s, "u", sessions, c, t0)
	for u := range 20 {
		fillMemory(b, s, fmt.Sprint("other", u), 500, c, t0)
	}
	// The steady state: the merger keeps up, and only the last second's
	// events are not in postings yet.
	for {
		more, err := s.mergeMemory(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if !more {
			break
		}
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
// of 20 words, the second holding "fact<i>", from 32 goroutines.
func fillMemory(b *testing.B, s *Store, user string, n int, c *memCorpus, t0 time.Time) {
	texts := make([][4]string, n)
	for i := range texts {
		for j := range 4 {
			texts[i][j] = c.text(20)
		}
		texts[i][1] += fmt.Sprintf(" fact%d", i)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				k := store.SessionKey{App: "app", User: user, Session: fmt.Sprintf("s%05d", i)}
				if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
					b.Error(err)
					return
				}
				if err := s.IndexSession(b.Context(), k); err != nil {
					b.Error(err)
					return
				}
				for j, text := range texts[i] {
					at := t0.Add(time.Duration(i*4+j) * time.Second)
					ev := &agentrunnerv1.Event{Author: "user", Timestamp: timestamppb.New(at), Content: &agentrunnerv1.Content{
						Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}
					if _, err := s.AppendEvent(b.Context(), k, ev); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}
