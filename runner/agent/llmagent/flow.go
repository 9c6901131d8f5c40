package llmagent

import (
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/seal"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// hooks are the runner's plugin hooks an LLM agent calls; *plugin.Manager
// implements them. They are found on agent.HooksOf, so that this package
// need not import plugin.
type hooks interface {
	HasBeforeModel() bool
	BeforeModel(agent.CallbackContext, *model.Request) (*model.Response, error)
	AfterModel(agent.CallbackContext, *model.Response) (*model.Response, error)
	OnModelError(agent.CallbackContext, *model.Request, error) (*model.Response, error)
	BeforeTool(tool.Context, tool.Tool, map[string]any) (map[string]any, error)
	AfterTool(tool.Context, tool.Tool, map[string]any, map[string]any) (map[string]any, error)
	OnToolError(tool.Context, tool.Tool, map[string]any, error) (map[string]any, error)
}

// hooksOf returns the runner's model and tool hooks, nil when it has none.
func hooksOf(ctx agent.CallbackContext) hooks {
	h, _ := agent.HooksOf(ctx).(hooks)
	return h
}

// run is the LLM agent's flow: a model call, then the tools it asks for,
// and again, until the model answers without calls or the turn otherwise
// ends.
func (l *llmAgent) run(ctx agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		h := hooksOf(ctx)
		// A reply to confirmation requests: run or reject those calls
		// first, then let the model go on with their results.
		if ev, panics := l.confirmedCalls(ctx, h); ev != nil || panics != nil {
			if (ev != nil && !yield(ev, nil)) || !yieldAll(panics, yield) {
				return
			}
			if ev != nil && !l.goOn(ctx, nil, ev.GetActions(), yield) {
				return // a transfer among them ran its target, as after any call
			}
		}
		// A resumed run asked to run again calls a crash cut off.
		if ev, panics := l.retriedCalls(ctx, h); ev != nil || panics != nil {
			if (ev != nil && !yield(ev, nil)) || !yieldAll(panics, yield) {
				return
			}
			if ev != nil && !l.goOn(ctx, nil, ev.GetActions(), yield) {
				return
			}
		}
		for !ctx.Ended() && ctx.Err() == nil {
			tools := l.toolsFor(ctx)
			ev, ok := l.step(ctx, h, tools, yield)
			if !ok {
				return
			}
			calls := functionCalls(ev.GetContent())
			if len(calls) == 0 || ev.GetErrorCode() != "" {
				return // a final answer, or one cut short: no tools to run
			}
			run, ask := l.splitConfirmations(calls)
			resp, panics := l.callTools(ctx, h, tools, run)
			if (resp != nil && !yield(resp, nil)) || !yieldAll(panics, yield) {
				return
			}
			if len(ask) > 0 {
				// The turn ends until the caller confirms or rejects.
				yield(confirmationRequest(ctx, ask), nil)
				return
			}
			if !l.goOn(ctx, ev, resp.GetActions(), yield) {
				return
			}
		}
	}
}

// goOn decides, after the tools of a step ran, whether the agent takes
// another step. A transfer runs the target here, inside this agent's turn,
// as in the reference frameworks: an LLM agent in a sequence hands over to
// its sub-agent before the sequence goes on. (The runner follows a
// transfer only when nobody did.)
func (l *llmAgent) goOn(ctx agent.InvocationContext, ev *agentrunnerv1.Event, a *agentrunnerv1.EventActions, yield func(*agentrunnerv1.Event, error) bool) bool {
	switch {
	case a.GetTransferToAgent() != "":
		target, ok := agent.TreeOf(ctx).Find(a.GetTransferToAgent())
		if !ok {
			yield(nil, fmt.Errorf("transfer to unknown agent %q", a.GetTransferToAgent()))
			return false
		}
		for ev, err := range target.Run(ctx) {
			if !yield(ev, err) {
				break
			}
		}
		return false
	case len(ev.GetLongRunningToolIds()) > 0:
		return false // the client answers the long-running calls in a later run
	case a.GetSkipSummarization():
		return false // the tools' results are the answer
	}
	return true
}

