package llmagent

import (
	"fmt"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/seal"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/protobuf/types/known/structpb"
)

// errRejected is the result the model reads for a call the caller
// rejected.
const errRejected = "the user rejected this call; it did not run"

// splitConfirmations separates the calls that need the caller's
// confirmation before they run from those that can run now.
func (l *llmAgent) splitConfirmations(calls []*agentrunnerv1.FunctionCall) (run, ask []*agentrunnerv1.FunctionCall) {
	if len(l.confirm) == 0 {
		return calls, nil
	}
	for _, fc := range calls {
		if l.confirm[fc.GetName()] {
			ask = append(ask, fc)
		} else {
			run = append(run, fc)
		}
	}
	return run, ask
}

// confirmationRequest is the event that asks the caller to confirm calls:
// one call of request_confirmation per call, carrying it, each waited on
// (long-running), so that the run ends until the caller answers.
func confirmationRequest(ctx agent.InvocationContext, ask []*agentrunnerv1.FunctionCall) *agentrunnerv1.Event {
	ev := &agentrunnerv1.Event{Author: ctx.AgentName(), Content: &agentrunnerv1.Content{Role: agent.RoleModel}}
	for _, fc := range ask {
		args := &structpb.Struct{Fields: map[string]*structpb.Value{
			"call_id": structpb.NewStringValue(fc.GetId()),
			"name":    structpb.NewStringValue(fc.GetName()),
			"args":    structpb.NewStructValue(fc.GetArgs()),
		}}
		if fc.GetArgs() == nil {
			args.Fields["args"] = structpb.NewStructValue(&structpb.Struct{})
		}
		id := "confirm-" + agent.NewID(ctx)
		ev.Content.Parts = append(ev.Content.Parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{
			FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: builtin.RequestConfirmationName, Args: args},
		}})
		ev.LongRunningToolIds = append(ev.LongRunningToolIds, id)
	}
	agent.FillEvent(ctx, ev)
	return ev
}

// confirmedCalls answers the confirmations the user's message carries: a
// confirmed call runs now, a rejected one gets a rejection for the model.
// It returns the event with their responses, nil when the message answers
// no confirmation.
func (l *llmAgent) confirmedCalls(ctx agent.InvocationContext, h hooks) (*agentrunnerv1.Event, []error) {
	var outcomes []callOutcome
	var tools toolSet
	for _, p := range agent.SharedUserContent(ctx, seal.Key{}).GetParts() {
		fr := p.GetFunctionResponse()
		if fr.GetName() != builtin.RequestConfirmationName {
			continue
		}
		fc := confirmedCall(ctx, fr.GetId())
		if fc == nil {
			continue // another agent's request, or a call that already ran
		}
		if !fr.GetResponse().GetFields()["confirmed"].GetBoolValue() {
			outcomes = append(outcomes, callOutcome{part: errorResponse(fc, fmt.Errorf("%s", errRejected))})
			continue
		}
		if tools.byName == nil {
			tools = l.toolsFor(ctx)
		}
		outcomes = append(outcomes, l.callTool(ctx, h, tools, fc))
	}
	if len(outcomes) == 0 {
		return nil, nil
	}
	return outcomesEvent(ctx, outcomes)
}

// confirmedCall returns the call the confirmation request id of this
// agent asked about, from the session's events; nil when this agent made
// no such request or the call has a response already (so that nothing
// runs twice, even when the agent runs again in the same run).
func confirmedCall(ctx agent.InvocationContext, id string) *agentrunnerv1.FunctionCall {
	events := agent.SharedEvents(ctx, seal.Key{})
	var call *agentrunnerv1.FunctionCall
	for _, ev := range events {
		for _, p := range ev.GetContent().GetParts() {
			if fc := p.GetFunctionCall(); fc.GetId() == id && fc.GetName() == builtin.RequestConfirmationName && ev.GetAuthor() == ctx.AgentName() {
				f := fc.GetArgs().GetFields()
				call = &agentrunnerv1.FunctionCall{Id: f["call_id"].GetStringValue(), Name: f["name"].GetStringValue(), Args: f["args"].GetStructValue()}
			}
			if call != nil && p.GetFunctionResponse().GetId() == call.GetId() {
				return nil
			}
		}
	}
	return call
}

// retriedCalls runs the calls of this agent that a resumed run was asked
// to run again (agent.RetryCalls): calls a crash left started and never
// finished. A call that has a response by now is not run. It returns the
// event with their responses, nil when there is none to run.
func (l *llmAgent) retriedCalls(ctx agent.InvocationContext, h hooks) (*agentrunnerv1.Event, []error) {
	ids := agent.RetryCalls(ctx, seal.Key{})
	if len(ids) == 0 {
		return nil, nil
	}
	var outcomes []callOutcome
	var tools toolSet
	for _, id := range ids {
		fc := unansweredCall(ctx, id)
		if fc == nil {
			continue
		}
		if tools.byName == nil {
			tools = l.toolsFor(ctx)
		}
		outcomes = append(outcomes, l.callTool(ctx, h, tools, fc))
	}
	if len(outcomes) == 0 {
		return nil, nil
	}
	return outcomesEvent(ctx, outcomes)
}

// unansweredCall returns this agent's call with the id, nil when it made
// none or the call has a response.
func unansweredCall(ctx agent.InvocationContext, id string) *agentrunnerv1.FunctionCall {
	var call *agentrunnerv1.FunctionCall
	for _, ev := range agent.SharedEvents(ctx, seal.Key{}) {
		for _, p := range ev.GetContent().GetParts() {
			if fc := p.GetFunctionCall(); fc.GetId() == id && ev.GetAuthor() == ctx.AgentName() {
				call = fc
			}
			if call != nil && p.GetFunctionResponse().GetId() == id {
				return nil
			}
		}
	}
	return call
}
