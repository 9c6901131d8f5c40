package runner

import (
	"errors"
	"fmt"
	"iter"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
)

func TestMemorySearch(t *testing.T) {
	db := newTestStore(t)
	mem := NewStoreMemory(db)
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
		for _, ev := range events {
			if _, err := db.AppendEvent(t.Context(), k, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name  string
		query string
		limit int
		want  []string
	}{
		{name: "keyword, case-insensitive", query: "WEATHER?", want: []string{"user: What is the Weather in Paris?"}},
		{name: "any word", query: "paris thanks", want: []string{"user: What is the Weather in Paris?", "bot: Sunny in Paris.", "user: thanks"}},
		{name: "limit", query: "paris thanks", limit: 1, want: []string{"user: What is the Weather in Paris?"}},
		{name: "no match", query: "snow", want: nil},
		{name: "no words", query: "?!", want: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entries, err := mem.Search(t.Context(), MemoryQuery{App: testApp, User: "u1", Query: tc.query, ExcludeSession: "current", Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				if e.SessionID != "old" || e.Time.IsZero() {
					t.Errorf("entry %+v", e)
				}
				got = append(got, e.Author+": "+textOf(e.Content))
			}
			if !equalStrings(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}

	// Agents search through their context, which leaves out the current
	// session.
	var found []*MemoryEntry
	root := mustCustom(t, AgentConfig{Name: "root", Run: func(ctx InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
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

func TestApps(t *testing.T) {
	db := newTestStore(t)
	apps := NewApps(AppsConfig{Store: db})
	helper := llm(t, LLMConfig{Name: "helper", Description: "helps", DisallowTransferToPeers: true})
	loop := must[Agent](t)(NewLoop(LoopConfig{Name: "again", MaxIterations: 2, SubAgents: []Agent{mustAgent(t, "step")}}))
	root := llm(t, LLMConfig{Name: "root", Description: "answers", SubAgents: []Agent{helper, loop}})
	if _, err := apps.Register(App{Name: "zeta", Description: "the z app", Root: root}); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.Register(App{Name: "alpha", Root: mustAgent(t, "solo")}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		app  App
		want error
		msg  string
	}{
		{name: "duplicate", app: App{Name: "zeta", Root: mustAgent(t, "x")}, want: store.ErrAlreadyExists},
		{name: "no name", app: App{Root: mustAgent(t, "x")}, msg: "app name is required"},
		{name: "no root", app: App{Name: "empty"}, msg: "root agent is required"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := apps.Register(tc.app)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v %q", err, tc.want, tc.msg)
			}
		})
	}

	if r, ok := apps.Lookup("zeta"); !ok || r.AppName() != "zeta" || r.Root() != root {
		t.Fatalf("lookup zeta: %v %v", r, ok)
	}
	if _, ok := apps.Lookup("nope"); ok {
		t.Fatal("lookup of an unknown app succeeded")
	}

	list := apps.List()
	want := []*agentrunnerv1.App{
		{Name: "alpha", RootAgent: &agentrunnerv1.AgentInfo{
			Name: "solo", Kind: agentrunnerv1.AgentKind_AGENT_KIND_CUSTOM, DisallowTransferToParent: true, DisallowTransferToPeers: true,
		}},
		{Name: "zeta", Description: "the z app", RootAgent: &agentrunnerv1.AgentInfo{
			Name: "root", Description: "answers", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LLM, Model: "fake",
			Tools: []string{ToolTransferToAgent}, TransferTargets: []string{"helper", "again"},
			SubAgents: []*agentrunnerv1.AgentInfo{
				{Name: "helper", Description: "helps", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LLM, Model: "fake", DisallowTransferToPeers: true,
					Tools: []string{ToolTransferToAgent}, TransferTargets: []string{"root"}},
				{Name: "again", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LOOP, MaxIterations: 2, DisallowTransferToParent: true, DisallowTransferToPeers: true,
					SubAgents: []*agentrunnerv1.AgentInfo{{Name: "step", Kind: agentrunnerv1.AgentKind_AGENT_KIND_CUSTOM, DisallowTransferToParent: true, DisallowTransferToPeers: true}}},
			},
		}},
	}
	if len(list) != len(want) {
		t.Fatalf("listed %d apps", len(list))
	}
	for i := range want {
		if !proto.Equal(list[i], want[i]) {
			t.Errorf("app %d:\n got %v\nwant %v", i, list[i], want[i])
		}
	}
}

func TestAgentInfoListsToolsAndTransferTargets(t *testing.T) {
	m := &fakeModel{}
	llm := func(name string, cfg LLMConfig) Agent {
		t.Helper()
		cfg.Name, cfg.Model = name, m
		a, err := NewLLMAgent(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	billing := llm("billing", LLMConfig{Tools: []Tool{ExitLoopTool()}})
	tech := llm("tech", LLMConfig{DisallowTransferToParent: true, DisallowTransferToPeers: true})
	triage := llm("triage", LLMConfig{SubAgents: []Agent{billing, tech}})
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
