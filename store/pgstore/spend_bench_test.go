package pgstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

// usageEvent is benchEvent as a priced model call: with usage and cost.
func usageEvent() *agentrunnerv1.Event {
	ev := benchEvent()
	ev.ModelVersion = "gemini-2.5-flash"
	ev.UsageMetadata = &agentrunnerv1.UsageMetadata{PromptTokenCount: 812, CandidatesTokenCount: 54, TotalTokenCount: 866}
	ev.Cost = &agentrunnerv1.Cost{Currency: "USD", Micros: 1234, Model: "flash"}
	return ev
}

// BenchmarkAppendEventUsage is BenchmarkAppendEvent with events that
// carry usage and cost: what the two rows of the daily ledger add.
func BenchmarkAppendEventUsage(b *testing.B) {
	s, err := openBench(b)
	if err != nil {
		b.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.AppendEvent(b.Context(), k, usageEvent()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventUsageParallel: sessions of one user appending model
// calls at once, which all add to the same two ledger rows (the user's
// and the app's of the day and model): the rows' locks are held to the
// commit, so this shows what they serialize.
func BenchmarkAppendEventUsageParallel(b *testing.B) {
	s, err := openBench(b)
	if err != nil {
		b.Fatal(err)
	}
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		k := store.SessionKey{App: "app", User: "u", Session: fmt.Sprint("s", n.Add(1))}
		if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if _, err := s.AppendEvent(b.Context(), k, usageEvent()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
