package runner

import (
	"slices"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
)

// TestConfirmationIsBetweenAgentAndCaller checks that the model never sees
// confirmation requests or their answers: after approval its next request
// holds its own call followed by the call's result.
func TestConfirmationIsBetweenAgentAndCaller(t *testing.T) {
	m := &fakeModel{name: "fake", respond: script(content(agent.RoleModel, call("c1", "refund", map[string]any{"amount": 5.0})), modelText("done"))}
	refund := mustTool(t, "refund", func(tool.Context, map[string]any) (map[string]any, error) { return map[string]any{"ok": true}, nil })
	root := llm(t, llmagent.Config{Name: "root", Model: m, Tools: []tool.Tool{refund}, RequireConfirmation: []string{"refund"}})
	r, _, k := newTestRunner(t, root)
	first := mustRun(t, r, request(k, "refund me"))
	if got := eventLines(first.events); len(got) != 2 || !strings.Contains(got[1], builtin.RequestConfirmationName) {
		t.Fatalf("first run %q", got)
	}
	confirmID := first.events[1].GetLongRunningToolIds()[0]
	answer := &agentrunnerv1.Content{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{reply(confirmID, builtin.RequestConfirmationName, map[string]any{"confirmed": true})}}
	second := mustRun(t, r, Request{UserID: k.User, SessionID: k.Session, NewMessage: answer})
	if got, want := eventLines(second.events), []string{`root: response c1 {"ok":true}`, "root: done"}; !slices.Equal(got, want) {
		t.Fatalf("second run %q, want %q", got, want)
	}
	calls := m.calls()
	if got, want := contentLines(calls[1].Contents), []string{"user: refund me", "model: call c1 refund", `user: response c1 {"ok":true}`}; !slices.Equal(got, want) {
		t.Fatalf("the model's second request %q, want %q", got, want)
	}
	if _, err := llmagent.New(llmagent.Config{Name: "x", Model: m, RequireConfirmation: []string{"nope"}}); err == nil {
		t.Fatal("RequireConfirmation of a tool the agent does not have was accepted")
	}
	client, err := tool.NewClientFunction("approve", "", map[string]any{"type": "object"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := llmagent.New(llmagent.Config{Name: "y", Model: m, Tools: []tool.Tool{client}, RequireConfirmation: []string{"approve"}}); err == nil || !strings.Contains(err.Error(), "caller executes") {
		t.Fatalf("confirmation of a tool the caller executes: %v", err)
	}
}
