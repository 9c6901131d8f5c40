package boltstore

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// benchEvent is a typical model answer: a paragraph of text, usage, and a
// small state delta (about 400 bytes encoded).
func benchEvent() *agentrunnerv1.Event {
	delta, _ := structpb.NewStruct(map[string]any{"last_topic": "billing", "turns": 3})
	return &agentrunnerv1.Event{
		InvocationId: "inv-0123456789abcdef",
		Author:       "assistant",
		Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{
			Text: "Your invoice for October was issued on the 3rd and paid on the 10th. The next one is due in two weeks; " +
				"you can change the payment method in the billing settings at any time. Anything else I can help with today?",
		}}}},
		TurnComplete:  true,
		Actions:       &agentrunnerv1.EventActions{StateDelta: delta},
		UsageMetadata: &agentrunnerv1.UsageMetadata{PromptTokenCount: 812, CandidatesTokenCount: 54, TotalTokenCount: 866},
	}
}

// grow opens a store at path without fsync, fills it, and closes it, so
// that benchmarks can reopen it with fsync on.
func grow(b *testing.B, path string, fill func(s *Store)) {
	b.Helper()
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	fill(s)
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// appendMany appends n events to k from 64 goroutines.
func appendMany(b *testing.B, s *Store, k store.SessionKey, n int) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if _, err := s.AppendEvent(b.Context(), k, benchEvent()); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkAppend measures one durable append (fsync on) to a session that
// already holds 10 or 100,000 events: the cost must not depend on length.
func BenchmarkAppend(b *testing.B) {
	for _, length := range []int{10, 100_000} {
		b.Run(fmt.Sprintf("len=%d", length), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "db")
			k := store.SessionKey{App: "app", User: "u", Session: "s"}
			grow(b, path, func(s *Store) {
				if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
					b.Fatal(err)
				}
				appendMany(b, s, k, length)
			})
			s, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ev := benchEvent()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.AppendEvent(b.Context(), k, ev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendConcurrent measures appends/s with fsync on when 256
// sessions append at once: they share commits through the committer.
func BenchmarkAppendConcurrent(b *testing.B) {
	const sessions = 256
	s, _ := newTestStore(b, Options{})
	keys := make([]store.SessionKey, sessions)
	for i := range keys {
		keys[i] = store.SessionKey{App: "app", User: fmt.Sprint("u", i%16), Session: fmt.Sprint("s", i)}
		if _, err := s.CreateSession(b.Context(), keys[i], nil); err != nil {
			b.Fatal(err)
		}
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

// BenchmarkGetSessionRecent20 reads the 20 most recent events of a session
// holding 100,000.
func BenchmarkGetSessionRecent20(b *testing.B) {
	path := filepath.Join(b.TempDir(), "db")
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	grow(b, path, func(s *Store) {
		if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
			b.Fatal(err)
		}
		appendMany(b, s, k, 100_000)
	})
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		_, evs, err := s.GetSession(b.Context(), k, store.GetOptions{NumRecentEvents: 20})
		if err != nil || len(evs) != 20 || evs[19].GetSequence() != 100_000 {
			b.Fatalf("got %d events, %v", len(evs), err)
		}
	}
}

// BenchmarkListSessionsFirstPage lists the first 100 sessions of an app
// with 100,000 sessions stored.
func BenchmarkListSessionsFirstPage(b *testing.B) {
	path := filepath.Join(b.TempDir(), "db")
	grow(b, path, func(s *Store) {
		var wg sync.WaitGroup
		var next atomic.Int64
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1); i <= 100_000; i = next.Add(1) {
					k := store.SessionKey{App: "app", User: fmt.Sprint("user", i%1000), Session: fmt.Sprint("s", i)}
					if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
						b.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
	})
	s, err := Open(path, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, user := range []string{"", "user7"} {
		b.Run("user="+user, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				list, _, err := s.ListSessions(b.Context(), "app", user, store.Page{})
				if err != nil || len(list) == 0 {
					b.Fatalf("got %d sessions, %v", len(list), err)
				}
			}
		})
	}
}

// benchRun is a typical running record: timestamps, a request id, usage.
func benchRun(k store.SessionKey, id string) *agentrunnerv1.Run {
	now := timestamppb.Now()
	return &agentrunnerv1.Run{
		RunId: id, AppName: k.App, UserId: k.User, SessionId: k.Session,
		Status:     agentrunnerv1.RunStatus_RUN_STATUS_RUNNING,
		CreateTime: now, StartTime: now,
		RequestId:         "req-" + id,
		RequestDigest:     "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		Usage:             &agentrunnerv1.UsageMetadata{PromptTokenCount: 812, CandidatesTokenCount: 54, TotalTokenCount: 866},
		MultitaskStrategy: agentrunnerv1.MultitaskStrategy_MULTITASK_STRATEGY_REJECT,
		OnDisconnect:      agentrunnerv1.OnDisconnect_ON_DISCONNECT_CANCEL,
	}
}

// appendFunc appends ev to k, with the run record of k's run when withRun.
func appendFunc(s *Store, withRun bool) func(b *testing.B, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) error {
	return func(b *testing.B, k store.SessionKey, ev *agentrunnerv1.Event, run *agentrunnerv1.Run) error {
		if withRun {
			_, _, err := s.AppendRunEvent(b.Context(), k, ev, run)
			return err
		}
		_, err := s.AppendEvent(b.Context(), k, ev)
		return err
	}
}

// BenchmarkAppendRunEvent compares durable appends (fsync on) of an event
// alone (AppendEvent) with appends that also write the event's run record
// and its indexes in the same transaction (AppendRunEvent): one appender
// on a file holding 1,000 other sessions and their runs, and 256 sessions
// appending at once. The nosync variant shows the CPU the record adds,
// which the fsync hides otherwise; pages/op counts the pages each commit
// writes before its one fsync.
func BenchmarkAppendRunEvent(b *testing.B) {
	for _, withRun := range []bool{false, true} {
		name := map[bool]string{false: "AppendEvent", true: "AppendRunEvent"}[withRun]
		b.Run(name+"/serial", func(b *testing.B) { benchAppendSerial(b, withRun, false) })
		b.Run(name+"/serial-nosync", func(b *testing.B) { benchAppendSerial(b, withRun, true) })
		b.Run(name+"/sessions=256", func(b *testing.B) { benchAppendSessions(b, withRun, 256) })
	}
}

func benchAppendSerial(b *testing.B, withRun, noSync bool) {
	path := filepath.Join(b.TempDir(), "db")
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	run := benchRun(k, "e-1")
	grow(b, path, func(s *Store) {
		for i := range 1000 {
			ok := store.SessionKey{App: "app", User: fmt.Sprint("u", i%16), Session: fmt.Sprint("other", i)}
			if _, err := s.CreateSession(b.Context(), ok, nil); err != nil {
				b.Fatal(err)
			}
			for range 3 {
				if _, _, err := s.AppendRunEvent(b.Context(), ok, benchEvent(), benchRun(ok, fmt.Sprint("e-other", i))); err != nil {
					b.Fatal(err)
				}
			}
		}
		if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
			b.Fatal(err)
		}
		if err := s.PutRun(b.Context(), run); err != nil {
			b.Fatal(err)
		}
	})
	s, err := Open(path, Options{NoSync: noSync})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	add, ev := appendFunc(s, withRun), benchEvent()
	before := s.db.Stats().TxStats
	b.ReportAllocs()
	for b.Loop() {
		if err := add(b, k, ev, run); err != nil {
			b.Fatal(err)
		}
	}
	after := s.db.Stats().TxStats
	b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(b.N), "pages/op")
}

