package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

// BeforeModelCallback runs before each model call. Returning a response
// skips the call and uses it instead; returning an error delivers it and
// ends the agent's turn.
type BeforeModelCallback func(CallbackContext, *model.Request) (*model.Response, error)

// AfterModelCallback runs after each complete model response. Returning a
// response replaces it; returning an error delivers it and ends the agent's
// turn.
type AfterModelCallback func(CallbackContext, *model.Response) (*model.Response, error)

// LLMConfig configures an agent driven by a language model.
type LLMConfig struct {
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
	// SubAgents are the agents this one may transfer to.
	SubAgents []Agent
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
	Tools                []Tool
	BeforeAgentCallbacks []BeforeAgentCallback
	AfterAgentCallbacks  []AfterAgentCallback
	BeforeModelCallbacks []BeforeModelCallback
	AfterModelCallbacks  []AfterModelCallback
	// BeforeToolCallbacks run in order before each tool call; the first
	// that returns a result or an error replaces the call.
	BeforeToolCallbacks []BeforeToolCallback
	// AfterToolCallbacks run in order after each tool call; the first that
	// returns a result or an error replaces the call's outcome.
	AfterToolCallbacks []AfterToolCallback
}

// llmAgent holds what only LLM agents have.
type llmAgent struct {
	model                    model.Model
	instruction              string
	genConfig                *model.GenerateConfig
	disallowTransferToParent bool
	disallowTransferToPeers  bool
	outputKey                string
	includeContents          agentrunnerv1.IncludeContents
	tools                    []Tool
	beforeModel              []BeforeModelCallback
	afterModel               []AfterModelCallback
	beforeTool               []BeforeToolCallback
	afterTool                []AfterToolCallback
}

// NewLLMAgent returns an agent that answers with a language model.
//
// Each step builds a request from the session history visible in the
// agent's branch (see LLMConfig.IncludeContents): the user's and this
// agent's turns as they are, other agents' turns rephrased as context
// ("For context: [name] said: ..."), each function call followed by its
// responses. It calls the model, streaming partial events when the run asks
// for SSE, and yields the answer as one complete event. When the answer
// calls functions, the agent runs the tools (concurrently when there are
// several), yields their responses in one event, and takes another step.
// The turn ends with an answer without calls, a transfer, a long-running
// call, or tools that skip summarization. Every model call counts against
// the run's max_llm_calls.
//
// A model error is delivered as an *AgentError naming the model and ends
// the agent's turn; an answer the model refused or cut short is an event
// with error_code and error_message.
func NewLLMAgent(cfg LLMConfig) (Agent, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("llm agent %q: Model is required", cfg.Name)
	}
	if _, ok := agentrunnerv1.IncludeContents_name[int32(cfg.IncludeContents)]; !ok {
		return nil, fmt.Errorf("llm agent %q: unknown IncludeContents %d", cfg.Name, cfg.IncludeContents)
	}
	seen := map[string]bool{}
	for i, t := range cfg.Tools {
		switch {
		case t == nil:
			return nil, fmt.Errorf("llm agent %q: tool %d is nil", cfg.Name, i)
		case t.Name() == "":
			return nil, fmt.Errorf("llm agent %q: tool %d has no name", cfg.Name, i)
		case t.Name() == ToolTransferToAgent:
			return nil, fmt.Errorf("llm agent %q: tool name %q is reserved: the tool is added automatically when the agent has transfer targets", cfg.Name, t.Name())
		case seen[t.Name()]:
			return nil, fmt.Errorf("llm agent %q: duplicate tool name %q", cfg.Name, t.Name())
		}
		seen[t.Name()] = true
	}
	b := &agentBase{
		name:        cfg.Name,
		description: cfg.Description,
		kind:        agentrunnerv1.AgentKind_AGENT_KIND_LLM,
		before:      cfg.BeforeAgentCallbacks,
		after:       cfg.AfterAgentCallbacks,
		llm: &llmAgent{
			model:                    cfg.Model,
			instruction:              cfg.Instruction,
			genConfig:                cfg.GenerateConfig,
			disallowTransferToParent: cfg.DisallowTransferToParent,
			disallowTransferToPeers:  cfg.DisallowTransferToPeers,
			outputKey:                cfg.OutputKey,
			includeContents:          cfg.IncludeContents,
			tools:                    slices.Clone(cfg.Tools),
			beforeModel:              cfg.BeforeModelCallbacks,
			afterModel:               cfg.AfterModelCallbacks,
			beforeTool:               cfg.BeforeToolCallbacks,
			afterTool:                cfg.AfterToolCallbacks,
		},
	}
	if err := b.adopt(cfg.SubAgents); err != nil {
		return nil, err
	}
	b.impl = b.llm.run
	return b, nil
}

