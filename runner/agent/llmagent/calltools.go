package llmagent

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// toolContext is the one implementation of tool.Context: a callback
// context of its own (so that each call's state changes are kept apart
// until they are merged into the response event) with the call's id and
// actions.
type toolContext struct {
	agent.CallbackContext
	callID  string
	actions *agentrunnerv1.EventActions
}

func (t *toolContext) FunctionCallID() string               { return t.callID }
func (t *toolContext) Actions() *agentrunnerv1.EventActions { return t.actions }

// callOutcome is what one function call produced.
type callOutcome struct {
	// part is the function response, nil for a long-running call without
	// an interim result.
	part *agentrunnerv1.Part
	// actions are the call's actions with its state changes and artifact
	// saves.
	actions *agentrunnerv1.EventActions
	// panicked is the panic of the tool or one of its hooks or callbacks,
	// if any: the model reads it as the call's error, and the caller gets
	// it in-band, since it is a bug to fix rather than a tool's answer.
	panicked error
}

// callTools runs the calls of one model answer and returns the event that
// answers them, or nil when there is nothing to say (only long-running
// calls without interim results, and no changes). Several calls run
// concurrently; their responses are in call order whatever order they
// finish in. callTools returns only once every call has returned, so no
// tool outlives the step that called it. It also returns the panics the
// calls recovered, in call order.
func (l *llmAgent) callTools(ctx agent.InvocationContext, h hooks, tools toolSet, calls []*agentrunnerv1.FunctionCall) (*agentrunnerv1.Event, []error) {
	outcomes := make([]callOutcome, len(calls))
	if len(calls) == 1 {
		outcomes[0] = l.callTool(ctx, h, tools, calls[0])
	} else {
		var wg sync.WaitGroup
		for i, fc := range calls {
			// callTool recovers whatever the tool, its hooks and callbacks
			// do; the guard here is for a bug of callTool itself, which
			// on this goroutine would end the process.
			wg.Go(func() {
				err := agent.Guard(ctx, agent.Logger(ctx), "tool call "+fc.GetName(), func() error {
					outcomes[i] = l.callTool(ctx, h, tools, fc)
					return nil
				})
				if err != nil {
					outcomes[i] = callOutcome{part: errorResponse(fc, err), panicked: err}
				}
			})
		}
		wg.Wait()
	}
	return outcomesEvent(ctx, outcomes)
}

// outcomesEvent returns the event that answers calls with their outcomes
// (nil when there is nothing to say), and the panics the calls recovered.
func outcomesEvent(ctx agent.InvocationContext, outcomes []callOutcome) (*agentrunnerv1.Event, []error) {
	var parts []*agentrunnerv1.Part
	var panics []error
	actions := &agentrunnerv1.EventActions{}
	responses, skips := 0, 0
	for _, o := range outcomes {
		if o.panicked != nil {
			panics = append(panics, o.panicked)
		}
		if o.part != nil {
			parts = append(parts, o.part)
			responses++
			if o.actions.GetSkipSummarization() {
				skips++
			}
		}
		mergeActions(actions, o.actions)
	}
	// Summarization is skipped only when every result asks for it: a
	// result that does not still needs the model to read it.
	actions.SkipSummarization = responses > 0 && skips == responses
	if len(parts) == 0 && isEmptyActions(actions) {
		return nil, panics
	}
	ev := &agentrunnerv1.Event{Author: ctx.AgentName(), Actions: actions}
	if len(parts) > 0 {
		ev.Content = &agentrunnerv1.Content{Role: agent.RoleUser, Parts: parts}
	}
	if isEmptyActions(actions) {
		ev.Actions = nil
	}
	agent.FillEvent(ctx, ev)
	return ev, panics
}

// callTool runs one call with the hooks and callbacks. Anything that goes
// wrong (an unknown tool, an error, a panic, a result that is not JSON)
// becomes the result {"error": "..."}, for the model to read.
func (l *llmAgent) callTool(ctx agent.InvocationContext, h hooks, tools toolSet, fc *agentrunnerv1.FunctionCall) callOutcome {
	tc := &toolContext{CallbackContext: agent.NewCallbackContext(ctx), callID: fc.GetId(), actions: &agentrunnerv1.EventActions{}}
	var (
		result map[string]any
		err    error
	)
	start := agent.Now(ctx)
	t, ok := tools.byName[fc.GetName()]
	if !ok {
		err = fmt.Errorf("tool %q not found; available tools: %s", fc.GetName(), builtin.QuoteList(slices.Sorted(maps.Keys(tools.byName))))
	} else {
		result, err = l.invokeTool(tc, h, t, fc.GetArgs().AsMap())
	}
	// The tool's time, hooks and callbacks included: what the step waited
	// for it.
	timing := &agentrunnerv1.Timing{StartTime: timestamppb.New(start), Duration: durationpb.New(agent.Now(ctx).Sub(start))}

	// Collect the call's changes into its actions; what the tool set on
	// Actions() directly wins over the same key set through State().
	scratch := &agentrunnerv1.Event{Actions: tc.actions}
	agent.FlushActions(tc.CallbackContext, scratch)
	out := callOutcome{actions: scratch.Actions}
	if pe := (*agent.PanicError)(nil); errors.As(err, &pe) {
		out.panicked = err
	}

	if err == nil && result == nil && t != nil && t.IsLongRunning() {
		return out // the response arrives in a later run
	}
	response, err := responseStruct(result, err)
	if err != nil {
		agent.Logger(ctx).WarnContext(ctx, "tool result is not JSON", "agent", ctx.AgentName(), "tool", fc.GetName(), "err", err)
		response = &structpb.Struct{Fields: map[string]*structpb.Value{"error": structpb.NewStringValue(err.Error())}}
	}
	out.part = responsePart(fc, response)
	out.part.GetFunctionResponse().Timing = timing
	return out
}

