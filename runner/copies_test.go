package runner

import (
	"iter"
	"slices"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store"
)

// TestEventsHandedOutAreCopies checks that nobody outside the runner can
// reach a stored or cached event: not the caller through the events Run
// yields, not an agent through Session().Events() or through an event it
// yielded and still holds.
func TestEventsHandedOutAreCopies(t *testing.T) {
	var seen [][]string
	var kept []*agentrunnerv1.Event
	root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			var texts []string
			for ev := range ctx.Session().Events().All() {
				texts = append(texts, textOf(ev.GetContent()))
				// Vandalise the copy: nobody else may see this.
				ev.Content = modelText("vandalised by the agent")
			}
			if n := ctx.Session().Events().Len(); n > 0 {
				ctx.Session().Events().At(n - 1).Author = "nobody"
			}
			seen = append(seen, texts)
			ev := say("answer")
			if !yield(ev, nil) {
				return
			}
			// The agent still holds the event it yielded; changing it now
			// must not change what was stored.
			ev.Content = modelText("changed after yield")
			kept = append(kept, ev)
		}
	}})
	r, db, k := newTestRunner(t, root)
	first := mustRun(t, r, request(k, "one"))
	// The caller vandalises what it received.
	for _, ev := range first.events {
		ev.Content = modelText("vandalised by the caller")
		ev.Author = "mallory"
	}
	mustRun(t, r, request(k, "two"))

	if want := [][]string{{"one"}, {"one", "answer", "two"}}; len(seen) != 2 || !slices.Equal(seen[0], want[0]) || !slices.Equal(seen[1], want[1]) {
		t.Fatalf("the agent saw %q, want %q", seen, want)
	}
	_, stored, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range stored {
		got = append(got, ev.GetAuthor()+": "+textOf(ev.GetContent()))
	}
	if want := []string{"user: one", "root: answer", "user: two", "root: answer"}; !slices.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
}

// BenchmarkHandOut measures what copying costs where events are handed
// out: one copy per event the caller receives, and per event an agent
// reads through Session().Events().
func BenchmarkHandOut(b *testing.B) {
	ev := &agentrunnerv1.Event{Id: "e1", InvocationId: "e-1", Author: "root", Sequence: 7, Content: modelText("a typical answer of a few words, say twenty of them, as a chat model would write")}
	b.Run("clone", func(b *testing.B) {
		for b.Loop() {
			_ = cloneEvent(ev)
		}
	})
}

// TestModelCallbacksSeeCopies checks that a before-model callback that
// edits the request's history in place changes neither the session nor the
// next request: the history it sees is a copy.
func TestModelCallbacksSeeCopies(t *testing.T) {
	m := &fakeModel{name: "fake", reply: "answer"}
	root := llm(t, llmagent.Config{Name: "root", Model: m, BeforeModelCallbacks: []llmagent.BeforeModelCallback{
		func(_ agent.CallbackContext, req *model.Request) (*model.Response, error) {
			if len(req.Contents) > 1 {
				return nil, nil // vandalise the first run's request only
			}
			for _, c := range req.Contents {
				for _, p := range c.GetParts() {
					p.Data = &agentrunnerv1.Part_Text{Text: "vandalised"}
				}
			}
			return nil, nil
		},
	}})
	r, db, k := newTestRunner(t, root)
	mustRun(t, r, request(k, "one"))
	mustRun(t, r, request(k, "two"))
	_, stored, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := summary(stored), []string{"user: one", "root: answer #1", "user: two", "root: answer #2"}; !slices.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
	// The first request was the callback's to change; the second was
	// built from the intact history kept between the runs.
	calls := m.calls()
	if got := contentLines(calls[0].Contents); !slices.Equal(got, []string{"user: vandalised"}) {
		t.Fatalf("first request %q", got)
	}
	if got, want := contentLines(calls[1].Contents), []string{"user: one", "model: answer #1", "user: two"}; !slices.Equal(got, want) {
		t.Fatalf("second request %q, want %q", got, want)
	}
}
