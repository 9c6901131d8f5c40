package runner

import (
	"fmt"
	"iter"
	"log/slog"
	"path/filepath"
	"strconv"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// streamer is a custom agent that streams its answer as n partial events,
// then stores it whole, as an LLM agent in streaming mode does.
func streamer(b testing.TB, n int) agent.Agent {
	a, err := agent.New(agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			for i := range n {
				ev := say("chunk " + strconv.Itoa(i))
				ev.Partial = true
				if !yield(ev, nil) {
					return
				}
			}
			yield(say("the whole answer"), nil)
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	return a
}

// onEventNop has an on_event hook that changes nothing.
type onEventNop struct{}

func (onEventNop) Name() string { return "on-event-nop" }
func (onEventNop) OnEvent(agent.InvocationContext, *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	return nil, nil
}

// beforeRunNop has plugins but no on_event hook.
type beforeRunNop struct{}

func (beforeRunNop) Name() string { return "before-run-nop" }
func (beforeRunNop) BeforeRun(agent.InvocationContext) (*agentrunnerv1.Content, error) {
	return nil, nil
}

// BenchmarkRunStreaming measures a run that streams 100 partial events
// before its one stored answer (no fsync): partial events are the hot path
// of streaming, and a runner whose plugins have no on_event hook must
// spend nothing on them for the hook.
func BenchmarkRunStreaming(b *testing.B) {
	const n = 100
	for _, tc := range []struct {
		name    string
		plugins []plugin.Plugin
	}{
		{"plugins=none", nil},
		{"plugins=no_on_event", []plugin.Plugin{beforeRunNop{}}},
		{"plugins=on_event", []plugin.Plugin{onEventNop{}}},
		// What every served app has: the logging plugin, whose on_event
		// hook counts complete events only.
		{"plugins=logging", []plugin.Plugin{plugin.NewLogging(slog.New(slog.DiscardHandler))}},
	} {
		b.Run(fmt.Sprintf("%s/partials=%d", tc.name, n), func(b *testing.B) {
			db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			r, err := New(Config{AppName: testApp, Root: streamer(b, n), Store: db, Plugins: tc.plugins})
			if err != nil {
				b.Fatal(err)
			}
			benchmarkStreaming(b, r, db, n)
		})
	}
}

func benchmarkStreaming(b *testing.B, r *Runner, db *boltstore.Store, n int) {
	msg := userText("go")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
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
		if got != n+1 {
			b.Fatalf("%d events, want %d", got, n+1)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*(n+1)), "ns/event")
}
