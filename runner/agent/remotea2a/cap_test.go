package remotea2a_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a/remotea2atest"
)

// turnOf runs one turn of ag on a session whose only event is the user's
// text, and returns the complete events' text and the errors yielded.
func turnOf(t *testing.T, ag agent.Agent, text string) (answer string, errs []error) {
	t.Helper()
	n := 0
	inv := agent.NewInvocation(agent.InvocationConfig{
		ID: "run-1", NewID: func() string { n++; return fmt.Sprint("id-", n) },
		Events: []*agentrunnerv1.Event{{Author: agent.UserAuthor, Sequence: 1, Content: &agentrunnerv1.Content{
			Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: text}}}}}},
	})
	for ev, err := range ag.Run(inv.Context(t.Context(), ag)) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ev.GetPartial() {
			for _, p := range ev.GetContent().GetParts() {
				answer += p.GetText()
			}
		}
	}
	return answer, errs
}

// TestAnswerCap: a remote agent whose answer passes MaxAnswerBytes fails
// its turn in band with ErrAnswerTooLarge, naming the bound, and keeps
// none of it; an answer within the bound comes back whole.
func TestAnswerCap(t *testing.T) {
	remote := remotea2atest.Start(t)
	card, err := remotea2a.ResolveCard(t.Context(), nil, remote.URL)
	if err != nil {
		t.Fatal(err)
	}
	const max = 8 << 10
	ag, err := remotea2a.New(context.Background(), remotea2a.Config{Name: "remote", Card: card, MaxAnswerBytes: max})
	if err != nil {
		t.Fatal(err)
	}
	if answer, errs := turnOf(t, ag, "short question"); len(errs) != 0 || answer != "remote echo: short question" {
		t.Fatalf("short turn: answer %q, errors %v", answer, errs)
	}
	// Each word comes back as an event of its own, well past max in all.
	long := strings.Repeat("word ", 2000)
	answer, errs := turnOf(t, ag, long)
	if len(errs) != 1 || !errors.Is(errs[0], remotea2a.ErrAnswerTooLarge) {
		t.Fatalf("long turn: errors %v, want one ErrAnswerTooLarge", errs)
	}
	if answer != "" {
		t.Errorf("long turn stored an answer of %d bytes", len(answer))
	}
	if !strings.Contains(errs[0].Error(), fmt.Sprint(max)) {
		t.Errorf("error %q does not name the bound", errs[0])
	}
}
