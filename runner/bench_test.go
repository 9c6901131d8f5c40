package runner

import (
	"fmt"
	"iter"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// emitter is a custom agent yielding n small events, so that the benchmark
// measures the runner and the store, not an agent.
func emitter(b testing.TB, n int) agent.Agent {
	a, err := agent.New(agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			for i := range n {
				if !yield(say("event "+strconv.Itoa(i)), nil) {
					return
				}
			}
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// benchRunner opens a bbolt store; with noSync false it fsyncs every
// commit, as in production.
func benchRunner(b *testing.B, n int, noSync bool) (*Runner, *boltstore.Store) {
	db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	r, err := New(Config{AppName: testApp, Root: emitter(b, n), Store: db})
	if err != nil {
		b.Fatal(err)
	}
	return r, db
}

// BenchmarkRun measures one run on a fresh session: the user event plus n
// agent events, each persisted (fsync) before it is yielded. The nosync
// variants leave fsync out, which shows the runner's own overhead.
func BenchmarkRun(b *testing.B) {
	for _, sync := range []string{"fsync", "nosync"} {
		for _, n := range []int{1, 10, 100} {
			b.Run(fmt.Sprintf("%s/events=%d", sync, n), func(b *testing.B) {
				benchmarkRun(b, n, sync == "nosync")
			})
		}
	}
}

func benchmarkRun(b *testing.B, n int, noSync bool) {
	r, db := benchRunner(b, n, noSync)
	msg := userText("go")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		// A fresh session per run, created off the clock, so that every run
		// loads the same history.
		b.StopTimer()
		k := store.SessionKey{App: testApp, User: "u", Session: strconv.Itoa(i)}
		i++
		if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		got := 0
		for _, err := range r.Run(b.Context(), Request{UserID: k.User, SessionID: k.Session, NewMessage: msg}) {
			if err != nil {
				b.Fatal(err)
			}
			got++
		}
		if got != n {
			b.Fatalf("%d events, want %d", got, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/event")
}

// BenchmarkRunParallel runs concurrent runs on distinct sessions, whose
// appends share fsyncs.
func BenchmarkRunParallel(b *testing.B) {
	const n = 10
	r, db := benchRunner(b, n, false)
	var next atomic.Int64
	msg := userText("go")
	b.ReportAllocs()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			k := store.SessionKey{App: testApp, User: "u", Session: strconv.FormatInt(next.Add(1), 10)}
			if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
				b.Error(err)
				return
			}
			for _, err := range r.Run(b.Context(), Request{UserID: k.User, SessionID: k.Session, NewMessage: msg}) {
				if err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
}

// BenchmarkRunSameSession runs one after another on one session, whose
// history grows by two events a run: a run's cost must not grow with the
// session's length (the history cache sizes and checks only what a run
// added).
func BenchmarkRunSameSession(b *testing.B) {
	r, db := benchRunner(b, 1, true)
	msg := userText("go")
	k := store.SessionKey{App: testApp, User: "u", Session: "s"}
	if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, err := range r.Run(b.Context(), Request{UserID: k.User, SessionID: k.Session, NewMessage: msg}) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
}
