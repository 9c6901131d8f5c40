package runner

import (
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
)

// stamper changes state from the run-level hooks.
type stamper struct{}

func (stamper) Name() string { return "stamper" }

func (stamper) OnUserMessage(ctx agent.InvocationContext, _ *agentrunnerv1.Content) (*agentrunnerv1.Content, error) {
	return nil, ctx.State().Set("on_user_message", true)
}

func (stamper) BeforeRun(ctx agent.InvocationContext) (*agentrunnerv1.Content, error) {
	return nil, ctx.State().Set("before_run", true)
}

func (stamper) OnEvent(ctx agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	return nil, ctx.State().Set("last_author", ev.GetAuthor())
}

// TestRunHooksChangeState checks that state the run-level hooks change is
// stored, each change in the event the docs name.
func TestRunHooksChangeState(t *testing.T) {
	db := newTestStore(t)
	r := must[*Runner](t)(New(Config{AppName: testApp, Root: mustAgent(t, "root", "hi"), Store: db, Plugins: []plugin.Plugin{stamper{}}}))
	k := newSession(t, db, "u1", "s1")
	req := request(k, "hello")
	req.StateDelta = mustStruct(t, map[string]any{"from_request": 1})
	mustRun(t, r, req)
	if req.StateDelta.GetFields()["on_user_message"] != nil {
		t.Fatal("the hooks' changes leaked into the caller's request")
	}
	sess, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The user's message does not go through on_event (on_user_message
	// is its hook); before_run's change, with nothing to answer, is a
	// state-only event of the agent that answers.
	want := []string{"user {from_request,on_user_message}", "root {before_run,last_author}", "root {last_author}"}
	if len(events) != len(want) {
		t.Fatalf("%d events stored: %v", len(events), events)
	}
	for i, ev := range events {
		if got := ev.GetAuthor() + " " + keySet(ev.GetActions().GetStateDelta().GetFields()); got != want[i] {
			t.Errorf("event %d: %s, want %s", i, got, want[i])
		}
	}
	if st := sess.GetState().GetFields(); st["last_author"].GetStringValue() != "root" || !st["on_user_message"].GetBoolValue() || !st["before_run"].GetBoolValue() {
		t.Fatalf("state %v", st)
	}
}
