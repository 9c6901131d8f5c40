package apps

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"

	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
)

func TestApps(t *testing.T) {
	_, db := newRegistry(t, nil)
	apps := mustRegistry(t, Config{Store: db})
	helper := llm(t, llmagent.Config{Name: "helper", Description: "helps", DisallowTransferToPeers: true})
	loop := must(t)(workflow.NewLoop(workflow.LoopConfig{Name: "again", MaxIterations: 2, SubAgents: []agent.Agent{mustAgent(t, "step")}}))
	root := llm(t, llmagent.Config{Name: "root", Description: "answers", SubAgents: []agent.Agent{helper, loop}})
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
			Name: "root", Description: "answers", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LLM, Model: "offline:fake",
			Tools: []string{builtin.TransferToAgentName}, TransferTargets: []string{"helper", "again"},
			SubAgents: []*agentrunnerv1.AgentInfo{
				{Name: "helper", Description: "helps", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LLM, Model: "offline:fake", DisallowTransferToPeers: true,
					Tools: []string{builtin.TransferToAgentName}, TransferTargets: []string{"root"}},
				{Name: "again", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LOOP, MaxIterations: 2, DisallowTransferToParent: true, DisallowTransferToPeers: true,
					SubAgents: []*agentrunnerv1.AgentInfo{{Name: "step", Kind: agentrunnerv1.AgentKind_AGENT_KIND_CUSTOM, DisallowTransferToParent: true, DisallowTransferToPeers: true}}},
			},
		}},
	}
	if len(list) != len(want) {
		t.Fatalf("listed %d apps", len(list))
	}
	for i := range want {
		// Tool details are checked in TestFunctionToolsFromTheAppsFile.
		stripToolDetails(list[i].GetRootAgent())
		if !proto.Equal(list[i], want[i]) {
			t.Errorf("app %d:\n got %v\nwant %v", i, list[i], want[i])
		}
	}
}

func llm(t *testing.T, cfg llmagent.Config) agent.Agent {
	t.Helper()
	cfg.Model = offline.New(offline.Config{Name: "fake"})
	return must(t)(llmagent.New(cfg))
}

func mustAgent(t *testing.T, name string) agent.Agent {
	t.Helper()
	return must(t)(agent.New(agent.Config{Name: name, Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(func(*agentrunnerv1.Event, error) bool) {}
	}}))
}

func must(t *testing.T) func(agent.Agent, error) agent.Agent {
	return func(a agent.Agent, err error) agent.Agent {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
}

// closeCounter counts its closes.
type closeCounter struct{ n *atomic.Int32 }

func (closeCounter) Name() string { return "counter" }

func (c closeCounter) Close(context.Context) error {
	c.n.Add(1)
	return nil
}

// TestRegistryClosesSharedPluginsOnce checks that the plugins every app's
// runner shares are closed once, not once per app.
func TestRegistryClosesSharedPluginsOnce(t *testing.T) {
	var n atomic.Int32
	_, db := newRegistry(t, nil)
	reg := mustRegistry(t, Config{Store: db, Plugins: []plugin.Plugin{closeCounter{&n}}})
	for _, name := range []string{"a", "b"} {
		if _, err := reg.Register(App{Name: name, Root: mustAgent(t, "root")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Close(t.Context()); err != nil || n.Load() != 1 {
		t.Fatalf("close: %v, closed %d times", err, n.Load())
	}
	if _, err := NewRegistry(Config{Store: db, Plugins: []plugin.Plugin{closeCounter{&n}, closeCounter{&n}}}); err == nil {
		t.Fatal("two plugins of one name were accepted")
	}
}

func stripToolDetails(a *agentrunnerv1.AgentInfo) {
	a.ToolDetails = nil
	for _, c := range a.GetSubAgents() {
		stripToolDetails(c)
	}
}
