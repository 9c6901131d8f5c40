package pgstore_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
)

func benchEvent() *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Author: "agent", Content: &agentrunnerv1.Content{Role: "model",
		Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "an answer of a few words"}}}}}
}

// BenchmarkAppendEvent: one session, one append after another; what a
// lone run pays per event (the test cluster runs without fsync, so this
// is the round trips and the work).
func BenchmarkAppendEvent(b *testing.B) {
	s, err := openBench(b)
	if err != nil {
		b.Fatal(err)
	}
	k := store.SessionKey{App: "app", User: "u", Session: "s"}
	if _, err := s.CreateSession(b.Context(), k, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := s.AppendEvent(b.Context(), k, benchEvent()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventParallel: appends to many sessions at once.
func BenchmarkAppendEventParallel(b *testing.B) {
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
			if _, err := s.AppendEvent(b.Context(), k, benchEvent()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
