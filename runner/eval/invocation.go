package eval

import (
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// ActualInvocation is what a run did with one user message, in the shape
// of an expected one, as ADK's EvaluationGenerator collects it: every
// function call of the run's events, in order, is a tool use, and the
// final response is the content of the last event that is a final
// response (not partial, not the user's, no function calls or responses,
// some text). Thought parts are left out of the response's text.
func ActualInvocation(user *Content, events []*agentrunnerv1.Event) Invocation {
	inv := Invocation{UserContent: user, IntermediateData: &IntermediateData{}}
	for _, ev := range events {
		if ev.GetPartial() || ev.GetAuthor() == "user" || ev.GetContent() == nil {
			continue
		}
		if inv.InvocationID == "" {
			inv.InvocationID = ev.GetInvocationId()
		}
		final, text := true, []Part{}
		for _, p := range ev.GetContent().GetParts() {
			switch {
			case p.GetFunctionCall() != nil:
				final = false
				fc := p.GetFunctionCall()
				inv.IntermediateData.ToolUses = append(inv.IntermediateData.ToolUses,
					FunctionCall{ID: fc.GetId(), Name: fc.GetName(), Args: fc.GetArgs().AsMap()})
			case p.GetFunctionResponse() != nil:
				final = false
			case p.GetText() != "" && !p.GetThought():
				text = append(text, Part{Text: p.GetText()})
			}
		}
		if final && len(text) > 0 {
			inv.FinalResponse = &Content{Role: "model", Parts: text}
		}
	}
	return inv
}

// ContentFromProto converts a message to the eval files' Content (text and
// function calls only).
func ContentFromProto(c *agentrunnerv1.Content) *Content {
	if c == nil {
		return nil
	}
	out := &Content{Role: c.GetRole()}
	for _, p := range c.GetParts() {
		switch {
		case p.GetFunctionCall() != nil:
			fc := p.GetFunctionCall()
			out.Parts = append(out.Parts, Part{FunctionCall: &FunctionCall{ID: fc.GetId(), Name: fc.GetName(), Args: fc.GetArgs().AsMap()}})
		case p.GetText() != "" && !p.GetThought():
			out.Parts = append(out.Parts, Part{Text: p.GetText()})
		}
	}
	return out
}
