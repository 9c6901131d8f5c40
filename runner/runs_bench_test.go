package runner

import (
	"iter"
	"slices"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

// BenchmarkCancelToFree measures how long a session stays busy after
// Cancel: from the Cancel call on a run that waits in its agent to the
// moment a new run on the session is admitted. It reports p50 and p99.
func BenchmarkCancelToFree(b *testing.B) {
	entered := make(chan struct{}, 1)
	blocker, err := agent.New(agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if !yield(say("working"), nil) {
				return
			}
			entered <- struct{}{}
			<-ctx.Done() // a model call that ends only when cancelled
			yield(nil, ctx.Err())
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	db := newTestStore(b)
	r := must[*Runner](b)(New(Config{AppName: testApp, Root: blocker, Store: db}))
	k := newSession(b, db, "u", "s")
	var lat []time.Duration
	req := Request{UserID: k.User, SessionID: k.Session, NewMessage: userText("go")}
	run := must[*agentrunnerv1.Run](b)(r.Start(b.Context(), req))
	for b.Loop() {
		<-entered
		start := time.Now()
		if _, err := r.Cancel(b.Context(), run.GetRunId()); err != nil {
			b.Fatal(err)
		}
		run = must[*agentrunnerv1.Run](b)(r.Start(b.Context(), req))
		lat = append(lat, time.Since(start))
	}
	<-entered
	if _, err := r.Cancel(b.Context(), run.GetRunId()); err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkAttachReplay measures how fast Attach replays a finished run's
// stored events (a run of 1,000 events), in events per second.
func BenchmarkAttachReplay(b *testing.B) {
	const n = 1000
	r, db := benchRunner(b, n, true)
	k := store.SessionKey{App: testApp, User: "u", Session: "s"}
	if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
		b.Fatal(err)
	}
	var id string
	for u, err := range r.Stream(b.Context(), Request{UserID: k.User, SessionID: k.Session, NewMessage: userText("go")}) {
		if err != nil {
			b.Fatal(err)
		}
		if u.Run != nil {
			id = u.Run.GetRunId()
		}
	}
	events := 0
	for b.Loop() {
		for u, err := range r.Attach(b.Context(), id, 0) {
			if err != nil {
				b.Fatal(err)
			}
			if u.Event != nil {
				events++
			}
		}
	}
	if want := b.N * (n + 1); events != want {
		b.Fatalf("replayed %d events, want %d", events, want)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
