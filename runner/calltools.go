package runner

import (
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"sync"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// toolContext is the one implementation of ToolContext: a callback context
// of its own (so that each call's state changes are kept apart until they
// are merged into the response event) with the call's id and actions.
type toolContext struct {
	*invocationContext
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
}

// callTools runs the calls of one model answer and returns the event that
// answers them, or nil when there is nothing to say (only long-running
// calls without interim results, and no changes). Several calls run
// concurrently; their responses are in call order whatever order they
// finish in. callTools returns only once every call has returned, so no
// tool outlives the step that called it.
func (l *llmAgent) callTools(ctx *invocationContext, tools toolSet, calls []*agentrunnerv1.FunctionCall) *agentrunnerv1.Event {
	outcomes := make([]callOutcome, len(calls))
	if len(calls) == 1 {
		outcomes[0] = l.callTool(ctx, tools, calls[0])
	} else {
		var wg sync.WaitGroup
		for i, fc := range calls {
			wg.Go(func() { outcomes[i] = l.callTool(ctx, tools, fc) })
		}
		wg.Wait()
	}

	var parts []*agentrunnerv1.Part
	actions := &agentrunnerv1.EventActions{}
	responses, skips := 0, 0
	for _, o := range outcomes {
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
		return nil
	}
	ev := &agentrunnerv1.Event{Author: ctx.agent.Name(), Actions: actions}
	if len(parts) > 0 {
		ev.Content = &agentrunnerv1.Content{Role: RoleUser, Parts: parts}
	}
	if isEmptyActions(actions) {
		ev.Actions = nil
	}
	ctx.fill(ev)
	return ev
}

// callTool runs one call with the tool callbacks. Anything that goes wrong
// (an unknown tool, an error, a panic, a result that is not JSON) becomes
// the result {"error": "..."}, for the model to read.
func (l *llmAgent) callTool(ctx *invocationContext, tools toolSet, fc *agentrunnerv1.FunctionCall) callOutcome {
	tc := &toolContext{invocationContext: ctx.callbackContext(), callID: fc.GetId(), actions: &agentrunnerv1.EventActions{}}
	var (
		result map[string]any
		err    error
	)
	tool, ok := tools.byName[fc.GetName()]
	if !ok {
		err = fmt.Errorf("tool %q not found; available tools: %s", fc.GetName(), quoteList(slices.Sorted(maps.Keys(tools.byName))))
	} else {
		result, err = l.invokeTool(tc, tool, fc.GetArgs().AsMap())
	}

	// Collect the call's changes into its actions; what the tool set on
	// Actions() directly wins over the same key set through State().
	scratch := &agentrunnerv1.Event{Actions: tc.actions}
	tc.pending.flushInto(scratch)
	out := callOutcome{actions: scratch.Actions}

	if err == nil && result == nil && tool != nil && tool.IsLongRunning() {
		return out // the response arrives in a later run
	}
	response, err := responseStruct(result, err)
	if err != nil {
		log := ctx.inv.r.log
		log.WarnContext(ctx, "tool result is not JSON", "agent", ctx.agent.Name(), "tool", fc.GetName(), "err", err)
		response = &structpb.Struct{Fields: map[string]*structpb.Value{"error": structpb.NewStringValue(err.Error())}}
	}
	out.part = &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
		Id: fc.GetId(), Name: fc.GetName(), Response: response,
	}}}
	return out
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
	s, err := toStruct(result)
	if err != nil {
		return nil, fmt.Errorf("tool result is not a JSON object: %w", err)
	}
	return s, nil
}

// invokeTool runs the before-callbacks, the tool unless one of them
// answered, and the after-callbacks. A panic in any of them is recovered
// and becomes the call's error: a broken tool must not take the run, or
// the process, down.
func (l *llmAgent) invokeTool(tc *toolContext, tool Tool, args map[string]any) (result map[string]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			tc.inv.r.log.ErrorContext(tc, "tool panicked", "agent", tc.agent.Name(), "tool", tool.Name(), "panic", p, "stack", string(debug.Stack()))
			result, err = nil, fmt.Errorf("tool %s panicked: %v", tool.Name(), p)
		}
	}()
	for _, cb := range l.beforeTool {
		result, err = cb(tc, tool, args)
		if result != nil || err != nil {
			break
		}
	}
	if result == nil && err == nil {
		result, err = tool.Run(tc, args)
	}
	for _, cb := range l.afterTool {
		r, e := cb(tc, tool, args, result, err)
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
