package pgstore_test

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/pgstore"
	"github.com/agentrunner/agentrunner/store/pgstore/pgtest"
)

// BenchmarkAppendUsageFsync measures appends/s of 32 sessions of one user
// at once on a cluster of its own with fsync on (in TMPDIR: put it on a
// disk), with and without usage. Every model call's append adds to the
// same two ledger rows, the user's and the app's of the day and model,
// whose locks are held until the commit's WAL flush: this shows what
// they serialize where it costs most.
func BenchmarkAppendUsageFsync(b *testing.B) {
	c, err := pgtest.Start(pgtest.Options{Fsync: true})
	if err != nil {
		if os.Getenv(pgtest.EnvRequire) == "1" {
			b.Fatal(err)
		}
		b.Skip(err)
	}
	b.Cleanup(func() { _ = c.Stop() })
	var dbs atomic.Int64 // a database per run: a benchmark runs more than once
	for _, usage := range []bool{false, true} {
		name := map[bool]string{false: "no-usage", true: "usage"}[usage]
		b.Run(name, func(b *testing.B) {
			db := fmt.Sprint("fsync", dbs.Add(1))
			if err := c.CreateDatabase(b.Context(), db); err != nil {
				b.Fatal(err)
			}
			s, err := pgstore.Open(b.Context(), c.URL(db), pgstore.Options{Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			benchSessions(b, s, 32, usage)
		})
	}
}

// benchSessions appends b.N events from sessions goroutines, one session
// each, all of user "u".
func benchSessions(b *testing.B, s *pgstore.Store, sessions int, usage bool) {
	keys := make([]store.SessionKey, sessions)
	for i := range keys {
		keys[i] = store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", i)}
		if _, err := s.CreateSession(b.Context(), keys[i], nil); err != nil {
			b.Fatal(err)
		}
	}
	ev := benchEvent()
	if usage {
		ev = usageEvent()
	}
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if _, err := s.AppendEvent(b.Context(), k, ev); err != nil {
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