func benchAppendSessions(b *testing.B, withRun bool, sessions int) {
	s, _ := newTestStore(b, Options{})
	keys := make([]store.SessionKey, sessions)
	runs := make([]*agentrunnerv1.Run, sessions)
	for i := range keys {
		keys[i] = store.SessionKey{App: "app", User: fmt.Sprint("u", i%16), Session: fmt.Sprint("s", i)}
		if _, err := s.CreateSession(b.Context(), keys[i], nil); err != nil {
			b.Fatal(err)
		}
		runs[i] = benchRun(keys[i], fmt.Sprint("e-", i))
		if err := s.PutRun(b.Context(), runs[i]); err != nil {
			b.Fatal(err)
		}
	}
	add, ev := appendFunc(s, withRun), benchEvent()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := add(b, keys[i], ev, runs[i]); err != nil {
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

// BenchmarkRunLifecycle measures what one run writes, as the runner
// writes it: the user message with the new run's record (RUNNING), then
// the answer with the final record (SUCCEEDED), two commits. "events-only"
// writes the same two events without any record. sessions=256 runs 256
// sessions at once with fsync on, each holding 40 runs already;
// serial-nosync runs one session without fsync, which shows the CPU of a
// commit; spread-nosync runs 256 sessions one write at a time, round
// robin, as runs that arrive spread out commit (a few writes each, each
// in a page of its own). Run ids are time-ordered, as the runner makes
// them. pages/op counts the pages a run's commits write, their meta
// pages included.
func BenchmarkRunLifecycle(b *testing.B) {
	for _, withRun := range []bool{false, true} {
		name := map[bool]string{false: "events-only", true: "with-records"}[withRun]
		b.Run(name+"/sessions=256", func(b *testing.B) { benchLifecycle(b, withRun, 256, false) })
		b.Run(name+"/serial-nosync", func(b *testing.B) { benchLifecycle(b, withRun, 1, false) })
		b.Run(name+"/spread-nosync", func(b *testing.B) { benchLifecycle(b, withRun, 256, true) })
	}
}

// lifecycleEvents are a run's user message and its answer.
func lifecycleEvents() (msg, answer *agentrunnerv1.Event) {
	msg = &agentrunnerv1.Event{InvocationId: "inv-0123456789abcdef", Author: "user", Content: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "When is my next invoice due?"}}}}}
	return msg, benchEvent()
}

