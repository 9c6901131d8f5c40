package runner

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// BenchmarkRunLLM measures a run of an LLM agent on the offline model,
// whose final answer ends the run (the shape of agentrunner bench's app),
// on one session, with and without fsync.
func BenchmarkRunLLM(b *testing.B) {
	for _, sync := range []string{"fsync", "nosync"} {
		b.Run(sync, func(b *testing.B) {
			db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: sync == "nosync"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			root, err := llmagent.New(llmagent.Config{Name: "answer", Model: offline.New(offline.Config{})})
			if err != nil {
				b.Fatal(err)
			}
			r, err := New(Config{AppName: testApp, Root: root, Store: db})
			if err != nil {
				b.Fatal(err)
			}
			k := store.SessionKey{App: testApp, User: "u", Session: "s"}
			if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				req := Request{UserID: k.User, SessionID: k.Session, NewMessage: userText(fmt.Sprint("hi ", i))}
				for _, err := range r.Stream(b.Context(), req) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// BenchmarkRunLLMStreaming measures a streamed run of an LLM agent on the
// offline model, as agentrunner bench's streaming scenario makes them: a
// message of 200 words, echoed one partial event a word (SSE), on a new
// session each (no fsync). ns/partial is the run's time a partial event.
func BenchmarkRunLLMStreaming(b *testing.B) {
	const words = 200
	db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	root, err := llmagent.New(llmagent.Config{Name: "answer", Model: offline.New(offline.Config{})})
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(Config{AppName: testApp, Root: root, Store: db})
	if err != nil {
		b.Fatal(err)
	}
	ws := make([]string, words)
	for i := range ws {
		ws[i] = "w" + strconv.Itoa(i)
	}
	msg := userText(strings.Join(ws, " "))
	cfg := &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	b.ReportAllocs()
	i, partials := 0, 0
	for b.Loop() {
		b.StopTimer()
		k := store.SessionKey{App: testApp, User: "u", Session: strconv.Itoa(i)}
		i++
		if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		for ev, err := range r.Stream(b.Context(), Request{UserID: k.User, SessionID: k.Session, NewMessage: msg, Config: cfg}) {
			if err != nil {
				b.Fatal(err)
			}
			if ev.Event.GetPartial() {
				partials++
			}
		}
	}
	if partials < b.N*words {
		b.Fatalf("%d partial events in %d runs, want %d a run", partials, b.N, words)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(partials), "ns/partial")
}

// BenchmarkRunLLMLongSession measures a run of an LLM agent on the offline
// model in a session of n stored events (no fsync): every model call's
// request holds the whole history, which the agent makes from the events
// the runner's history cache lends the run.
func BenchmarkRunLLMLongSession(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint("events=", n), func(b *testing.B) {
			db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = db.Close() })
			root, err := llmagent.New(llmagent.Config{Name: "answer", Model: offline.New(offline.Config{})})
			if err != nil {
				b.Fatal(err)
			}
			r, err := New(Config{AppName: testApp, Root: root, Store: db, HistoryEvents: n + 10})
			if err != nil {
				b.Fatal(err)
			}
			k := store.SessionKey{App: testApp, User: "u", Session: "long"}
			if _, err := db.CreateSession(b.Context(), k, nil); err != nil {
				b.Fatal(err)
			}
			for i := range n {
				author, role := "user", "user"
				if i%2 == 1 {
					author, role = "answer", "model"
				}
				ev := &agentrunnerv1.Event{Author: author, InvocationId: fmt.Sprint("pre-", i/2), Content: &agentrunnerv1.Content{Role: role, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprint("message ", i, " with a few words in it")}}}}}
				if _, err := db.AppendEvent(b.Context(), k, ev); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				req := Request{UserID: k.User, SessionID: k.Session, NewMessage: userText(fmt.Sprint("hi ", i))}
				for _, err := range r.Stream(b.Context(), req) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
