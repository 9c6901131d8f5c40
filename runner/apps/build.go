package apps

import (
	"context"
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
)

// ModelFactory returns the model an LLM agent calls, by the name the apps
// file gives. It is called once per distinct name.
type ModelFactory func(ctx context.Context, name string) (model.Model, error)

// Build turns a validated config into apps ready to register. Models are
// created through models, one per distinct name, shared by the agents that
// name it.
func Build(ctx context.Context, cfg *agentrunnerv1.AppsConfig, models ModelFactory) ([]App, error) {
	b := builder{models: models, cache: map[string]model.Model{}}
	var apps []App
	for i, app := range cfg.GetApps() {
		b.appTools = map[string]*agentrunnerv1.FunctionToolConfig{}
		for _, ft := range app.GetFunctionTools() {
			b.appTools[ft.GetName()] = ft
		}
		root, err := b.agent(ctx, app.GetRootAgent(), fmt.Sprintf("apps[%d].root_agent", i))
		if err != nil {
			return nil, err
		}
		apps = append(apps, App{Name: app.GetName(), Description: app.GetDescription(), Root: root})
	}
	return apps, nil
}

type builder struct {
	models ModelFactory
	cache  map[string]model.Model
	// appTools are the function tools of the app being built, by name.
	appTools map[string]*agentrunnerv1.FunctionToolConfig
}

func (b *builder) model(ctx context.Context, name, path string) (model.Model, error) {
	if m, ok := b.cache[name]; ok {
		return m, nil
	}
	m, err := b.models(ctx, name)
	if err != nil {
		return nil, &Error{Path: path, Msg: fmt.Sprintf("model %q: %v", name, err)}
	}
	b.cache[name] = m
	return m, nil
}

func (b *builder) agent(ctx context.Context, a *agentrunnerv1.AgentConfig, path string) (agent.Agent, error) {
	subs := make([]agent.Agent, 0, len(a.GetSubAgents()))
	for i, s := range a.GetSubAgents() {
		sub, err := b.agent(ctx, s, fmt.Sprintf("%s.sub_agents[%d]", path, i))
		if err != nil {
			return nil, err
		}
		subs = append(subs, sub)
	}
	var (
		ag  agent.Agent
		err error
	)
	switch k := a.GetKind().(type) {
	case *agentrunnerv1.AgentConfig_Llm:
		m, merr := b.model(ctx, k.Llm.GetModel(), path+".llm.model")
		if merr != nil {
			return nil, merr
		}
		var gc *model.GenerateConfig
		if k.Llm.Temperature != nil || k.Llm.GetMaxOutputTokens() > 0 {
			gc = &model.GenerateConfig{Temperature: k.Llm.Temperature, MaxOutputTokens: k.Llm.GetMaxOutputTokens()}
		}
		tools, terr := b.tools(k.Llm, path+".llm")
		if terr != nil {
			return nil, terr
		}
		ag, err = llmagent.New(llmagent.Config{
			Name:                     a.GetName(),
			Description:              a.GetDescription(),
			Model:                    m,
			Instruction:              k.Llm.GetInstruction(),
			GenerateConfig:           gc,
			SubAgents:                subs,
			DisallowTransferToParent: k.Llm.GetDisallowTransferToParent(),
			DisallowTransferToPeers:  k.Llm.GetDisallowTransferToPeers(),
			OutputKey:                k.Llm.GetOutputKey(),
			IncludeContents:          k.Llm.GetIncludeContents(),
			Tools:                    tools,
			RequireConfirmation:      k.Llm.GetRequireConfirmation(),
		})
	case *agentrunnerv1.AgentConfig_Sequential:
		ag, err = workflow.NewSequential(workflow.Config{Name: a.GetName(), Description: a.GetDescription(), SubAgents: subs})
	case *agentrunnerv1.AgentConfig_Parallel:
		ag, err = workflow.NewParallel(workflow.Config{Name: a.GetName(), Description: a.GetDescription(), SubAgents: subs})
	case *agentrunnerv1.AgentConfig_Loop:
		ag, err = workflow.NewLoop(workflow.LoopConfig{Name: a.GetName(), Description: a.GetDescription(), SubAgents: subs, MaxIterations: int(k.Loop.GetMaxIterations())})
	default:
		return nil, &Error{Path: path, Msg: "agent needs exactly one of llm, sequential, parallel, loop"}
	}
	if err != nil {
		return nil, &Error{Path: path, Msg: err.Error()}
	}
	return ag, nil
}

// tools returns a fresh instance of each tool an LLM agent lists (a
// built-in or one of the app's function tools) and of its own function
// tools; every agent gets its own. transfer_to_agent is skipped: the agent
// adds it by itself whenever it has somewhere to transfer to.
func (b *builder) tools(llm *agentrunnerv1.LlmAgentConfig, path string) ([]tool.Tool, error) {
	var tools []tool.Tool
	seen := map[string]bool{}
	for i, name := range llm.GetTools() {
		if name == builtin.TransferToAgentName || seen[name] {
			continue
		}
		seen[name] = true
		if t, ok := builtin.ByName(name); ok {
			tools = append(tools, t)
			continue
		}
		ft, ok := b.appTools[name]
		if !ok {
			return nil, &Error{Path: fmt.Sprintf("%s.tools[%d]", path, i), Msg: fmt.Sprintf("unknown tool %q", name)}
		}
		t, err := clientFunction(ft)
		if err != nil {
			return nil, &Error{Path: fmt.Sprintf("%s.tools[%d]", path, i), Msg: err.Error()}
		}
		tools = append(tools, t)
	}
	for i, ft := range llm.GetFunctionTools() {
		t, err := clientFunction(ft)
		if err != nil {
			return nil, &Error{Path: fmt.Sprintf("%s.function_tools[%d]", path, i), Msg: err.Error()}
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// clientFunction makes the tool a function tool declaration describes.
func clientFunction(ft *agentrunnerv1.FunctionToolConfig) (tool.Tool, error) {
	var response map[string]any
	if ft.GetResponse() != nil {
		response = ft.GetResponse().AsMap()
	}
	return tool.NewClientFunction(ft.GetName(), ft.GetDescription(), ft.GetParameters().AsMap(), response)
}