func benchLifecycle(b *testing.B, withRun bool, sessions int, spread bool) {
	path := filepath.Join(b.TempDir(), "db")
	keys := make([]store.SessionKey, sessions)
	var ids atomic.Int64
	oneRun := func(s *Store, k store.SessionKey) error {
		msg, answer := lifecycleEvents()
		if !withRun {
			if _, err := s.AppendEvent(b.Context(), k, msg); err != nil {
				return err
			}
			_, err := s.AppendEvent(b.Context(), k, answer)
			return err
		}
		run := benchRun(k, fmt.Sprintf("e-%016x", ids.Add(1)))
		run.RequestId, run.Usage = "", nil
		if _, _, err := s.AppendRunEvent(b.Context(), k, msg, run); err != nil {
			return err
		}
		run.Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
		run.EndTime = timestamppb.Now()
		run.Usage = answer.GetUsageMetadata()
		_, _, err := s.AppendRunEvent(b.Context(), k, answer, run)
		return err
	}
	grow(b, path, func(s *Store) {
		for i := range keys {
			keys[i] = store.SessionKey{App: "app", User: fmt.Sprint("u", i%16), Session: fmt.Sprint("s", i)}
			if _, err := s.CreateSession(b.Context(), keys[i], nil); err != nil {
				b.Fatal(err)
			}
			for range 40 {
				if err := oneRun(s, keys[i]); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	s, err := Open(path, Options{NoSync: sessions == 1 || spread})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	before := s.db.Stats().TxStats
	b.ReportAllocs()
	b.ResetTimer()
	if spread {
		lifecycleSpread(b, s, keys, withRun)
	} else {
		lifecycleConcurrent(b, keys, func(k store.SessionKey) error { return oneRun(s, k) })
	}
	b.StopTimer()
	after := s.db.Stats().TxStats
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "runs/s")
	b.ReportMetric(float64(after.GetWrite()-before.GetWrite())/float64(b.N), "pages/op")
}

// lifecycleConcurrent runs b.N runs from one goroutine per session.
func lifecycleConcurrent(b *testing.B, keys []store.SessionKey, oneRun func(store.SessionKey) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for i := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := oneRun(keys[i]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// lifecycleSpread runs b.N runs one write at a time: each session's
// first write, then each one's second, so that consecutive commits are
// of different sessions, as runs spread out in time commit.
func lifecycleSpread(b *testing.B, s *Store, keys []store.SessionKey, withRun bool) {
	var id int64
	for done := 0; done < b.N; {
		n := min(len(keys), b.N-done)
		runs := make([]*agentrunnerv1.Run, n)
		msg, answer := lifecycleEvents()
		for i := range n {
			id++
			runs[i] = benchRun(keys[i], fmt.Sprintf("f-%016x", id))
			runs[i].RequestId, runs[i].Usage = "", nil
			if err := appendFunc(s, withRun)(b, keys[i], msg, runs[i]); err != nil {
				b.Fatal(err)
			}
		}
		for i := range n {
			runs[i].Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
			runs[i].EndTime, runs[i].Usage = timestamppb.Now(), answer.GetUsageMetadata()
			if err := appendFunc(s, withRun)(b, keys[i], answer, runs[i]); err != nil {
				b.Fatal(err)
			}
		}
		done += n
	}
}

// BenchmarkAppendEventOnce measures an append with a caller's id, which
// searches the session's events for the id, on sessions of 10 and
// 100,000 events (fsync on).
func BenchmarkAppendEventOnce(b *testing.B) {
	for _, n := range []int{10, 100_000} {
		b.Run(fmt.Sprint("events=", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "db")
			k := store.SessionKey{App: "app", User: "u", Session: "s"}
			grow(b, path, func(s *Store) {
				if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
					b.Fatal(err)
				}
				appendMany(b, s, k, n)
			})
			s, err := Open(path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				ev := benchEvent()
				ev.Id = fmt.Sprint("client-", i)
				i++
				if _, existed, err := s.AppendEventOnce(b.Context(), k, ev); err != nil || existed {
					b.Fatal(existed, err)
				}
			}
		})
	}
}
