package runner

import (
	"fmt"
	"iter"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"

	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/memory"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"github.com/agentrunner/agentrunner/store"
)

// TestMemoryThroughContext checks that agents search memory through their
// context, which leaves out the current session.
func TestMemoryThroughContext(t *testing.T) {
	db := newTestStore(t)
	mem := memory.NewIndex(db)
	history := map[store.SessionKey][]*agentrunnerv1.Event{
		{App: testApp, User: "u1", Session: "old"}: {
			{Author: "user", Content: userText("What is the Weather in Paris?")},
			{Author: "bot", Content: modelText("Sunny in Paris.")},
			{Author: "user", Content: userText("thanks")},
		},
		{App: testApp, User: "u1", Session: "current"}: {{Author: "user", Content: userText("weather again")}},
		{App: testApp, User: "u2", Session: "other"}:   {{Author: "user", Content: userText("weather for u2")}},
		{App: "other", User: "u1", Session: "old"}:     {{Author: "user", Content: userText("weather elsewhere")}},
	}
	for k, events := range history {
		if _, err := db.CreateSession(t.Context(), k, nil); err != nil {
			t.Fatal(err)
		}
		if err := mem.AddSession(t.Context(), k); err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if _, err := db.AppendEvent(t.Context(), k, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Agents search through their context, which leaves out the current
	// session.
	var found []*memory.Entry
	root := mustCustom(t, agent.Config{Name: "root", Run: func(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			var err error
			if found, err = ctx.Memory().Search(ctx, "weather"); err != nil {
				yield(nil, err)
			}
		}
	}})
	r := must[*Runner](t)(New(Config{AppName: testApp, Root: root, Store: db, Memory: mem}))
	mustRun(t, r, Request{UserID: "u1", SessionID: "current", NewMessage: userText("weather?")})
	if len(found) != 1 || found[0].SessionID != "old" {
		t.Fatalf("found %v", found)
	}
}

func TestAgentInfoListsToolsAndTransferTargets(t *testing.T) {
	m := &fakeModel{}
	mk := func(name string, cfg llmagent.Config) agent.Agent {
		t.Helper()
		cfg.Name, cfg.Model = name, m
		a, err := llmagent.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	billing := mk("billing", llmagent.Config{Tools: []tool.Tool{builtin.ExitLoop()}})
	tech := mk("tech", llmagent.Config{DisallowTransferToParent: true, DisallowTransferToPeers: true})
	triage := mk("triage", llmagent.Config{SubAgents: []agent.Agent{billing, tech}})
	r, _, _ := newTestRunner(t, triage)
	info := r.Info().GetRootAgent()
	got := func(a *agentrunnerv1.AgentInfo) string {
		return fmt.Sprintf("%s tools=%v targets=%v", a.GetName(), a.GetTools(), a.GetTransferTargets())
	}
	want := []string{
		"triage tools=[transfer_to_agent] targets=[billing tech]",
		"billing tools=[exit_loop transfer_to_agent] targets=[triage tech]",
		"tech tools=[] targets=[]",
	}
	for i, a := range []*agentrunnerv1.AgentInfo{info, info.GetSubAgents()[0], info.GetSubAgents()[1]} {
		if got(a) != want[i] {
			t.Errorf("info = %q, want %q", got(a), want[i])
		}
	}
}
