package apps

import (
	"fmt"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// BuiltinTools are the tool names an LLM agent may list in its tools.
// transfer_to_agent is also accepted, though it is added automatically
// whenever the agent has somewhere to transfer to.
var BuiltinTools = []string{"exit_loop", "load_artifacts", "load_memory", "preload_memory", "transfer_to_agent"}

// Validate checks what the schema alone cannot: required fields, unique app
// names, unique agent names within a tree, exactly one kind per agent, a
// loop with something to loop over, known tool names, and a models section
// whose entries name known providers and whose names the agents' models
// and fallbacks refer to (see UndeclaredModels). Errors are *Error values
// with the path of the problem.
func Validate(cfg *agentrunnerv1.AppsConfig, opts ...Option) error {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if len(cfg.GetApps()) == 0 {
		return &Error{Path: "apps", Msg: "no apps configured"}
	}
	models, err := validateModels(cfg.GetModels(), o)
	if err != nil {
		return err
	}
	apps := map[string]int{}
	for i, app := range cfg.GetApps() {
		path := fmt.Sprintf("apps[%d]", i)
		if app.GetName() == "" {
			return &Error{Path: path + ".name", Msg: "app name is required"}
		}
		if j, dup := apps[app.GetName()]; dup {
			return &Error{Path: path + ".name", Msg: fmt.Sprintf("duplicate app name %q (also apps[%d])", app.GetName(), j)}
		}
		apps[app.GetName()] = i
		if app.GetRootAgent() == nil {
			return &Error{Path: path + ".root_agent", Msg: "root_agent is required"}
		}
		appTools, err := validateFunctionTools(app.GetFunctionTools(), path+".function_tools", nil)
		if err != nil {
			return err
		}
		servers, err := validateMCPServers(app.GetMcpServers(), path+".mcp_servers")
		if err != nil {
			return err
		}
		if err := validateCompaction(app, path, models, o); err != nil {
			return err
		}
		if err := validateContextCache(app, path); err != nil {
			return err
		}
		if err := validateAgent(app.GetRootAgent(), path+".root_agent", &treeScope{seen: map[string]string{}, appTools: appTools, mcp: servers, models: models, opts: o}); err != nil {
			return err
		}
	}
	return nil
}

// treeScope is what the agents of one app's tree are checked against.
type treeScope struct {
	seen     map[string]string // agent name -> path
	appTools map[string]bool   // the app's function tools
	mcp      map[string]bool   // the app's MCP servers
	models   map[string]bool   // the file's declared models
	opts     options
}

// validateMCPServers checks MCP server entries: a unique name and exactly
// one of command and url. It returns the names.
func validateMCPServers(servers []*agentrunnerv1.McpServerConfig, path string) (map[string]bool, error) {
	names := map[string]bool{}
	for i, s := range servers {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case s.GetName() == "":
			return nil, &Error{Path: p + ".name", Msg: "MCP server name is required"}
		case names[s.GetName()]:
			return nil, &Error{Path: p + ".name", Msg: fmt.Sprintf("duplicate MCP server name %q", s.GetName())}
		case (s.GetCommand() == "") == (s.GetUrl() == ""):
			return nil, &Error{Path: p, Msg: "give exactly one of command (stdio) and url (streamable HTTP)"}
		}
		names[s.GetName()] = true
	}
	return names, nil
}

// validateFunctionTools checks function tool declarations: a name, unique
// and not a built-in's nor one of taken, and schemas that compile. It
// returns the names.
func validateFunctionTools(decls []*agentrunnerv1.FunctionToolConfig, path string, taken map[string]bool) (map[string]bool, error) {
	names := map[string]bool{}
	for i, ft := range decls {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch name := ft.GetName(); {
		case name == "":
			return nil, &Error{Path: p + ".name", Msg: "function tool name is required"}
		case slices.Contains(BuiltinTools, name):
			return nil, &Error{Path: p + ".name", Msg: fmt.Sprintf("%q is the name of a built-in tool", name)}
		case names[name] || taken[name]:
			return nil, &Error{Path: p + ".name", Msg: fmt.Sprintf("duplicate tool name %q", name)}
		}
		names[ft.GetName()] = true
		if ft.GetParameters() == nil {
			return nil, &Error{Path: p + ".parameters", Msg: "parameters (a JSON Schema of an object) is required"}
		}
		if _, err := clientFunction(ft); err != nil {
			field := ".parameters"
			if strings.Contains(err.Error(), ": response: ") {
				field = ".response"
			}
			return nil, &Error{Path: p + field, Msg: err.Error()}
		}
	}
	return names, nil
}

