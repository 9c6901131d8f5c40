package boltstore

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// BenchmarkPacedRuns measures what runs that arrive spread out cost, as
// a busy server's runs on real models arrive: runs start at a steady
// rate (runs/s: those of 1,000, 2,000 and 4,000 runs of 3 s in flight)
// on 256 sessions with fsync on; each writes the user
// message with its RUNNING record, waits as a model would (100 ms), and
// writes the answer with its final record, as the runner does. It
// reports the commits a run takes, the process's CPU a run (user and
// system, from getrusage: the fsyncs' kernel time and the scheduler's
// wakeups count), and the p50 and p99 of the first write's wait, with
// the linger of small batches (see linger) and without. b.N is the runs.
func BenchmarkPacedRuns(b *testing.B) {
	for _, rate := range []int{333, 667, 1333} {
		for _, noLinger := range []bool{true, false} {
			b.Run(fmt.Sprintf("runs/s=%d/linger=%v", rate, !noLinger), func(b *testing.B) { benchPaced(b, rate, noLinger) })
		}
	}
}

func benchPaced(b *testing.B, rate int, noLinger bool) {
	var commits atomic.Int64
	s, _ := newTestStore(b, Options{noLinger: noLinger, OnCommit: func(time.Duration, int) { commits.Add(1) }})
	keys := make([]store.SessionKey, 256)
	for i := range keys {
		keys[i] = store.SessionKey{App: "app", User: fmt.Sprint("u", i%16), Session: fmt.Sprint("s", i)}
		if _, err := s.CreateSession(b.Context(), keys[i], nil); err != nil {
			b.Fatal(err)
		}
	}
	waits := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	c0, cpu0 := commits.Load(), processCPU(b)
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			waits[i], err = pacedRun(b, s, keys[i%len(keys)], fmt.Sprintf("p-%016x", i))
			if err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(waits)
	b.ReportMetric(float64(commits.Load()-c0)/float64(b.N), "commits/run")
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/run")
	b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(waits[len(waits)*99/100].Microseconds())/1000, "p99-ms")
}

// pacedRun writes one run of BenchmarkPacedRuns and returns how long its
// first write took.
func pacedRun(b *testing.B, s *Store, k store.SessionKey, id string) (time.Duration, error) {
	msg, answer := lifecycleEvents()
	run := benchRun(k, id)
	run.RequestId, run.Usage = "", nil
	began := time.Now()
	if _, _, err := s.AppendRunEvent(b.Context(), k, msg, run); err != nil {
		return 0, err
	}
	wait := time.Since(began)
	time.Sleep(100 * time.Millisecond)
	run.Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	run.EndTime, run.Usage = timestamppb.Now(), answer.GetUsageMetadata()
	_, _, err := s.AppendRunEvent(b.Context(), k, answer, run)
	return wait, err
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
