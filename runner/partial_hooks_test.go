package runner

import (
	"errors"
	"iter"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
)

// partialCounter counts in state the partial events it sees, and fails on
// the one that says "fail".
type partialCounter struct{}

func (partialCounter) Name() string { return "partial-counter" }

func (partialCounter) OnEvent(ctx agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if !ev.GetPartial() {
		return nil, nil
	}
	if textOf(ev.GetContent()) == "fail" {
		return nil, errors.New("refused")
	}
	n := 0.0
	if v, ok := ctx.State().Get("partials"); ok {
		n = v.GetNumberValue()
	}
	return nil, ctx.State().Set("partials", n+1)
}

// TestOnEventPartialState checks that state an on_event hook changes while
// it sees partial events is stored with the next complete event (a partial
// is never stored), and that a hook's error on a partial is delivered
// in-band while the partial goes on unchanged.
func TestOnEventPartialState(t *testing.T) {
	db := newTestStore(t)
	root, err := agent.New(agent.Config{Name: "root", Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			for _, s := range []string{"a", "fail", "b"} {
				ev := say(s)
				ev.Partial = true
				if !yield(ev, nil) {
					return
				}
			}
			yield(say("ab"), nil)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	r := must[*Runner](t)(New(Config{AppName: testApp, Root: root, Store: db, Plugins: []plugin.Plugin{partialCounter{}}}))
	k := newSession(t, db, "u1", "s1")
	res := mustRun(t, r, request(k, "go"))
	if got, want := summary(res.events), []string{"root: a (partial)", "root: fail (partial)", "root: b (partial)", "root: ab"}; !equalStrings(got, want) {
		t.Fatalf("stream %q, want %q", got, want)
	}
	var pe *plugin.Error
	if len(res.agentErrs) != 1 || !errors.As(res.agentErrs[0], &pe) || pe.Hook != "on_event" {
		t.Fatalf("in-band errors %v, want the hook's one", res.agentErrs)
	}
	_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := events[len(events)-1]
	if got := last.GetActions().GetStateDelta().GetFields()["partials"].GetNumberValue(); textOf(last.GetContent()) != "ab" || got != 2 {
		t.Fatalf("stored %q with partials=%v, want the answer with 2", textOf(last.GetContent()), got)
	}
}
