package apps

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
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
	var errs errList
	models := validateModels(cfg.GetModels(), o, &errs)
	currency := validateCurrencies(cfg.GetModels(), &errs)
	apps := map[string]int{}
	for i, app := range cfg.GetApps() {
		path := fmt.Sprintf("apps[%d]", i)
		switch j, dup := apps[app.GetName()]; {
		case app.GetName() == "":
			errs.add(&Error{Path: path + ".name", Msg: "app name is required"})
		case dup:
			errs.add(&Error{Path: path + ".name", Msg: fmt.Sprintf("duplicate app name %q (also apps[%d])", app.GetName(), j)})
		default:
			apps[app.GetName()] = i
		}
		validateApp(app, path, models, o, &errs)
		validateBudgets(app, path, currency, &errs)
		validateWebhook(app.GetWebhook(), path+".webhook", o, &errs)
		validateSchedules(app, path, &errs)
	}
	return errs.err()
}

// validateApp checks one app, adding its problems to errs.
func validateApp(app *agentrunnerv1.AppConfig, path string, models map[string]bool, o options, errs *errList) {
	appTools := validateFunctionTools(app.GetFunctionTools(), path+".function_tools", nil, errs)
	servers := validateMCPServers(app.GetMcpServers(), path+".mcp_servers", errs)
	errs.add(validateCompaction(app, path, models, o))
	errs.add(validateContextCache(app, path))
	if app.GetRootAgent() == nil {
		errs.add(&Error{Path: path + ".root_agent", Msg: "root_agent is required"})
		return
	}
	validateAgent(app.GetRootAgent(), path+".root_agent", &treeScope{seen: map[string]string{}, appTools: appTools, mcp: servers, models: models, opts: o}, errs)
}

// treeScope is what the agents of one app's tree are checked against.
type treeScope struct {
	seen     map[string]string // agent name -> path
	appTools map[string]bool   // the app's function tools
	mcp      map[string]bool   // the app's MCP servers
	models   map[string]bool   // the file's declared models
	opts     options
}

// validateMCPServers checks MCP server entries: a unique name, exactly
// one of command and url, and names of environment variables where those
// go. It returns the names.
func validateMCPServers(servers []*agentrunnerv1.McpServerConfig, path string, errs *errList) map[string]bool {
	names := map[string]bool{}
	for i, s := range servers {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case s.GetName() == "":
			errs.add(&Error{Path: p + ".name", Msg: "MCP server name is required"})
		case names[s.GetName()]:
			errs.add(&Error{Path: p + ".name", Msg: fmt.Sprintf("duplicate MCP server name %q", s.GetName())})
		case (s.GetCommand() == "") == (s.GetUrl() == ""):
			errs.add(&Error{Path: p, Msg: "give exactly one of command (stdio) and url (streamable HTTP)"})
		}
		for _, err := range checkMCPSecrets(s.GetHeaderEnv(), s.GetEnv(), p) {
			errs.add(err)
		}
		names[s.GetName()] = true
	}
	return names
}

// validateFunctionTools checks function tool declarations: a name, unique
// and not a built-in's nor one of taken, and schemas that compile. It
// returns the names.
func validateFunctionTools(decls []*agentrunnerv1.FunctionToolConfig, path string, taken map[string]bool, errs *errList) map[string]bool {
	names := map[string]bool{}
	for i, ft := range decls {
		p := fmt.Sprintf("%s[%d]", path, i)
		switch name := ft.GetName(); {
		case name == "":
			errs.add(&Error{Path: p + ".name", Msg: "function tool name is required"})
			continue
		case slices.Contains(BuiltinTools, name):
			errs.add(&Error{Path: p + ".name", Msg: fmt.Sprintf("%q is the name of a built-in tool", name)})
		case names[name] || taken[name]:
			errs.add(&Error{Path: p + ".name", Msg: fmt.Sprintf("duplicate tool name %q", name)})
		}
		names[ft.GetName()] = true
		if ft.GetParameters() == nil {
			errs.add(&Error{Path: p + ".parameters", Msg: "parameters (a JSON Schema of an object) is required"})
			continue
		}
		if _, err := clientFunction(ft); err != nil {
			field := ".parameters"
			if strings.Contains(err.Error(), ": response: ") {
				field = ".response"
			}
			errs.add(&Error{Path: p + field, Msg: err.Error()})
		}
	}
	return names
}

