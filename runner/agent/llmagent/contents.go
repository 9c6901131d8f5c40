package llmagent

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/protobuf/types/known/structpb"
)

// This file builds the conversation an LLM agent sends to its model from
// the session's events, as the reference frameworks do.

// historyContents returns the conversation as the agent named self sees it:
// user turns and its own turns as they are, other agents' turns as context
// the user relays ("For context: [name] said: ..."), and each function call
// of its own followed by its responses (see pairFunctionResponses). Partial
// events, events without content and thoughts of other agents are left
// out. The events must already be those visible in the agent's branch.
func historyContents(self string, events []*agentrunnerv1.Event) []*agentrunnerv1.Content {
	out := make([]*agentrunnerv1.Content, 0, len(events))
	for _, ev := range events {
		c := ev.GetContent()
		if ev.GetPartial() || len(c.GetParts()) == 0 {
			continue
		}
		if ev.GetAuthor() == self || ev.GetAuthor() == agent.UserAuthor {
			if c = withoutConfirmations(c); c != nil {
				out = append(out, c)
			}
			continue
		}
		if oc := otherAgentContent(ev.GetAuthor(), c); oc != nil {
			out = append(out, oc)
		}
	}
	return pairFunctionResponses(out)
}

// SummaryPrefix starts the content that stands, in a model request, for
// the events a compaction covers.
const SummaryPrefix = "Summary of the conversation so far:\n"

// withSummary returns events as the model sees them once compacted: the
// newest compaction's summary first, as a user-role content, then the
// events after its range. The runner loads only those (see the history
// cache); compaction events themselves carry no conversation and are left
// out. A session never compacted is returned as it is, without a copy.
func withSummary(events []*agentrunnerv1.Event) []*agentrunnerv1.Event {
	newest := -1
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].GetActions().GetCompaction() != nil {
			newest = i
			break
		}
	}
	if newest < 0 {
		return events
	}
	c := events[newest].GetActions().GetCompaction()
	kept := func(ev *agentrunnerv1.Event) bool {
		return ev.GetActions().GetCompaction() == nil && ev.GetSequence() > c.GetEndSequence()
	}
	// Counted first: this runs on every model call, and a long session's
	// history holds many more events than the compaction leaves.
	n := 1
	for _, ev := range events {
		if kept(ev) {
			n++
		}
	}
	out := make([]*agentrunnerv1.Event, 0, n)
	out = append(out, &agentrunnerv1.Event{
		Author:   agent.UserAuthor,
		Sequence: c.GetStartSequence(),
		Content:  &agentrunnerv1.Content{Role: agent.RoleUser, Parts: []*agentrunnerv1.Part{textPart(SummaryPrefix + contentText(c.GetSummary()))}},
	})
	for _, ev := range events {
		if kept(ev) {
			out = append(out, ev)
		}
	}
	return out
}