// toolSet is what the model may call in one step.
type toolSet struct {
	list   []tool.Tool
	byName map[string]tool.Tool
	// transferInstruction, when not empty, lists the transfer targets.
	transferInstruction string
}

// toolsFor returns the agent's tools for a step, with transfer_to_agent
// when the agent has somewhere to transfer to in the runner's tree. The
// targets come from the tree the runner serves, not from the agent's own
// parent link, so that they are always agents the runner can find.
func (l *llmAgent) toolsFor(ctx agent.InvocationContext) toolSet {
	ts := toolSet{list: l.tools, byName: make(map[string]tool.Tool, len(l.tools)+1)}
	t := agent.TreeOf(ctx)
	if targets := t.TransferTargets(ctx.Agent()); len(targets) > 0 {
		transfer := builtin.NewTransfer(ctx.Agent(), targets, t.Parent(ctx.Agent()))
		ts.list = append(ts.list[:len(ts.list):len(ts.list)], transfer)
		ts.transferInstruction = transfer.Instruction()
	}
	for _, tl := range ts.list {
		if _, ok := tl.(tool.Undeclared); !ok {
			ts.byName[tl.Name()] = tl
		}
	}
	return ts
}

// step makes one model call and yields its events. It returns the complete
// event, or ok false when the sequence must stop.
func (l *llmAgent) step(ctx agent.InvocationContext, h hooks, tools toolSet, yield func(*agentrunnerv1.Event, error) bool) (final *agentrunnerv1.Event, ok bool) {
	// Hooks', callbacks' and request processors' state changes land in the
	// event of this call.
	cc := agent.NewCallbackContext(ctx)
	req, hist, err := l.request(ctx, cc, h, tools)
	if err != nil {
		yield(nil, err)
		return nil, false
	}
	resp, err := l.beforeModelCall(cc, h, req)
	// The call's hold on the budgets ends once its event is stored (the
	// yield below returns after the runner stored it), or on any return
	// before.
	release := func() {}
	defer func() { release() }()
	var timing *agentrunnerv1.Timing
	if err == nil && resp == nil {
		resp, timing, ok, err = l.callModel(ctx, cc, h, req, hist, &release, yield)
		if !ok {
			return nil, false
		}
	}
	if err == nil {
		resp, err = l.afterModelCall(cc, h, resp)
	}
	if err != nil {
		yield(nil, err)
		return nil, false
	}
	ev := responseEvent(ctx, resp, false)
	ev.Timing = timing
	l.prepareCalls(ctx, tools, ev)
	agent.FlushActions(cc, ev)
	l.setOutput(ev)
	if !yield(ev, nil) {
		return nil, false
	}
	return ev, true
}

// beforeModelCall runs the before_model hooks, then the agent's
// callbacks; a response either returns is used instead of calling the
// model.
func (l *llmAgent) beforeModelCall(cc agent.CallbackContext, h hooks, req *model.Request) (*model.Response, error) {
	if h != nil {
		if resp, err := h.BeforeModel(cc, req); resp != nil || err != nil {
			return resp, err
		}
	}
	for i, cb := range l.beforeModel {
		var resp *model.Response
		err := agent.Guard(cc, agent.Logger(cc), fmt.Sprintf("agent %s before_model callback %d", l.name, i), func() (e error) {
			resp, e = cb(cc, req)
			return e
		})
		if resp != nil || err != nil {
			return resp, err
		}
	}
	return nil, nil
}