// validateAgent checks an agent and its sub-agents, adding their problems
// to errs.
func validateAgent(a *agentrunnerv1.AgentConfig, path string, scope *treeScope, errs *errList) {
	seen := scope.seen
	switch name := a.GetName(); {
	case name == "":
		errs.add(&Error{Path: path + ".name", Msg: "agent name is required"})
	case name == "user":
		errs.add(&Error{Path: path + ".name", Msg: `"user" is reserved for the user's own events`})
	case name == agent.SummarizerName:
		errs.add(&Error{Path: path + ".name", Msg: fmt.Sprintf("%q is reserved for the compaction summarizer's usage (usage_by_agent)", name)})
	case seen[name] != "":
		errs.add(&Error{Path: path + ".name", Msg: fmt.Sprintf("duplicate agent name %q (also at %s)", name, seen[name])})
	default:
		seen[a.GetName()] = path
	}
	switch k := a.GetKind().(type) {
	case nil:
		errs.add(&Error{Path: path, Msg: "agent needs exactly one of llm, sequential, parallel, loop, remote_a2a"})
	case *agentrunnerv1.AgentConfig_RemoteA2A:
		validateRemote(a, path, errs)
	case *agentrunnerv1.AgentConfig_Llm:
		validateLLM(k.Llm, path+".llm", scope, errs)
	case *agentrunnerv1.AgentConfig_Loop:
		if len(a.GetSubAgents()) == 0 {
			errs.add(&Error{Path: path + ".sub_agents", Msg: "a loop agent needs at least one sub-agent"})
		}
		if k.Loop.GetMaxIterations() < 0 {
			errs.add(&Error{Path: path + ".loop.max_iterations", Msg: "max_iterations must not be negative"})
		}
	case *agentrunnerv1.AgentConfig_Sequential, *agentrunnerv1.AgentConfig_Parallel:
		if len(a.GetSubAgents()) == 0 {
			errs.add(&Error{Path: path + ".sub_agents", Msg: "a workflow agent needs at least one sub-agent"})
		}
	}
	for i, sub := range a.GetSubAgents() {
		validateAgent(sub, fmt.Sprintf("%s.sub_agents[%d]", path, i), scope, errs)
	}
}

// validateLLM checks an LLM agent's settings: its model, tools, MCP
// servers and confirmations against what the file declares.
func validateLLM(llm *agentrunnerv1.LlmAgentConfig, path string, scope *treeScope, errs *errList) {
	if llm.GetModel() == "" {
		errs.add(&Error{Path: path + ".model", Msg: "model is required"})
	} else {
		errs.add(checkModelRef(llm.GetModel(), path+".model", scope.models, scope.opts))
	}
	listed := map[string]bool{}
	for i, tool := range llm.GetTools() {
		if !slices.Contains(BuiltinTools, tool) && !scope.appTools[tool] {
			known := append(slices.Clone(BuiltinTools), slices.Sorted(maps.Keys(scope.appTools))...)
			errs.add(&Error{Path: fmt.Sprintf("%s.tools[%d]", path, i), Msg: fmt.Sprintf("unknown tool %q%s, want a built-in (%v) or one of the app's function_tools", tool, didYouMean(tool, known), BuiltinTools)})
		}
		listed[tool] = true
	}
	own := validateFunctionTools(llm.GetFunctionTools(), path+".function_tools", listed, errs)
	for i, ref := range llm.GetMcp() {
		if !scope.mcp[ref.GetServer()] {
			errs.add(&Error{Path: fmt.Sprintf("%s.mcp[%d].server", path, i), Msg: fmt.Sprintf("no MCP server %q in the app's mcp_servers%s", ref.GetServer(), didYouMean(ref.GetServer(), slices.Sorted(maps.Keys(scope.mcp))))})
		}
	}
	for i, name := range llm.GetRequireConfirmation() {
		// MCP tools are known only once their servers are reached:
		// llmagent.New checks those at build.
		if !listed[name] && !own[name] && len(llm.GetMcp()) == 0 {
			known := append(slices.Sorted(maps.Keys(listed)), slices.Sorted(maps.Keys(own))...)
			errs.add(&Error{Path: fmt.Sprintf("%s.require_confirmation[%d]", path, i), Msg: fmt.Sprintf("%q is not one of the agent's tools%s", name, didYouMean(name, known))})
		}
	}
	if t := llm.Temperature; t != nil && (*t < 0 || *t > 2) {
		errs.add(&Error{Path: path + ".temperature", Msg: "temperature must be between 0 and 2"})
	}
}

// validateWebhook checks an app's webhook: a URL the server's check
// accepts (its allow list of hosts), and the name, not the value, of the
// environment variable of its secret. Whether that variable is set is
// the server's to check, as it is for a model's API key.
func validateWebhook(wh *agentrunnerv1.WebhookConfig, path string, o options, errs *errList) {
	if wh == nil {
		return
	}
	switch {
	case wh.GetUrl() == "":
		errs.add(&Error{Path: path + ".url", Msg: "url is required"})
	case o.webhookURL != nil:
		if err := o.webhookURL(wh.GetUrl()); err != nil {
			errs.add(&Error{Path: path + ".url", Msg: err.Error()})
		}
	}
	if env := wh.GetSecretEnv(); env != "" {
		if e := checkEnvName(env, path+".secret_env"); e != nil {
			errs.add(e)
		}
	}
}
