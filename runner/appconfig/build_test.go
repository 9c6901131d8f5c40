package appconfig

import (
	"context"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/model"
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
	reg := runner.NewApps(runner.AppsConfig{Store: st})
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
