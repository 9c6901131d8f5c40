package remotea2a_test

import (
	"context"
	"fmt"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a/remotea2atest"
)

// TestTurnRunAgainSendsSameMessage: a turn run again on the same session
// (a resume after a crash cut it, even after it stored the remote's tool
// step) sends the remote the same message with the same id, so that a
// remote that deduplicates by id does the work once.
func TestTurnRunAgainSendsSameMessage(t *testing.T) {
	remote := remotea2atest.Start(t)
	card, err := remotea2a.ResolveCard(t.Context(), nil, remote.URL)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := remotea2a.New(context.Background(), remotea2a.Config{Name: "remote", Card: card})
	if err != nil {
		t.Fatal(err)
	}
	run := func(events ...*agentrunnerv1.Event) {
		n := 0
		inv := agent.NewInvocation(agent.InvocationConfig{ID: "run-1", NewID: func() string { n++; return fmt.Sprint("id-", n) }, Events: events})
		for _, err := range ag.Run(inv.Context(t.Context(), ag)) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	user := &agentrunnerv1.Event{Id: "ev-1", Author: agent.UserAuthor, Sequence: 1, Content: &agentrunnerv1.Content{
		Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "tool: look it up"}}}}}
	run(user)
	// The crash came after the turn stored the remote's call, before the
	// turn's end: the resumed run runs the turn again.
	step := &agentrunnerv1.Event{Id: "ev-2", Author: "remote", Sequence: 2, Content: &agentrunnerv1.Content{
		Role: agent.RoleModel, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "lookup-1", Name: "lookup"}}}}}}
	run(user, step)
	got := remote.Received()
	if len(got) != 2 || got[0].MessageID == "" || got[0].MessageID != got[1].MessageID || got[0].Text != got[1].Text {
		t.Fatalf("the remote received %+v; want the same message twice, with one id", got)
	}
}