// contentText joins the text parts of c, thoughts left out.
func contentText(c *agentrunnerv1.Content) string {
	var parts []string
	for _, p := range c.GetParts() {
		if t := p.GetText(); t != "" && !p.GetThought() {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// currentTurn returns the events of the current turn for an agent that
// includes no history: from the latest event by the user or by another
// agent that says something on. Events made only of function calls or
// responses do not start a turn: a transfer (another agent's call and its
// response) leads back to the user's message it answers, and a function
// response the client sent for a long-running call to the message that
// started the call, so the call and its response stay together.
func currentTurn(self string, events []*agentrunnerv1.Event) []*agentrunnerv1.Event {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.GetPartial() || ev.GetAuthor() == self || len(ev.GetContent().GetParts()) == 0 || onlyFunctionParts(ev.GetContent()) {
			continue
		}
		return events[i:]
	}
	return nil
}

func onlyFunctionParts(c *agentrunnerv1.Content) bool {
	for _, p := range c.GetParts() {
		if p.GetFunctionCall() == nil && p.GetFunctionResponse() == nil {
			return false
		}
	}
	return true
}

// pairFunctionResponses places the responses to each function call in one
// content right after the content that makes the calls, in call order, so
// that the model sees every call answered at once. This matters when the
// responses are apart from their calls: the response to a long-running
// call arrives in a later run, after an interim response and possibly other
// turns. For a call answered more than once the latest response wins.
// Function calls and responses are paired by id; a call nobody answered
// (a long-running call the client abandoned) is left out, as is a response
// to a call not in the history, since the model rejects both. Parts
// without an id stay where they are.
func pairFunctionResponses(contents []*agentrunnerv1.Content) []*agentrunnerv1.Content {
	called := map[string]bool{}
	for _, c := range contents {
		for _, p := range c.GetParts() {
			if id := p.GetFunctionCall().GetId(); id != "" {
				called[id] = true
			}
		}
	}
	if len(called) == 0 {
		return dropIDResponses(contents)
	}
	latest := map[string]*agentrunnerv1.Part{}
	for _, c := range contents {
		for _, p := range c.GetParts() {
			if id := p.GetFunctionResponse().GetId(); id != "" && called[id] {
				latest[id] = p
			}
		}
	}
	out := make([]*agentrunnerv1.Content, 0, len(contents))
	for _, c := range contents {
		if !hasIDFunctionParts(c) {
			out = append(out, c)
			continue
		}
		kept := make([]*agentrunnerv1.Part, 0, len(c.GetParts()))
		var answers []*agentrunnerv1.Part
		for _, p := range c.GetParts() {
			if id := p.GetFunctionCall().GetId(); id != "" {
				if r, ok := latest[id]; ok {
					kept = append(kept, p)
					answers = append(answers, r)
				}
				continue
			}
			if p.GetFunctionResponse().GetId() != "" {
				continue // placed after its call, or answers nothing
			}
			kept = append(kept, p)
		}
		if len(kept) > 0 {
			out = append(out, &agentrunnerv1.Content{Role: c.GetRole(), Parts: kept})
		}
		if len(answers) > 0 {
			out = append(out, &agentrunnerv1.Content{Role: agent.RoleUser, Parts: answers})
		}
	}
	return out
}

// dropIDResponses removes responses with ids from a history that has no
// calls with ids: they answer nothing the model can see.
func dropIDResponses(contents []*agentrunnerv1.Content) []*agentrunnerv1.Content {
	// The common history has no such responses: return it as it is rather
	// than copying it on every model call.
	if !slices.ContainsFunc(contents, hasIDFunctionParts) {
		return contents
	}
	out := make([]*agentrunnerv1.Content, 0, len(contents))
	for _, c := range contents {
		if !hasIDFunctionParts(c) {
			out = append(out, c)
			continue
		}
		var kept []*agentrunnerv1.Part
		for _, p := range c.GetParts() {
			if p.GetFunctionResponse().GetId() == "" {
				kept = append(kept, p)
			}
		}
		if len(kept) > 0 {
			out = append(out, &agentrunnerv1.Content{Role: c.GetRole(), Parts: kept})
		}
	}
	return out
}

func hasIDFunctionParts(c *agentrunnerv1.Content) bool {
	for _, p := range c.GetParts() {
		if p.GetFunctionCall().GetId() != "" || p.GetFunctionResponse().GetId() != "" {
			return true
		}
	}
	return false
}

// otherAgentContent rephrases another agent's turn as user-role context.
// The offline model recognises such contents by their first part, "For
// context:", so that text must not change.
func otherAgentContent(author string, c *agentrunnerv1.Content) *agentrunnerv1.Content {
	parts := []*agentrunnerv1.Part{textPart("For context:")}
	for _, p := range c.GetParts() {
		if p.GetThought() {
			continue
		}
		switch d := p.GetData().(type) {
		case *agentrunnerv1.Part_Text:
			if d.Text == "" {
				continue // a bare thought signature: nothing was said
			}
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
	return &agentrunnerv1.Content{Role: agent.RoleUser, Parts: parts}
}

// jsonOf renders s as compact JSON with sorted keys. protojson is not used:
// its output is deliberately unstable, and the model's prompt (and so its
// cache) should not change from one build to the next.
func jsonOf(s *structpb.Struct) string {
	if s == nil {
		return "{}"
	}
	b, err := json.Marshal(s.AsMap())
	if err != nil {
		return "{}"
	}
	return string(b)
}

// withoutConfirmations returns c without the confirmation requests and
// their answers, which are between the agent and the caller: the model
// sees the call they are about, and its response once it ran. Contents
// without any are returned as they are.
func withoutConfirmations(c *agentrunnerv1.Content) *agentrunnerv1.Content {
	// This runs on every event of the history on every model call: look at
	// the parts' types before anything else.
	if !slices.ContainsFunc(c.GetParts(), isConfirmation) {
		return c
	}
	kept := slices.DeleteFunc(slices.Clone(c.GetParts()), isConfirmation)
	if len(kept) == 0 {
		return nil
	}
	return &agentrunnerv1.Content{Role: c.GetRole(), Parts: kept}
}

func isConfirmation(p *agentrunnerv1.Part) bool {
	switch d := p.Data.(type) {
	case *agentrunnerv1.Part_FunctionCall:
		return d.FunctionCall.GetName() == builtin.RequestConfirmationName
	case *agentrunnerv1.Part_FunctionResponse:
		return d.FunctionResponse.GetName() == builtin.RequestConfirmationName
	}
	return false
}
