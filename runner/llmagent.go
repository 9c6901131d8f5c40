package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"regexp"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/encoding/protojson"
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
	// OutputKey, when set, stores the text of the agent's final answer in
	// state under this key.
	OutputKey            string
	BeforeAgentCallbacks []BeforeAgentCallback
	AfterAgentCallbacks  []AfterAgentCallback
	BeforeModelCallbacks []BeforeModelCallback
	AfterModelCallbacks  []AfterModelCallback
}

// llmAgent holds what only LLM agents have.
type llmAgent struct {
	model                    model.Model
	instruction              string
	genConfig                *model.GenerateConfig
	disallowTransferToParent bool
	disallowTransferToPeers  bool
	outputKey                string
	beforeModel              []BeforeModelCallback
	afterModel               []AfterModelCallback
}

// NewLLMAgent returns an agent that answers with a language model.
//
// Each turn builds a request from the session history visible in the
// agent's branch: the user's and this agent's turns as they are, other
// agents' turns rephrased as context ("[name] said: ..."). It calls the
// model (streaming partial events when the run asks for SSE), and yields the
// answer as one complete event. Every call counts against the run's
// max_llm_calls.
func NewLLMAgent(cfg LLMConfig) (Agent, error) {
	if cfg.Model == nil {
		return nil, fmt.Errorf("llm agent %q: Model is required", cfg.Name)
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
			beforeModel:              cfg.BeforeModelCallbacks,
			afterModel:               cfg.AfterModelCallbacks,
		},
	}
	if err := b.adopt(cfg.SubAgents); err != nil {
		return nil, err
	}
	b.impl = b.llm.run
	return b, nil
}

// run is the LLM agent's flow: steps until one produces a final answer.
// Today a step is one model call; tools (a function-call answer is executed
// and its result fed back with another step) and transfer_to_agent slot in
// after the call.
func (l *llmAgent) run(ctx InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		ictx := ctx.internal()
		for !ctx.Ended() {
			final, ok := l.step(ictx, yield)
			if !ok || !l.needsAnotherStep(final) {
				return
			}
		}
	}
}

// needsAnotherStep reports whether the turn goes on after final. Function
// calls with no tool to run are answered by the client on a later turn (the
// runner routes the function response back to this agent), so for now the
// turn always ends; tool execution will yield the function responses and
// return true here.
func (l *llmAgent) needsAnotherStep(final *agentrunnerv1.Event) bool {
	return false
}

// step makes one model call and yields its events. It returns the complete
// event, or ok false when the sequence must stop.
func (l *llmAgent) step(ctx *invocationContext, yield func(*agentrunnerv1.Event, error) bool) (final *agentrunnerv1.Event, ok bool) {
	fail := func(err error) (*agentrunnerv1.Event, bool) {
		yield(nil, err)
		return nil, false
	}
	req, err := l.request(ctx)
	if err != nil {
		return fail(err)
	}

	// Model callbacks' state changes land in the event of this call.
	cc := ctx.callbackContext()
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
				return fail(fmt.Errorf("model %s: %w", l.model.Name(), err))
			}
			if r == nil {
				continue
			}
			if r.Partial {
				if !yield(responseEvent(ctx, r), nil) {
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

	ev := responseEvent(ctx, resp)
	cc.pending.flushInto(ev)
	if l.outputKey != "" && ev.ErrorCode == "" {
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

// responseEvent turns a model response into an event of the agent.
func responseEvent(ctx *invocationContext, r *model.Response) *agentrunnerv1.Event {
	content := r.Content
	if content != nil {
		content = proto.CloneOf(content)
		if content.Role == "" {
			content.Role = RoleModel
		}
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

// request builds the model request from the instruction and the history.
func (l *llmAgent) request(ctx *invocationContext) (*model.Request, error) {
	instr, err := renderInstruction(l.instruction, ctx.State())
	if err != nil {
		return nil, err
	}
	return &model.Request{
		SystemInstruction: instr,
		Contents:          historyContents(ctx.agent.Name(), ctx.inv.eventsIn(ctx.branch)),
		Config:            l.genConfig,
	}, nil
}

// historyContents returns the conversation as the agent named self sees it:
// user turns and its own turns as they are, other agents' turns as context
// the user relays. Partial events, events without content and thoughts of
// other agents are left out.
func historyContents(self string, events []*agentrunnerv1.Event) []*agentrunnerv1.Content {
	out := make([]*agentrunnerv1.Content, 0, len(events))
	for _, ev := range events {
		c := ev.GetContent()
		if ev.GetPartial() || len(c.GetParts()) == 0 {
			continue
		}
		if ev.GetAuthor() == self || ev.GetAuthor() == UserAuthor {
			out = append(out, c)
			continue
		}
		if oc := otherAgentContent(ev.GetAuthor(), c); oc != nil {
			out = append(out, oc)
		}
	}
	return out
}

// otherAgentContent rephrases another agent's turn as user-role context.
func otherAgentContent(author string, c *agentrunnerv1.Content) *agentrunnerv1.Content {
	parts := []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "For context:"}}}
	for _, p := range c.GetParts() {
		if p.GetThought() {
			continue
		}
		switch d := p.GetData().(type) {
		case *agentrunnerv1.Part_Text:
			parts = append(parts, textPart(fmt.Sprintf("[%s] said: %s", author, d.Text)))
		case *agentrunnerv1.Part_FunctionCall:
			parts = append(parts, textPart(fmt.Sprintf("[%s] called tool `%s` with parameters: %s", author, d.FunctionCall.GetName(), jsonOf(d.FunctionCall.GetArgs()))))
		case *agentrunnerv1.Part_FunctionResponse:
			parts = append(parts, textPart(fmt.Sprintf("[%s] `%s` tool returned result: %s", author, d.FunctionResponse.GetName(), jsonOf(d.FunctionResponse.GetResponse()))))
		default:
			parts = append(parts, p)
		}
	}
	if len(parts) == 1 {
		return nil
	}
	return &agentrunnerv1.Content{Role: RoleUser, Parts: parts}
}

func jsonOf(s *structpb.Struct) string {
	if s == nil {
		return "{}"
	}
	b, err := protojson.Marshal(s)
	if err != nil {
		return "{}"
	}
	return string(b)
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
