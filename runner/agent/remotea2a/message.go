package remotea2a

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// contextMarker opens what other agents said, rephrased for the remote
// agent; the same words the LLM agent uses.
const contextMarker = "For context:"

// message builds the A2A message of a turn. When the newest event answers
// this agent's input-required call, the answer goes to the task that asked,
// in its context. Otherwise the message holds the events since this
// agent's last event, in the context of its previous turns (none yet: the
// remote agent starts one).
func (r *remote) message(ctx agent.InvocationContext) *a2a.Message {
	events := ctx.Session().Events()
	if msg := r.answer(events); msg != nil {
		return msg
	}
	start, contextID := 0, ""
	for i := events.Len() - 1; i >= 0; i-- {
		if ev := events.At(i); ev.GetAuthor() == r.name {
			start, contextID = i+1, idsOf(ev).contextID
			break
		}
	}
	var parts []*a2a.Part
	for i := start; i < events.Len(); i++ {
		parts = append(parts, r.contextParts(events.At(i))...)
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	msg.ContextID = contextID
	return msg
}

// answer returns the message that answers this agent's input-required
// call with the newest event, or nil when the newest event is no such
// answer.
func (r *remote) answer(events agent.Events) *a2a.Message {
	n := events.Len()
	if n == 0 {
		return nil
	}
	last := events.At(n - 1)
	if last.GetAuthor() != agent.UserAuthor {
		return nil
	}
	for _, p := range last.GetContent().GetParts() {
		fr := p.GetFunctionResponse()
		if fr == nil {
			continue
		}
		for i := n - 2; i >= 0; i-- {
			call := events.At(i)
			if call.GetAuthor() != r.name || !callsInput(call, fr.GetId()) {
				continue
			}
			ids := idsOf(call)
			msg := a2a.NewMessage(a2a.MessageRoleUser, answerPart(fr.GetResponse()))
			msg.TaskID, msg.ContextID = a2a.TaskID(ids.taskID), ids.contextID
			return msg
		}
	}
	return nil
}

// callsInput reports whether ev holds this package's input-required call
// with id.
func callsInput(ev *agentrunnerv1.Event, id string) bool {
	for _, p := range ev.GetContent().GetParts() {
		if fc := p.GetFunctionCall(); fc.GetName() == InputRequiredName && fc.GetId() == id {
			return true
		}
	}
	return false
}

// answerPart is the caller's answer as the remote agent gets it: the
// text of {"text": "..."} alone, any other object as data.
func answerPart(resp *structpb.Struct) *a2a.Part {
	f := resp.GetFields()
	if t, ok := f["text"]; ok && len(f) == 1 {
		if s, ok := t.GetKind().(*structpb.Value_StringValue); ok {
			return a2a.NewTextPart(s.StringValue)
		}
	}
	return a2a.NewDataPart(resp.AsMap())
}

// contextParts is what the remote agent is told of one event: the user's
// text as it is, another agent's text and calls as "For context:" lines
// (the remote agent does not know our agents, so their turns are
// narrated, as adk-go does). Thoughts and this agent's own events are left
// out.
func (r *remote) contextParts(ev *agentrunnerv1.Event) []*a2a.Part {
	var out []*a2a.Part
	if ev.GetAuthor() == agent.UserAuthor {
		for _, p := range ev.GetContent().GetParts() {
			if t := p.GetText(); t != "" && !p.GetThought() {
				out = append(out, a2a.NewTextPart(t))
			}
		}
		return out
	}
	if ev.GetAuthor() == r.name {
		return nil
	}
	var lines []string
	for _, p := range ev.GetContent().GetParts() {
		switch {
		case p.GetThought():
		case p.GetText() != "":
			lines = append(lines, fmt.Sprintf("[%s] said: %s", ev.GetAuthor(), p.GetText()))
		case p.GetFunctionCall() != nil:
			fc := p.GetFunctionCall()
			lines = append(lines, fmt.Sprintf("[%s] called tool %s with parameters: %s", ev.GetAuthor(), fc.GetName(), jsonOf(fc.GetArgs().AsMap())))
		case p.GetFunctionResponse() != nil:
			fr := p.GetFunctionResponse()
			lines = append(lines, fmt.Sprintf("[%s] %s tool returned result: %s", ev.GetAuthor(), fr.GetName(), jsonOf(fr.GetResponse().AsMap())))
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return []*a2a.Part{a2a.NewTextPart(contextMarker + "\n" + strings.Join(lines, "\n"))}
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// fromA2A converts the remote agent's parts: text as text, data as its
// JSON text, bytes inline, URLs as file references.
func fromA2A(parts []*a2a.Part) []*agentrunnerv1.Part {
	var out []*agentrunnerv1.Part
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			out = append(out, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: string(c)}})
		case a2a.Data:
			out = append(out, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: jsonOf(c.Value)}})
		case a2a.Raw:
			out = append(out, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: p.MediaType, Data: c, DisplayName: p.Filename}}})
		case a2a.URL:
			out = append(out, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FileData{FileData: &agentrunnerv1.FileData{MimeType: p.MediaType, FileUri: string(c), DisplayName: p.Filename}}})
		}
	}
	return out
}

// mergeText joins neighbouring text parts, as streamed chunks arrive.
func mergeText(parts []*agentrunnerv1.Part) []*agentrunnerv1.Part {
	var out []*agentrunnerv1.Part
	for _, p := range parts {
		if t, ok := p.GetData().(*agentrunnerv1.Part_Text); ok && len(out) > 0 {
			if prev, ok := out[len(out)-1].GetData().(*agentrunnerv1.Part_Text); ok {
				out[len(out)-1] = &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: prev.Text + t.Text}}
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// textOf joins the text of parts.
func textOf(parts []*agentrunnerv1.Part) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.GetText())
	}
	return b.String()
}

// remoteIDs are the remote ids an event carries under MetadataKey.
type remoteIDs struct {
	contextID, taskID string
}

// idsOf reads the remote ids of one of this agent's events.
func idsOf(ev *agentrunnerv1.Event) remoteIDs {
	m := ev.GetCustomMetadata().GetFields()[MetadataKey].GetStructValue().GetFields()
	return remoteIDs{contextID: m["context_id"].GetStringValue(), taskID: m["task_id"].GetStringValue()}
}

// metadata is the custom_metadata of the agent's complete events.
func metadata(contextID string, taskID a2a.TaskID, state a2a.TaskState) *structpb.Struct {
	s, _ := newStruct(map[string]any{MetadataKey: map[string]any{
		"context_id": contextID, "task_id": string(taskID), "task_state": string(state),
	}})
	return s
}

// newStruct is structpb.NewStruct for maps of strings, which cannot fail.
func newStruct(m map[string]any) (*structpb.Struct, error) { return structpb.NewStruct(m) }
