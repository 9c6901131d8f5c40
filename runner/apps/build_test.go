package apps

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

type namedModel string

func (m namedModel) Name() string { return string(m) }
func (m namedModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(func(*model.Response, error) bool) {}
}

func TestBuild(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(example+`
  - name: pipeline
    root_agent:
      name: loop
      loop: {max_iterations: 4}
      sub_agents:
        - name: steps
          sequential: {}
          sub_agents:
            - {name: writer, llm: {model: other-model}}
            - {name: fanout, parallel: {}, sub_agents: [{name: critic, llm: {model: gemini-2.5-flash}}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	var made []string
	apps, err := Build(t.Context(), cfg, func(_ context.Context, name string) (model.Model, error) {
		made = append(made, name)
		return namedModel(name), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(made, ",") != "gemini-2.5-flash,other-model" {
		t.Fatalf("models made: %v (want one per distinct name)", made)
	}
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := mustRegistry(t, Config{Store: st})
	for _, app := range apps {
		if _, err := reg.Register(app); err != nil {
			t.Fatal(err)
		}
	}
	list := reg.List()
	if len(list) != 2 {
		t.Fatalf("apps = %v", list)
	}
	byName := map[string]*agentrunnerv1.App{}
	for _, a := range list {
		byName[a.GetName()] = a
	}
	support := byName["support"].GetRootAgent()
	if support.GetKind() != agentrunnerv1.AgentKind_AGENT_KIND_LLM || support.GetModel() != "gemini-2.5-flash" {
		t.Fatalf("support root = %v", support)
	}
	if tech := support.GetSubAgents()[1]; !tech.GetDisallowTransferToParent() || !tech.GetDisallowTransferToPeers() {
		t.Fatalf("tech = %v", tech)
	}
	loop := byName["pipeline"].GetRootAgent()
	if loop.GetKind() != agentrunnerv1.AgentKind_AGENT_KIND_LOOP || loop.GetMaxIterations() != 4 ||
		loop.GetSubAgents()[0].GetKind() != agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL ||
		loop.GetSubAgents()[0].GetSubAgents()[1].GetKind() != agentrunnerv1.AgentKind_AGENT_KIND_PARALLEL {
		t.Fatalf("pipeline = %v", loop)
	}
}

func TestBuildModelError(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return nil, errors.New("no credentials") })
	if err == nil || !strings.Contains(err.Error(), "apps[0].root_agent.sub_agents[0].llm.model") || !strings.Contains(err.Error(), "no credentials") {
		t.Fatalf("error = %v", err)
	}
}

// newRegistry registers apps over a fresh store and returns it with a
// helper that runs a message in a new or existing session.
func newRegistry(t *testing.T, apps []App) (*Registry, *boltstore.Store) {
	t.Helper()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	reg := mustRegistry(t, Config{Store: st})
	for _, app := range apps {
		if _, err := reg.Register(app); err != nil {
			t.Fatal(err)
		}
	}
	return reg, st
}

// runText runs msg and returns "author: text" for each event, with
// function calls as "call name".
func runText(t *testing.T, r *runner.Runner, user, session, msg string) []string {
	t.Helper()
	var out []string
	req := runner.Request{UserID: user, SessionID: session, NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: msg}}}}}
	for ev, err := range r.Run(t.Context(), req) {
		if err != nil {
			t.Fatalf("run %q: %v", msg, err)
		}
		var parts []string
		for _, p := range ev.GetContent().GetParts() {
			switch {
			case p.GetFunctionCall() != nil:
				parts = append(parts, "call "+p.GetFunctionCall().GetName())
			case p.GetFunctionResponse() != nil:
				parts = append(parts, "response "+p.GetFunctionResponse().GetName())
			default:
				parts = append(parts, p.GetText())
			}
		}
		out = append(out, ev.GetAuthor()+": "+strings.Join(parts, " | "))
	}
	return out
}

// TestExampleWithOfflineModel loads the example and serves it with
// the offline model: "transfer to X" hands the conversation over in the
// same run; billing keeps the next turn, tech (which disallows transfer to
// its parent) gives it back to triage.
func TestExampleWithOfflineModel(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(example))
	if err != nil {
		t.Fatal(err)
	}
	apps, err := Build(t.Context(), cfg, func(_ context.Context, name string) (model.Model, error) {
		return offline.New(offline.Config{Name: name}), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, st := newRegistry(t, apps)
	r, ok := reg.Lookup("support")
	if !ok {
		t.Fatal("app support not registered")
	}
	tests := []struct {
		session string
		turns   []string
		want    [][]string
	}{
		{
			session: "to-billing",
			turns:   []string{"transfer to billing please", "what do I owe?"},
			want: [][]string{
				{"triage: call transfer_to_agent", "triage: response transfer_to_agent", "billing: offline model: you said: transfer to billing please"},
				{"billing: offline model: you said: what do I owe?"},
			},
		},
		{
			session: "to-tech",
			turns:   []string{"my tech is broken, transfer to tech", "thanks"},
			want: [][]string{
				{"triage: call transfer_to_agent", "triage: response transfer_to_agent", "tech: offline model: you said: my tech is broken, transfer to tech"},
				{"triage: offline model: you said: thanks"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.session, func(t *testing.T) {
			if _, err := st.CreateSession(t.Context(), store.SessionKey{App: "support", User: "u", Session: tc.session}, nil); err != nil {
				t.Fatal(err)
			}
			for i, msg := range tc.turns {
				if got := runText(t, r, "u", tc.session, msg); !slices.Equal(got, tc.want[i]) {
					t.Fatalf("turn %d: got\n%q\nwant\n%q", i, got, tc.want[i])
				}
			}
		})
	}
}

// recordingModel wraps a model and records the requests it gets.
type recordingModel struct {
	model.Model
	mu   sync.Mutex
	reqs []*model.Request
}

func (m *recordingModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return m.Model.Generate(ctx, req, stream)
}

func (m *recordingModel) requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// TestBuildToolsAndIncludeContents checks that the tools named in the file
// are declared to the model (transfer_to_agent, listed or not, only where
// there is a target) and that include_contents NONE sends only the current
// turn.
func TestBuildToolsAndIncludeContents(t *testing.T) {
	cfg, err := Parse("apps.yaml", []byte(`
apps:
  - name: looper
    root_agent:
      name: loop
      loop: {max_iterations: 3}
      sub_agents:
        - name: worker
          llm:
            model: m
            tools: [exit_loop, load_artifacts, transfer_to_agent]
            include_contents: INCLUDE_CONTENTS_NONE
`))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingModel{Model: offline.New(offline.Config{Name: "m"})}
	apps, err := Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return rec, nil })
	if err != nil {
		t.Fatal(err)
	}
	reg, st := newRegistry(t, apps)
	r, _ := reg.Lookup("looper")
	if _, err := st.CreateSession(t.Context(), store.SessionKey{App: "looper", User: "u", Session: "s"}, nil); err != nil {
		t.Fatal(err)
	}
	runText(t, r, "u", "s", "first")
	runText(t, r, "u", "s", "second")
	reqs := rec.requests()
	if len(reqs) != 6 {
		t.Fatalf("%d model calls, want 3 per run", len(reqs))
	}
	last := reqs[len(reqs)-1]
	var names []string
	for _, d := range last.Tools {
		names = append(names, d.Name)
	}
	// The worker's parent is a loop, not an LLM agent: no transfer target.
	if want := []string{"exit_loop", "load_artifacts"}; !slices.Equal(names, want) {
		t.Errorf("declared tools %q, want %q", names, want)
	}
	// The current turn starts at the second run's message: the worker sees
	// its own answers of this run's earlier passes, nothing of the first.
	if len(last.Contents) != 3 || last.Contents[0].GetParts()[0].GetText() != "second" {
		t.Errorf("contents %v, want the second message and two answers to it", last.Contents)
	}
	for _, c := range last.Contents {
		if strings.Contains(c.GetParts()[0].GetText(), "first") {
			t.Errorf("contents include the first run: %v", c)
		}
	}
}

func TestBuildRejectsUnknownTool(t *testing.T) {
	cfg := &agentrunnerv1.AppsConfig{Apps: []*agentrunnerv1.AppConfig{{Name: "a", RootAgent: &agentrunnerv1.AgentConfig{
		Name: "root", Kind: &agentrunnerv1.AgentConfig_Llm{Llm: &agentrunnerv1.LlmAgentConfig{Model: "m", Tools: []string{"exit_loop", "rm_rf"}}},
	}}}}
	_, err := Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return namedModel("m"), nil })
	if err == nil || !strings.Contains(err.Error(), "apps[0].root_agent.llm.tools[1]") || !strings.Contains(err.Error(), `"rm_rf"`) {
		t.Fatalf("error = %v", err)
	}
}

func mustRegistry(t *testing.T, cfg Config) *Registry {
	t.Helper()
	reg, err := NewRegistry(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