func validateAgent(a *agentrunnerv1.AgentConfig, path string, scope *treeScope) error {
	seen := scope.seen
	switch name := a.GetName(); {
	case name == "":
		return &Error{Path: path + ".name", Msg: "agent name is required"}
	case name == "user":
		return &Error{Path: path + ".name", Msg: `"user" is reserved for the user's own events`}
	case seen[name] != "":
		return &Error{Path: path + ".name", Msg: fmt.Sprintf("duplicate agent name %q (also at %s)", name, seen[name])}
	}
	seen[a.GetName()] = path
	switch k := a.GetKind().(type) {
	case nil:
		return &Error{Path: path, Msg: "agent needs exactly one of llm, sequential, parallel, loop"}
	case *agentrunnerv1.AgentConfig_Llm:
		if k.Llm.GetModel() == "" {
			return &Error{Path: path + ".llm.model", Msg: "model is required"}
		}
		if err := checkModelRef(k.Llm.GetModel(), path+".llm.model", scope.models, scope.opts); err != nil {
			return err
		}
		listed := map[string]bool{}
		for i, tool := range k.Llm.GetTools() {
			if !slices.Contains(BuiltinTools, tool) && !scope.appTools[tool] {
				return &Error{Path: fmt.Sprintf("%s.llm.tools[%d]", path, i), Msg: fmt.Sprintf("unknown tool %q, want a built-in (%v) or one of the app's function_tools", tool, BuiltinTools)}
			}
			listed[tool] = true
		}
		own, err := validateFunctionTools(k.Llm.GetFunctionTools(), path+".llm.function_tools", listed)
		if err != nil {
			return err
		}
		for i, ref := range k.Llm.GetMcp() {
			if !scope.mcp[ref.GetServer()] {
				return &Error{Path: fmt.Sprintf("%s.llm.mcp[%d].server", path, i), Msg: fmt.Sprintf("no MCP server %q in the app's mcp_servers", ref.GetServer())}
			}
		}
		for i, name := range k.Llm.GetRequireConfirmation() {
			// MCP tools are known only once their servers are reached:
			// llmagent.New checks those at build.
			if !listed[name] && !own[name] && len(k.Llm.GetMcp()) == 0 {
				return &Error{Path: fmt.Sprintf("%s.llm.require_confirmation[%d]", path, i), Msg: fmt.Sprintf("%q is not one of the agent's tools", name)}
			}
		}
		if t := k.Llm.Temperature; t != nil && (*t < 0 || *t > 2) {
			return &Error{Path: path + ".llm.temperature", Msg: "temperature must be between 0 and 2"}
		}
	case *agentrunnerv1.AgentConfig_Loop:
		if len(a.GetSubAgents()) == 0 {
			return &Error{Path: path + ".sub_agents", Msg: "a loop agent needs at least one sub-agent"}
		}
		if k.Loop.GetMaxIterations() < 0 {
			return &Error{Path: path + ".loop.max_iterations", Msg: "max_iterations must not be negative"}
		}
	case *agentrunnerv1.AgentConfig_Sequential, *agentrunnerv1.AgentConfig_Parallel:
		if len(a.GetSubAgents()) == 0 {
			return &Error{Path: path + ".sub_agents", Msg: "a workflow agent needs at least one sub-agent"}
		}
	}
	for i, sub := range a.GetSubAgents() {
		if err := validateAgent(sub, fmt.Sprintf("%s.sub_agents[%d]", path, i), scope); err != nil {
			return err
		}
	}
	return nil
}