// run is the LLM agent's flow: a model call, then the tools it asks for,
// and again, until the model answers without calls or the turn otherwise
// ends.
func (l *llmAgent) run(ctx InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		ictx := ctx.internal()
		for !ctx.Ended() && ctx.Err() == nil {
			tools := l.toolsFor(ictx)
			ev, ok := l.step(ictx, tools, yield)
			if !ok {
				return
			}
			calls := functionCalls(ev.GetContent())
			if len(calls) == 0 || ev.GetErrorCode() != "" {
				return // a final answer, or one cut short: no tools to run
			}
			resp := l.callTools(ictx, tools, calls)
			if resp != nil && !yield(resp, nil) {
				return
			}
			a := resp.GetActions()
			switch {
			case a.GetTransferToAgent() != "":
				// The target takes over here, inside this agent's turn, as
				// in the reference frameworks: an LLM agent in a sequence
				// hands over to its sub-agent before the sequence goes on.
				// (The runner follows a transfer only when nobody did.)
				target, ok := ictx.inv.r.tree.find(a.GetTransferToAgent())
				if !ok {
					yield(nil, fmt.Errorf("transfer to unknown agent %q", a.GetTransferToAgent()))
					return
				}
				for ev, err := range target.Run(ctx) {
					if !yield(ev, err) {
						return
					}
				}
				return
			case len(ev.GetLongRunningToolIds()) > 0:
				return // the client answers the long-running calls in a later run
			case a.GetSkipSummarization():
				return // the tools' results are the answer
			}
		}
	}
}

// toolSet is what the model may call in one step.
type toolSet struct {
	list   []Tool
	byName map[string]Tool
	// transferInstruction, when not empty, lists the transfer targets.
	transferInstruction string
}

// toolsFor returns the agent's tools for a step, with transfer_to_agent
// when the agent has somewhere to transfer to in the runner's tree. The
// targets come from the tree the runner serves, not from the agent's own
// parent link, so that they are always agents the runner can find.
func (l *llmAgent) toolsFor(ctx *invocationContext) toolSet {
	ts := toolSet{list: slices.Clone(l.tools), byName: make(map[string]Tool, len(l.tools)+1)}
	var t *tree
	if ctx.inv.r != nil {
		t = ctx.inv.r.tree
	}
	if targets := transferTargets(t, ctx.agent); len(targets) > 0 {
		var parent Agent
		if t != nil {
			parent = t.parent[ctx.agent.Name()]
		}
		ts.list = append(ts.list, &transferTool{targets: targets})
		ts.transferInstruction = transferInstruction(ctx.agent, targets, parent)
	}
	for _, tool := range ts.list {
		ts.byName[tool.Name()] = tool
	}
	return ts
}

