package remotea2a_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a/remotea2atest"
)

// TestFirstTurnHistoryBounded: a remote agent's first turn in a long
// session sends the session's newest events only, within the default
// bounds (20 events), the newest message always, not the whole session
// to the third party.
func TestFirstTurnHistoryBounded(t *testing.T) {
	remote := remotea2atest.Start(t)
	card, err := remotea2a.ResolveCard(t.Context(), nil, remote.URL)
	if err != nil {
		t.Fatal(err)
	}
	ag, err := remotea2a.New(context.Background(), remotea2a.Config{Name: "remote", Card: card})
	if err != nil {
		t.Fatal(err)
	}
	var events []*agentrunnerv1.Event
	for i := range 50 {
		author, text := agent.UserAuthor, fmt.Sprintf("message %02d", i)
		if i%2 == 1 {
			author, text = "helper", fmt.Sprintf("answer %02d", i)
		}
		events = append(events, &agentrunnerv1.Event{Id: fmt.Sprint("ev-", i), Author: author, Sequence: uint64(i + 1),
			Content: &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}})
	}
	inv := agent.NewInvocation(agent.InvocationConfig{ID: "run-1", NewID: func() string { return "x" }, Events: events})
	for _, err := range ag.Run(inv.Context(t.Context(), ag)) {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := remote.Received()
	if len(got) != 1 {
		t.Fatalf("remote received %d messages, want 1", len(got))
	}
	sent := got[0].Text
	if !strings.Contains(sent, "answer 49") || !strings.Contains(sent, "message 30") {
		t.Errorf("sent %q: want the 20 newest events, the newest included", sent)
	}
	if strings.Contains(sent, "message 00") || strings.Contains(sent, "answer 29") {
		t.Errorf("sent %q: an event older than the 20 newest went to the remote agent", sent)
	}
}