// afterModelCall runs the after_model hooks, then the agent's callbacks;
// the first response either returns replaces resp.
func (l *llmAgent) afterModelCall(cc agent.CallbackContext, h hooks, resp *model.Response) (*model.Response, error) {
	if h != nil {
		if r, err := h.AfterModel(cc, resp); r != nil || err != nil {
			return r, err
		}
	}
	for i, cb := range l.afterModel {
		var r *model.Response
		err := agent.Guard(cc, agent.Logger(cc), fmt.Sprintf("agent %s after_model callback %d", l.name, i), func() (e error) {
			r, e = cb(cc, resp)
			return e
		})
		if err != nil {
			return nil, err
		}
		if r != nil {
			return r, nil
		}
	}
	return resp, nil
}

// callModel counts and makes the call, streaming partial events when the
// run asks for SSE, and returns the complete response with the call's
// timing. A failure goes to the on_model_error hooks, which may answer in
// its place. ok is false when the consumer stopped.
func (l *llmAgent) callModel(ctx agent.InvocationContext, cc agent.CallbackContext, h hooks, req *model.Request, hist history, release *func(), yield func(*agentrunnerv1.Event, error) bool) (resp *model.Response, timing *agentrunnerv1.Timing, ok bool, err error) {
	est := l.capOutput(req, hist)
	if *release, err = agent.ReserveModelCall(ctx, est); err != nil {
		return nil, nil, true, err
	}
	stream := ctx.RunConfig().GetStreamingMode() == agentrunnerv1.StreamingMode_STREAMING_MODE_SSE
	var callErr error
	// A call this agent stops reading mid-stream (its parallel branch is
	// stopped) is reported by the model wrapper, priced, and counts.
	gctx := model.WithCutReporter(ctx, func(u *agentrunnerv1.UsageMetadata, c *agentrunnerv1.Cost) {
		agent.NoteCutCall(ctx, agent.CutCall{Author: ctx.AgentName(), Branch: ctx.Branch(), Usage: u, Cost: c})
	})
	// The call's time is taken here, on the runner's clock, whatever the
	// model: a provider wrapped in retries or not is timed alike.
	start := agent.Now(ctx)
	var first time.Time
	stopped, panicked := agent.RangeGuarded(ctx, agent.Logger(ctx), "model "+l.model.Name(), l.model.Generate(gctx, req, stream), func(r *model.Response, err error) bool {
		if r != nil && first.IsZero() {
			first = agent.Now(ctx)
		}
		switch {
		case err != nil:
			callErr = err
			return false
		case r == nil:
		case r.Partial:
			return !stream || yield(responseEvent(ctx, r, true), nil)
		default:
			resp = r
		}
		return true
	})
	if stopped && callErr == nil {
		return nil, nil, false, nil
	}
	timing = callTiming(start, first, agent.Now(ctx), resp)
	if callErr == nil {
		callErr = panicked
	}
	if callErr == nil && resp == nil {
		if callErr = ctx.Err(); callErr == nil {
			callErr = fmt.Errorf("no complete response")
		}
	}
	if callErr != nil {
		noteCut(ctx, callErr)
		resp, err = l.modelFailed(ctx, cc, h, req, callErr)
	}
	return resp, timing, true, err
}

// callTiming is the timing of a model call that started at start, had its
// first chunk at first (zero when none came) and ended at end, with the
// attempts of resp, its complete response when it gave one.
func callTiming(start, first, end time.Time, resp *model.Response) *agentrunnerv1.Timing {
	t := &agentrunnerv1.Timing{StartTime: timestamppb.New(start), Duration: durationpb.New(end.Sub(start))}
	if !first.IsZero() {
		t.TimeToFirstChunk = durationpb.New(first.Sub(start))
	}
	if resp != nil {
		t.Attempts = resp.Attempts
	}
	return t
}

// noteCut hands the runner the usage of a call the run's end cut off
// (model.CutError), for the event that says the run stopped: the provider
// bills it, so it counts.
func noteCut(ctx agent.InvocationContext, err error) {
	var ce *model.CutError
	if !errors.As(err, &ce) || ce.Usage == nil {
		return
	}
	agent.NoteCutCall(ctx, agent.CutCall{Author: ctx.AgentName(), Branch: ctx.Branch(), Usage: ce.Usage, Cost: ce.Cost})
}