// step makes one model call and yields its events. It returns the complete
// event, or ok false when the sequence must stop.
func (l *llmAgent) step(ctx *invocationContext, tools toolSet, yield func(*agentrunnerv1.Event, error) bool) (final *agentrunnerv1.Event, ok bool) {
	fail := func(err error) (*agentrunnerv1.Event, bool) {
		yield(nil, err)
		return nil, false
	}
	// Model callbacks' and request processors' state changes land in the
	// event of this call.
	cc := ctx.callbackContext()
	req, err := l.request(ctx, cc, tools)
	if err != nil {
		return fail(err)
	}

	var resp *model.Response
	for _, cb := range l.beforeModel {
		if resp, err = cb(cc, req); err != nil {
			return fail(err)
		}
		if resp != nil {
			break
		}
	}

	if resp == nil {
		if err := ctx.inv.countLLMCall(); err != nil {
			return fail(err)
		}
		stream := ctx.inv.config.GetStreamingMode() == agentrunnerv1.StreamingMode_STREAMING_MODE_SSE
		for r, err := range l.model.Generate(ctx, req, stream) {
			if err != nil {
				// Whatever the model reports (an API error with its HTTP
				// status, a transport error) is delivered in-band, naming
				// the model, so the caller knows which one failed.
				if !strings.Contains(err.Error(), l.model.Name()) {
					err = fmt.Errorf("model %s: %w", l.model.Name(), err)
				}
				return fail(err)
			}
			if r == nil {
				continue
			}
			if r.Partial {
				if stream && !yield(responseEvent(ctx, r, true), nil) {
					return nil, false
				}
				continue
			}
			resp = r
		}
		if resp == nil {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			return fail(fmt.Errorf("model %s: no complete response", l.model.Name()))
		}
	}

	for _, cb := range l.afterModel {
		r, err := cb(cc, resp)
		if err != nil {
			return fail(err)
		}
		if r != nil {
			resp = r
			break
		}
	}

	ev := responseEvent(ctx, resp, false)
	prepareCalls(ctx, tools, ev)
	cc.pending.flushInto(ev)
	if l.outputKey != "" && ev.ErrorCode == "" && len(functionCalls(ev.Content)) == 0 {
		if text := textOf(ev.Content); text != "" {
			if ev.Actions == nil {
				ev.Actions = &agentrunnerv1.EventActions{}
			}
			if ev.Actions.StateDelta == nil {
				ev.Actions.StateDelta = &structpb.Struct{Fields: map[string]*structpb.Value{}}
			}
			ev.Actions.StateDelta.Fields[l.outputKey] = structpb.NewStringValue(text)
		}
	}
	if !yield(ev, nil) {
		return nil, false
	}
	return ev, true
}

// prepareCalls gives every function call of ev an id (models need not
// assign one, and the function response, as well as the runner's routing of
// a response that arrives in a later run, refer to it) and lists the
// long-running ones.
func prepareCalls(ctx *invocationContext, tools toolSet, ev *agentrunnerv1.Event) {
	for _, fc := range functionCalls(ev.GetContent()) {
		if fc.Id == "" {
			fc.Id = "call-" + ctx.inv.r.newID()
		}
		if t, ok := tools.byName[fc.GetName()]; ok && t.IsLongRunning() {
			ev.LongRunningToolIds = append(ev.LongRunningToolIds, fc.Id)
		}
	}
}

// functionCalls returns the function calls of c, in order.
func functionCalls(c *agentrunnerv1.Content) []*agentrunnerv1.FunctionCall {
	var out []*agentrunnerv1.FunctionCall
	for _, p := range c.GetParts() {
		if fc := p.GetFunctionCall(); fc != nil {
			out = append(out, fc)
		}
	}
	return out
}