func responsePart(fc *agentrunnerv1.FunctionCall, response *structpb.Struct) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
		Id: fc.GetId(), Name: fc.GetName(), Response: response,
	}}}
}

// errorResponse answers fc with {"error": err}.
func errorResponse(fc *agentrunnerv1.FunctionCall, err error) *agentrunnerv1.Part {
	return responsePart(fc, &structpb.Struct{Fields: map[string]*structpb.Value{"error": structpb.NewStringValue(err.Error())}})
}

// responseStruct turns a call's outcome into the function response sent to
// the model.
func responseStruct(result map[string]any, err error) (*structpb.Struct, error) {
	if err != nil {
		return &structpb.Struct{Fields: map[string]*structpb.Value{"error": structpb.NewStringValue(err.Error())}}, nil
	}
	if result == nil {
		return &structpb.Struct{Fields: map[string]*structpb.Value{}}, nil
	}
	s, err := tool.ToStruct(result)
	if err != nil {
		return nil, fmt.Errorf("tool result is not a JSON object: %w", err)
	}
	return s, nil
}

// invokeTool runs, in order: the before_tool hooks and the agent's
// before-tool callbacks (the first to answer replaces the call), the tool,
// the on_tool_error hooks when it failed (the first result replaces the
// error), the after_tool hooks when it succeeded, and the agent's
// after-tool callbacks. Each step is guarded: a panic becomes the call's
// error, so that a broken tool cannot take the run, or the process, down.
func (l *llmAgent) invokeTool(tc *toolContext, h hooks, t tool.Tool, args map[string]any) (result map[string]any, err error) {
	guard := func(what string, fn func() (map[string]any, error)) (map[string]any, error) {
		var r map[string]any
		err := agent.Guard(tc, agent.Logger(tc), what, func() (e error) {
			r, e = fn()
			return e
		})
		return r, err
	}
	if h != nil {
		result, err = h.BeforeTool(tc, t, args)
	}
	for i := 0; result == nil && err == nil && i < len(l.beforeTool); i++ {
		result, err = guard(fmt.Sprintf("agent %s before_tool callback %d", l.name, i), func() (map[string]any, error) { return l.beforeTool[i](tc, t, args) })
	}
	if result == nil && err == nil {
		result, err = guard("tool "+t.Name(), func() (map[string]any, error) { return t.Run(tc, args) })
	}
	if err != nil && h != nil {
		if r, herr := h.OnToolError(tc, t, args, err); herr != nil || r != nil {
			result, err = r, herr
		}
	}
	if err == nil && result != nil && h != nil {
		if r, herr := h.AfterTool(tc, t, args, result); herr != nil || r != nil {
			return r, herr
		}
	}
	for i, cb := range l.afterTool {
		r, e := guard(fmt.Sprintf("agent %s after_tool callback %d", l.name, i), func() (map[string]any, error) { return cb(tc, t, args, result, err) })
		if e != nil {
			return nil, e
		}
		if r != nil {
			return r, nil
		}
	}
	return result, err
}

// mergeActions merges the actions of one call into those of the response
// event. Calls are merged in call order: a later call's state change or
// transfer wins over an earlier one's; escalation by any call escalates.
// SkipSummarization is decided by the caller.
func mergeActions(dst, src *agentrunnerv1.EventActions) {
	if src == nil {
		return
	}
	if fields := src.GetStateDelta().GetFields(); len(fields) > 0 {
		if dst.StateDelta == nil {
			dst.StateDelta = &structpb.Struct{Fields: make(map[string]*structpb.Value, len(fields))}
		}
		maps.Copy(dst.StateDelta.Fields, fields)
	}
	if len(src.GetArtifactDelta()) > 0 {
		if dst.ArtifactDelta == nil {
			dst.ArtifactDelta = make(map[string]int64, len(src.ArtifactDelta))
		}
		maps.Copy(dst.ArtifactDelta, src.ArtifactDelta)
	}
	if src.GetTransferToAgent() != "" {
		dst.TransferToAgent = src.TransferToAgent
	}
	dst.Escalate = dst.Escalate || src.GetEscalate()
}

func isEmptyActions(a *agentrunnerv1.EventActions) bool {
	return len(a.GetStateDelta().GetFields()) == 0 && len(a.GetArtifactDelta()) == 0 &&
		a.GetTransferToAgent() == "" && !a.GetEscalate() && !a.GetSkipSummarization()
}
