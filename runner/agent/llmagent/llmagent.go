// Package llmagent is the agent a language model drives: it builds each
// model request from the session (instruction, history, tools), calls the
// model, runs the tools the model calls, and transfers to other agents.
// Model and tool steps go through the runner's plugin hooks first, then
// the agent's own callbacks.
//
// Imports: agent, tool, tool/builtin, model and the generated messages. It
// must not import the runner, workflow, plugin (it finds the hooks through
// agent.HooksOf), model providers or gRPC (runner/deps_test.go checks).
package llmagent

import (
	"fmt"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/protobuf/types/known/structpb"
)

// BeforeModelCallback runs before each model call. Returning a response
// skips the call and uses it instead; returning an error delivers it and
// ends the agent's turn. The request is the callback's to change.
type BeforeModelCallback func(agent.CallbackContext, *model.Request) (*model.Response, error)

// AfterModelCallback runs after each complete model response. Returning a
// response replaces it; returning an error delivers it and ends the agent's
// turn.
type AfterModelCallback func(agent.CallbackContext, *model.Response) (*model.Response, error)

// BeforeToolCallback runs before each tool call. Returning a result skips
// the tool and uses it instead; returning an error skips the tool and
// reports the error to the model as the call's result. Returning (nil, nil)
// lets the tool run. args may be modified.
type BeforeToolCallback func(ctx tool.Context, t tool.Tool, args map[string]any) (map[string]any, error)

// AfterToolCallback runs after each tool call (or the before-callback that
// replaced it) with its result or error. Returning a result replaces the
// result, returning an error replaces it with that error; (nil, nil) keeps
// what the tool returned.
type AfterToolCallback func(ctx tool.Context, t tool.Tool, args, result map[string]any, err error) (map[string]any, error)

// Config configures an agent driven by a language model.
type Config struct {
	Name        string
	Description string
	// Model is called for every step; required.
	Model model.Model
	// Instruction is the system instruction. {key} is replaced by the value
	// of state key (strings as they are, other values as JSON), {key?} by
	// the empty string when the key is missing; a missing {key} is an
	// error. Braces around anything that is not a state key name are kept.
	Instruction string
	// GenerateConfig is passed to the model as it is.
	GenerateConfig *model.GenerateConfig
	// ContextCache, when set, goes on every request (model.Request.Cache)
	// for a model that caches context to act on.
	ContextCache *model.CacheConfig
	// SubAgents are the agents this one may transfer to.
	SubAgents []agent.Agent
	// DisallowTransferToParent keeps the conversation from going back to
	// the parent; it also keeps the runner from resuming this agent on the
	// next turn.
	DisallowTransferToParent bool
	// DisallowTransferToPeers keeps the agent from transferring to its
	// siblings.
	DisallowTransferToPeers bool
	// OutputKey, when set, stores the text of the agent's final answer (an
	// answer without function calls) in state under this key.
	OutputKey string
	// IncludeContents selects the history sent to the model: the whole
	// conversation visible in the agent's branch (UNSPECIFIED, DEFAULT), or
	// only the current turn (NONE): from the latest message of the user or
	// of another agent on, with this agent's tool calls since.
	IncludeContents agentrunnerv1.IncludeContents
	// Tools the model may call, with unique names. transfer_to_agent is
	// added automatically when the agent has somewhere to transfer to (its
	// sub-agents; its parent and peers when the parent is an LLM agent and
	// the flags above allow), and cannot be listed here.
	Tools                []tool.Tool
	BeforeAgentCallbacks []agent.BeforeAgentCallback
	AfterAgentCallbacks  []agent.AfterAgentCallback
	BeforeModelCallbacks []BeforeModelCallback
	AfterModelCallbacks  []AfterModelCallback
	// BeforeToolCallbacks run in order before each tool call, after the
	// plugins' before_tool hooks; the first that returns a result or an
	// error replaces the call.
	BeforeToolCallbacks []BeforeToolCallback
	// AfterToolCallbacks run in order after each tool call, after the
	// plugins' after_tool hooks; the first that returns a result or an
	// error replaces the call's outcome.
	AfterToolCallbacks []AfterToolCallback
	// RequireConfirmation names tools (of Tools) whose calls the caller
	// must confirm before they run. The agent then calls the reserved
	// request_confirmation function with the original call as arguments
	// (call_id, name, args), the call waits (long-running) and the turn
	// ends; the caller answers with a function response {"confirmed":
	// true} to run the call or {"confirmed": false} to reject it, and the
	// model goes on with the call's result or the rejection.
	RequireConfirmation []string
}

// llmAgent holds what only LLM agents have.
type llmAgent struct {
	name            string
	model           model.Model
	instruction     string
	genConfig       *model.GenerateConfig
	cache           *model.CacheConfig
	outputKey       string
	includeContents agentrunnerv1.IncludeContents
	tools           []tool.Tool
	processors      bool // some tool is a tool.RequestProcessor
	beforeModel     []BeforeModelCallback
	afterModel      []AfterModelCallback
	beforeTool      []BeforeToolCallback
	afterTool       []AfterToolCallback
	confirm         map[string]bool // tools whose calls need confirmation
	memo            historyMemo     // the histories of its latest calls
}