// modelFailed gives the on_model_error hooks a chance to answer; else the
// error is delivered, naming the model, so that the caller knows which one
// failed.
func (l *llmAgent) modelFailed(ctx agent.InvocationContext, cc agent.CallbackContext, h hooks, req *model.Request, err error) (*model.Response, error) {
	if agent.IsTerminal(ctx, err) {
		return nil, err
	}
	if !strings.Contains(err.Error(), l.model.Name()) {
		err = fmt.Errorf("model %s: %w", l.model.Name(), err)
	}
	if h != nil {
		resp, herr := h.OnModelError(cc, copyRequest(req), err)
		if herr != nil || resp != nil {
			return resp, herr
		}
	}
	return nil, err
}

// setOutput stores the text of a final answer under the output key.
func (l *llmAgent) setOutput(ev *agentrunnerv1.Event) {
	if l.outputKey == "" || ev.ErrorCode != "" || len(functionCalls(ev.Content)) > 0 {
		return
	}
	text := textOf(ev.Content)
	if text == "" {
		return
	}
	if ev.Actions == nil {
		ev.Actions = &agentrunnerv1.EventActions{}
	}
	if ev.Actions.StateDelta == nil {
		ev.Actions.StateDelta = &structpb.Struct{Fields: map[string]*structpb.Value{}}
	}
	ev.Actions.StateDelta.Fields[l.outputKey] = structpb.NewStringValue(text)
}

