package apps

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"github.com/agentrunner/agentrunner/runner/tool/mcptool"
)

// ModelFactory returns the model an LLM agent calls, by the name the apps
// file gives. It is called once per distinct name.
type ModelFactory func(ctx context.Context, name string) (model.Model, error)

// Build turns a validated config into apps ready to register, as a
// Builder without a logger does.
func Build(ctx context.Context, cfg *agentrunnerv1.AppsConfig, models ModelFactory) ([]App, error) {
	return Builder{Models: models}.Build(ctx, cfg)
}

// Builder turns validated configs into apps.
type Builder struct {
	// Models creates the models, one per distinct name, shared by the
	// agents that name it. Required.
	Models ModelFactory
	// Logger receives warnings (an optional MCP server left out); nil
	// discards them.
	Logger *slog.Logger
}

// Build connects each app's MCP servers and builds its agent tree. On an
// error the connections already made are closed. Each App's Close closes
// its connections; the registry calls it.
func (bl Builder) Build(ctx context.Context, cfg *agentrunnerv1.AppsConfig) (apps []App, err error) {
	log := bl.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := builder{models: bl.Models, cache: map[string]model.Model{}, log: log}
	b.currency = validateCurrencies(cfg.GetModels(), &errList{}) // validated: one currency
	defer func() {
		if err != nil {
			for _, a := range apps {
				_ = a.Close()
			}
		}
	}()
	for i, app := range cfg.GetApps() {
		a, err := b.app(ctx, app, fmt.Sprintf("apps[%d]", i))
		if err != nil {
			return apps, err
		}
		a.Version = Version(cfg, app)
		apps = append(apps, a)
	}
	return apps, nil
}

// app builds one app: its MCP connections, then its tree.
func (b *builder) app(ctx context.Context, app *agentrunnerv1.AppConfig, path string) (App, error) {
	b.appTools = map[string]*agentrunnerv1.FunctionToolConfig{}
	for _, ft := range app.GetFunctionTools() {
		b.appTools[ft.GetName()] = ft
	}
	servers, err := b.connectMCP(ctx, app.GetMcpServers(), path+".mcp_servers")
	closeAll := func() error {
		var errs []error
		for _, s := range servers {
			errs = append(errs, s.Close())
		}
		return errors.Join(errs...)
	}
	if err != nil {
		_ = closeAll()
		return App{}, err
	}
	b.mcp = servers
	b.missing = nil
	b.appName, b.contextCache = app.GetName(), contextCache(app.GetContextCache())
	root, err := b.agent(ctx, app.GetRootAgent(), path+".root_agent")
	if err != nil {
		_ = closeAll()
		return App{}, err
	}
	compaction, err := b.compaction(ctx, app, path)
	if err != nil {
		_ = closeAll()
		return App{}, err
	}
	a := App{Name: app.GetName(), Description: app.GetDescription(), Root: root, Compaction: compaction,
		AddSessionsToMemory: app.GetMemory().GetAddSessions(), Budgets: budgets(app.GetBudgets(), b.currency), closer: closeAll,
		Schedules: schedulesOf(app)}
	if wh := app.GetWebhook(); wh.GetUrl() != "" {
		a.Webhook, a.WebhookSecretEnv = &agentrunnerv1.Webhook{Url: wh.GetUrl()}, wh.GetSecretEnv()
	}
	if len(b.missing) > 0 {
		a.Unavailable = strings.Join(b.missing, "; ")
		b.log.Warn("app unavailable: a model it uses has no credentials; its runs fail with FAILED_PRECONDITION until the server restarts with them", "app", a.Name, "reason", a.Unavailable)
	}
	return a, nil
}

// compaction builds the app's compaction settings. The summarizer is the
// configured model or that of the app's first LLM agent; an app without
// either compacts nothing.
func (b *builder) compaction(ctx context.Context, app *agentrunnerv1.AppConfig, path string) (runner.Compaction, error) {
	cc := app.GetCompaction()
	c := runner.Compaction{
		Instruction:    cc.GetInstruction(),
		Interval:       int(cc.GetInterval()),
		Overlap:        int(cc.GetOverlap()),
		TokenThreshold: int(cc.GetTokenThreshold()),
		MaxEvents:      int(cc.GetMaxEvents()),
	}
	name, field := cc.GetModel(), path+".compaction.model"
	if name == "" {
		name, field = firstModel(app.GetRootAgent()), path+".root_agent"
	}
	if name == "" {
		return c, nil
	}
	m, err := b.model(ctx, name, field)
	if err != nil {
		return c, err
	}
	c.Summarizer = m
	return c, nil
}

// firstModel is the model of the first LLM agent of the tree, depth
// first, or "".
func firstModel(a *agentrunnerv1.AgentConfig) string {
	if m := a.GetLlm().GetModel(); m != "" {
		return m
	}
	for _, sub := range a.GetSubAgents() {
		if m := firstModel(sub); m != "" {
			return m
		}
	}
	return ""
}

type builder struct {
	models ModelFactory
	cache  map[string]model.Model
	log    *slog.Logger
	// appTools are the function tools of the app being built, by name;
	// mcp its connected MCP servers (an optional one that is down is not
	// there).
	appTools map[string]*agentrunnerv1.FunctionToolConfig
	mcp      map[string]*mcptool.Server
	// missing are the credentials the app being built lacks, one reason
	// per model.
	missing []string
	// appName is the name of the app being built, contextCache its
	// context cache settings (nil for none).
	appName      string
	contextCache *model.CacheConfig
	// currency is the file's priced models' currency ("" when none is
	// priced).
	currency string
}