// responseEvent turns a model response into an event of the agent.
//
// The complete response's content is cloned, because the runner goes on to
// change it (function-call ids). A partial's is shared: partial events are
// only streamed, never changed, and cloning each chunk was a fifth of the
// CPU of a streamed answer.
func responseEvent(ctx *invocationContext, r *model.Response, share bool) *agentrunnerv1.Event {
	content := r.Content
	switch {
	case content == nil:
	case !share:
		content = proto.CloneOf(content)
		if content.Role == "" {
			content.Role = RoleModel
		}
	case content.Role == "":
		content = &agentrunnerv1.Content{Role: RoleModel, Parts: content.Parts}
	}
	ev := &agentrunnerv1.Event{
		Content:       content,
		Partial:       r.Partial,
		TurnComplete:  r.TurnComplete,
		ErrorCode:     r.ErrorCode,
		ErrorMessage:  r.ErrorMessage,
		UsageMetadata: r.Usage,
	}
	if ev.ErrorCode == "" && r.FinishReason != "" && r.FinishReason != "STOP" && !r.Partial {
		// A truncated or blocked answer is reported as such, so that the
		// caller does not mistake it for a complete one.
		ev.ErrorCode = r.FinishReason
	}
	// The author is the agent even though the content's role is "model".
	ev.Author = ctx.agent.Name()
	ctx.fill(ev)
	return ev
}

// request builds the model request: the instruction (with the transfer
// targets), the history, the tools' declarations, then whatever the tools
// add. Request processors run with cc, so that their state changes land in
// the event of the call.
func (l *llmAgent) request(ctx, cc *invocationContext, tools toolSet) (*model.Request, error) {
	instr, err := renderInstruction(l.instruction, ctx.State())
	if err != nil {
		return nil, err
	}
	if tools.transferInstruction != "" {
		instr = joinInstruction(instr, tools.transferInstruction)
	}
	events := ctx.inv.eventsIn(ctx.branch)
	if l.includeContents == agentrunnerv1.IncludeContents_INCLUDE_CONTENTS_NONE {
		events = currentTurn(ctx.agent.Name(), events)
	}
	req := &model.Request{
		SystemInstruction: instr,
		Contents:          historyContents(ctx.agent.Name(), events),
		Config:            l.genConfig,
	}
	for _, t := range tools.list {
		d := t.Declaration()
		if d == nil {
			d = &model.FunctionDeclaration{Name: t.Name(), Description: t.Description()}
		}
		req.Tools = append(req.Tools, d)
	}
	for _, t := range tools.list {
		if p, ok := t.(RequestProcessor); ok {
			if err := p.ProcessRequest(cc, req); err != nil {
				return nil, fmt.Errorf("tool %s: prepare request: %w", t.Name(), err)
			}
		}
	}
	return req, nil
}

func textPart(s string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: s}}
}

// textOf concatenates the non-thought text parts of c.
func textOf(c *agentrunnerv1.Content) string {
	var sb strings.Builder
	for _, p := range c.GetParts() {
		if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok && !p.GetThought() {
			sb.WriteString(t.Text)
		}
	}
	return sb.String()
}

// placeholder matches {name} and {name?} where name is a state key,
// optionally scoped.
var placeholder = regexp.MustCompile(`\{((?:app:|user:|temp:)?[A-Za-z_][A-Za-z0-9_]*)(\?)?\}`)

// errMissingState is wrapped by instruction errors naming a missing key.
var errMissingState = errors.New("state key missing")

// renderInstruction fills {key} placeholders from state.
func renderInstruction(instr string, state State) (string, error) {
	if !strings.Contains(instr, "{") {
		return instr, nil
	}
	var err error
	out := placeholder.ReplaceAllStringFunc(instr, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		key, optional := sub[1], sub[2] == "?"
		v, ok := state.Get(key)
		if !ok {
			if !optional && err == nil {
				err = fmt.Errorf("instruction placeholder {%s}: %w: %w", key, errMissingState, store.ErrInvalidArgument)
			}
			return ""
		}
		if s, ok := v.GetKind().(*structpb.Value_StringValue); ok {
			return s.StringValue
		}
		b, jerr := json.Marshal(v.AsInterface())
		if jerr != nil {
			return v.String()
		}
		return string(b)
	})
	return out, err
}