// prepareCalls gives every function call of ev an id (models need not
// assign one, and the function response, as well as the runner's routing of
// a response that arrives in a later run, refer to it) and lists the
// long-running ones whose arguments their tool accepts.
func (l *llmAgent) prepareCalls(ctx agent.InvocationContext, tools toolSet, ev *agentrunnerv1.Event) {
	for _, fc := range functionCalls(ev.GetContent()) {
		if fc.Id == "" {
			fc.Id = "call-" + agent.NewID(ctx)
		}
		t, ok := tools.byName[fc.GetName()]
		if !ok || !t.IsLongRunning() {
			continue
		}
		// A call the tool would refuse is answered at once, not waited on.
		if c, ok := t.(tool.ArgumentChecker); ok && c.CheckArgs(fc.GetArgs().AsMap()) != nil {
			continue
		}
		ev.LongRunningToolIds = append(ev.LongRunningToolIds, fc.Id)
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
func responseEvent(ctx agent.InvocationContext, r *model.Response, share bool) *agentrunnerv1.Event {
	content := r.Content
	switch {
	case content == nil:
	case !share:
		content = content.CloneVT()
		if content.Role == "" {
			content.Role = agent.RoleModel
		}
	case content.Role == "":
		content = &agentrunnerv1.Content{Role: agent.RoleModel, Parts: content.Parts}
	}
	ev := newResponseEvent(ctx, share)
	*ev = agentrunnerv1.Event{
		Timestamp:         ev.Timestamp,
		Content:           content,
		Partial:           r.Partial,
		TurnComplete:      r.TurnComplete,
		ErrorCode:         r.ErrorCode,
		ErrorMessage:      r.ErrorMessage,
		UsageMetadata:     r.Usage,
		Cost:              r.Cost,
		FinishReason:      r.FinishReason,
		ModelVersion:      r.ModelVersion,
		CitationMetadata:  r.Citations,
		GroundingMetadata: r.Grounding,
		CustomMetadata:    r.CustomMetadata,
		Interrupted:       r.Interrupted,
	}
	if ev.ErrorCode == "" && r.FinishReason != "" && r.FinishReason != "STOP" && !r.Partial {
		// A truncated or blocked answer is reported as such, so that the
		// caller does not mistake it for a complete one.
		ev.ErrorCode = r.FinishReason
	}
	// The author is the agent even though the content's role is "model".
	ev.Author = ctx.AgentName()
	agent.FillEvent(ctx, ev)
	return ev
}

// newResponseEvent returns a new event for responseEvent. A partial one
// (share) is made with its timestamp, the runner's time now as the runner
// would set it, in one allocation: a streamed answer has one a word.
func newResponseEvent(ctx agent.InvocationContext, share bool) *agentrunnerv1.Event {
	if !share {
		return &agentrunnerv1.Event{}
	}
	e := &struct {
		ev agentrunnerv1.Event
		ts timestamppb.Timestamp
	}{}
	now := agent.Now(ctx)
	e.ts.Seconds, e.ts.Nanos = now.Unix(), int32(now.Nanosecond())
	e.ev.Timestamp = &e.ts
	return &e.ev
}

// request builds the model request: the instruction (with the transfer
// targets), the history, the tools' declarations, then whatever the tools
// add. Request processors run with cc, so that their state changes land in
// the event of the call.
//
// The history's contents are the session's stored instances, shared, not
// copied: copying a long history on every call would cost more than the
// rest of the step. Whenever code other than the model can see the
// request (request processors, before_model hooks or callbacks), it gets a
// copy instead. The history is returned too, for promptTokens.
func (l *llmAgent) request(ctx agent.InvocationContext, cc agent.CallbackContext, h hooks, tools toolSet) (*model.Request, history, error) {
	instr, err := renderInstruction(ctx, l.instruction, ctx.State(), ctx.Artifacts())
	if err != nil {
		return nil, history{}, err
	}
	if tools.transferInstruction != "" {
		instr = builtin.JoinInstruction(instr, tools.transferInstruction)
	}
	var hist history
	if events := agent.SharedEvents(ctx, seal.Key{}); ctx.Branch() == "" && l.includeContents != agentrunnerv1.IncludeContents_INCLUDE_CONTENTS_NONE {
		hist = l.memo.history(ctx.AgentName(), events)
	} else {
		hist = modelHistory(ctx.AgentName(), events, l.includeContents == agentrunnerv1.IncludeContents_INCLUDE_CONTENTS_NONE)
	}
	req := &model.Request{
		// The model's own name: hooks (telemetry) read which model is
		// called; the model answers to it as to an empty one.
		Model:             l.model.Name(),
		SystemInstruction: instr,
		Contents:          hist.contents,
		Config:            l.genConfig,
		Cache:             l.cache,
	}
	for _, t := range tools.list {
		if _, ok := t.(tool.Undeclared); ok {
			continue
		}
		d := t.Declaration()
		if d == nil {
			d = &model.FunctionDeclaration{Name: t.Name(), Description: t.Description()}
		}
		req.Tools = append(req.Tools, d)
	}
	if l.processors || len(l.beforeModel) > 0 || (h != nil && h.HasBeforeModel()) {
		req.Contents = copyContents(req.Contents)
	}
	for _, t := range tools.list {
		if p, ok := t.(tool.RequestProcessor); ok {
			if err := p.ProcessRequest(cc, req); err != nil {
				return nil, history{}, fmt.Errorf("tool %s: prepare request: %w", t.Name(), err)
			}
		}
	}
	return req, hist, nil
}

// copyContents deep-copies a request's contents.
func copyContents(cs []*agentrunnerv1.Content) []*agentrunnerv1.Content {
	out := make([]*agentrunnerv1.Content, len(cs))
	for i, c := range cs {
		out[i] = c.CloneVT()
	}
	return out
}

// copyRequest returns req with its contents copied, for hooks that see a
// request after the call.
func copyRequest(req *model.Request) *model.Request {
	c := *req
	c.Contents = copyContents(req.Contents)
	if req.Cache != nil {
		cc := *req.Cache
		c.Cache = &cc
	}
	return &c
}

// yieldAll yields errs in order; it reports whether the consumer wants
// more.
func yieldAll(errs []error, yield func(*agentrunnerv1.Event, error) bool) bool {
	for _, err := range errs {
		if !yield(nil, err) {
			return false
		}
	}
	return true
}