// New returns an agent that answers with a language model.
//
// Each step builds a request from the session history visible in the
// agent's branch (see Config.IncludeContents): the user's and this agent's
// turns as they are, other agents' turns rephrased as context ("For
// context: [name] said: ..."), each function call followed by its
// responses. It calls the model, streaming partial events when the run
// asks for SSE, and yields the answer as one complete event. When the
// answer calls functions, the agent runs the tools (concurrently when
// there are several), yields their responses in one event, and takes
// another step. The turn ends with an answer without calls, a transfer, a
// long-running call, or tools that skip summarization. Every model call
// counts against the run's max_llm_calls.
//
// A model error is delivered as an *agent.AgentError naming the model and
// ends the agent's turn; an answer the model refused or cut short is an
// event with error_code and error_message. A panic in the model's stream,
// a tool or a callback is recovered the same way.
func New(cfg Config) (agent.Agent, error) {
	if err := checkConfig(cfg); err != nil {
		return nil, err
	}
	l := &llmAgent{
		name:            cfg.Name,
		model:           cfg.Model,
		instruction:     cfg.Instruction,
		genConfig:       cfg.GenerateConfig,
		cache:           cfg.ContextCache,
		outputKey:       cfg.OutputKey,
		includeContents: cfg.IncludeContents,
		tools:           slices.Clone(cfg.Tools),
		beforeModel:     cfg.BeforeModelCallbacks,
		afterModel:      cfg.AfterModelCallbacks,
		beforeTool:      cfg.BeforeToolCallbacks,
		afterTool:       cfg.AfterToolCallbacks,
	}
	for _, t := range l.tools {
		if _, ok := t.(tool.RequestProcessor); ok {
			l.processors = true
		}
	}
	if len(cfg.RequireConfirmation) > 0 {
		l.confirm = map[string]bool{}
		for _, name := range cfg.RequireConfirmation {
			l.confirm[name] = true
		}
	}
	return agent.New(agent.Config{
		Name:                 cfg.Name,
		Description:          cfg.Description,
		SubAgents:            cfg.SubAgents,
		Run:                  l.run,
		BeforeAgentCallbacks: cfg.BeforeAgentCallbacks,
		AfterAgentCallbacks:  cfg.AfterAgentCallbacks,
		Kind:                 agentrunnerv1.AgentKind_AGENT_KIND_LLM,
		Transfers: &agent.TransferPolicy{
			DisallowTransferToParent: cfg.DisallowTransferToParent,
			DisallowTransferToPeers:  cfg.DisallowTransferToPeers,
		},
		Describe: l.describe,
	})
}

func checkConfig(cfg Config) error {
	if cfg.Model == nil {
		return fmt.Errorf("llm agent %q: Model is required", cfg.Name)
	}
	if _, ok := agentrunnerv1.IncludeContents_name[int32(cfg.IncludeContents)]; !ok {
		return fmt.Errorf("llm agent %q: unknown IncludeContents %d", cfg.Name, cfg.IncludeContents)
	}
	seen := map[string]bool{}
	for i, t := range cfg.Tools {
		switch {
		case t == nil:
			return fmt.Errorf("llm agent %q: tool %d is nil", cfg.Name, i)
		case t.Name() == "":
			return fmt.Errorf("llm agent %q: tool %d has no name", cfg.Name, i)
		case t.Name() == builtin.TransferToAgentName:
			return fmt.Errorf("llm agent %q: tool name %q is reserved: the tool is added automatically when the agent has transfer targets", cfg.Name, t.Name())
		case t.Name() == builtin.RequestConfirmationName:
			return fmt.Errorf("llm agent %q: tool name %q is reserved for confirmation requests", cfg.Name, t.Name())
		case seen[t.Name()]:
			return fmt.Errorf("llm agent %q: duplicate tool name %q", cfg.Name, t.Name())
		}
		seen[t.Name()] = true
	}
	for _, name := range cfg.RequireConfirmation {
		if !seen[name] {
			return fmt.Errorf("llm agent %q: RequireConfirmation names %q, which is not one of its tools", cfg.Name, name)
		}
	}
	for _, t := range cfg.Tools {
		if tool.KindOf(t) == agentrunnerv1.ToolKind_TOOL_KIND_FUNCTION && slices.Contains(cfg.RequireConfirmation, t.Name()) {
			return fmt.Errorf("llm agent %q: %q is a tool the caller executes: it needs no confirmation, the caller decides when it answers", cfg.Name, t.Name())
		}
	}
	return nil
}

// describe adds the model, the tools (names and details) and the transfer
// targets to the agent's AgentInfo.
func (l *llmAgent) describe(info *agentrunnerv1.AgentInfo, t *agent.Tree) {
	info.Model = l.model.Name()
	tools := l.tools
	if self, ok := t.Find(l.name); ok {
		if targets := t.TransferTargets(self); len(targets) > 0 {
			tools = append(tools[:len(tools):len(tools)], builtin.NewTransfer(self, targets, t.Parent(self)))
			for _, target := range targets {
				info.TransferTargets = append(info.TransferTargets, target.Name())
			}
		}
	}
	for _, tl := range tools {
		info.Tools = append(info.Tools, tl.Name())
		info.ToolDetails = append(info.ToolDetails, l.toolInfo(tl))
	}
}

// toolInfo describes one tool for ListApps.
func (l *llmAgent) toolInfo(t tool.Tool) *agentrunnerv1.ToolInfo {
	ti := &agentrunnerv1.ToolInfo{Name: t.Name(), Kind: tool.KindOf(t), Description: t.Description(), RequireConfirmation: l.confirm[t.Name()]}
	if d := t.Declaration(); d != nil && d.Parameters != nil {
		// A schema structpb cannot hold (it would need non-JSON values) is
		// left out rather than failing the listing.
		if s, err := structpb.NewStruct(d.Parameters); err == nil {
			ti.Parameters = s
		} else if s, err := tool.ToStruct(d.Parameters); err == nil {
			ti.Parameters = s
		}
	}
	return ti
}