// model returns the model named name, made once per Build. A model
// without credentials does not fail the build: the app is served as
// unavailable with the reason, and the agent holds a stand-in that fails
// every call the same way.
func (b *builder) model(ctx context.Context, name, path string) (model.Model, error) {
	m, ok := b.cache[name]
	if !ok {
		var err error
		m, err = b.models(ctx, name)
		var ce *model.CredentialsError
		switch {
		case errors.As(err, &ce):
			m = noCredentials{name: name, err: err}
		case err != nil:
			return nil, &Error{Path: path, Msg: fmt.Sprintf("model %q: %v", name, err)}
		}
		b.cache[name] = m
	}
	if nc, ok := m.(noCredentials); ok && !slices.Contains(b.missing, nc.err.Error()) {
		b.missing = append(b.missing, nc.err.Error())
	}
	return m, nil
}

// noCredentials stands in for a model whose credentials are missing. The
// runner refuses runs of its app before they start; a run queued before a
// restart without the credentials still ends in band, with what to set.
type noCredentials struct {
	name string
	err  error
}

func (n noCredentials) Name() string { return n.name }

func (n noCredentials) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		yield(nil, &model.Error{Code: model.CodePermissionDenied, Err: n.err})
	}
}

// checkCaching says, once per agent at start, when the app asks for
// context caching and the agent's model cannot do it: its requests are
// then sent whole, which is all that changes.
func (b *builder) checkCaching(agentName string, m model.Model) {
	if b.contextCache == nil {
		return
	}
	if c, ok := m.(model.ContextCacher); ok && c.CachesContext() {
		return
	}
	b.log.Info("context caching is not supported by this agent's model; its requests are sent whole",
		"app", b.appName, "agent", agentName, "model", m.Name())
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
		b.checkCaching(a.GetName(), m)
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
			ContextCache:             b.contextCache,
		})
	case *agentrunnerv1.AgentConfig_Sequential:
		ag, err = workflow.NewSequential(workflow.Config{Name: a.GetName(), Description: a.GetDescription(), SubAgents: subs})
	case *agentrunnerv1.AgentConfig_Parallel:
		ag, err = workflow.NewParallel(workflow.Config{Name: a.GetName(), Description: a.GetDescription(), SubAgents: subs})
	case *agentrunnerv1.AgentConfig_Loop:
		ag, err = workflow.NewLoop(workflow.LoopConfig{Name: a.GetName(), Description: a.GetDescription(), SubAgents: subs, MaxIterations: int(k.Loop.GetMaxIterations())})
	case *agentrunnerv1.AgentConfig_RemoteA2A:
		// Its errors are *Error values already, naming the field.
		return b.remoteAgent(ctx, a, path)
	default:
		return nil, &Error{Path: path, Msg: "agent needs exactly one of llm, sequential, parallel, loop, remote_a2a"}
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
	for i, ref := range llm.GetMcp() {
		server, ok := b.mcp[ref.GetServer()]
		if !ok {
			continue // optional, and down at start: its tools are left out
		}
		ts, err := server.Tools(ref.GetTools())
		if err != nil {
			return nil, &Error{Path: fmt.Sprintf("%s.mcp[%d].tools", path, i), Msg: err.Error()}
		}
		tools = append(tools, ts...)
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

// connectMCP connects the app's MCP servers. One that cannot be reached
// fails the build, unless it is optional: then it is left out, with a
// warning.
func (b *builder) connectMCP(ctx context.Context, cfgs []*agentrunnerv1.McpServerConfig, path string) (map[string]*mcptool.Server, error) {
	servers := map[string]*mcptool.Server{}
	for i, c := range cfgs {
		cfg, err := mcpConfig(c)
		if err != nil {
			return servers, &Error{Path: fmt.Sprintf("%s[%d]", path, i), Msg: err.Error()}
		}
		s, err := mcptool.Connect(ctx, cfg, b.log)
		if err != nil && c.GetOptional() {
			b.log.WarnContext(ctx, "optional MCP server left out", "server", c.GetName(), "err", err)
			continue
		}
		if err != nil {
			return servers, &Error{Path: fmt.Sprintf("%s[%d]", path, i), Msg: err.Error()}
		}
		servers[c.GetName()] = s
	}
	return servers, nil
}

// mcpConfig reads a server's configuration, its headers from the
// environment.
func mcpConfig(c *agentrunnerv1.McpServerConfig) (mcptool.Config, error) {
	cfg := mcptool.Config{Name: c.GetName(), Command: c.GetCommand(), Args: c.GetArgs(), Env: c.GetEnv(), URL: c.GetUrl()}
	if c.GetTimeout() != "" {
		d, err := time.ParseDuration(c.GetTimeout())
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("timeout %q: want a positive Go duration such as 30s", c.GetTimeout())
		}
		cfg.Timeout = d
	}
	for _, h := range c.GetHeaderEnv() {
		name, env, ok := strings.Cut(h, "=")
		if !ok || name == "" || env == "" {
			// Not %q of h: it may be a header's value pasted in place of its
			// variable's name.
			return cfg, errors.New("header_env: want Header-Name=ENV_VAR (the value is not shown, as it may be a secret)")
		}
		v, set := os.LookupEnv(env)
		if !set {
			return cfg, fmt.Errorf("header %s: environment variable %s is not set", name, env)
		}
		if cfg.Headers == nil {
			cfg.Headers = map[string]string{}
		}
		cfg.Headers[name] = v
	}
	return cfg, nil
}
