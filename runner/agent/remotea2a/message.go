package remotea2a

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
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
// calls of this agent, the answers go to the task that asked, in its
// context. Otherwise the message holds the events since this agent's last
// turn, in the context of its previous turns (none yet: the remote agent
// starts one).
//
// Its id is not random: it is derived from the newest event it carries
// (messageID), so that a turn run again (a resume after a crash cut it)
// sends the same message with the same id, and a remote that
// deduplicates messages by id (agentrunner's A2A server does) does the
// work once.
func (r *remote) message(ctx agent.InvocationContext) *a2a.Message {
	events := ctx.Session().Events()
	if msg := r.answer(events); msg != nil {
		msg.ID = messageID(r.name, events.At(events.Len()-1).GetId())
		return msg
	}
	start, contextID := 0, ""
	for i := events.Len() - 1; i >= 0; i-- {
		// An event that does not end a turn (the remote's tool traffic) is
		// part of a turn a crash may have cut: what that turn was sent is
		// sent again, in the same context.
		if ev := events.At(i); ev.GetAuthor() == r.name && ev.GetTurnComplete() {
			start, contextID = i+1, idsOf(ev).contextID
			break
		}
	}
	parts, newest := r.history(events, start)
	msg := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	msg.ContextID = contextID
	if newest != "" {
		msg.ID = messageID(r.name, newest)
	}
	return msg
}

// history is what a turn sends of the events from start on: the parts
// of the newest ones, oldest first, within the agent's bounds on events
// and bytes (the newest is always sent: it is what the turn answers), and
// the id of the newest. The bounds keep a first turn from sending the
// whole session to a third party.
func (r *remote) history(events agent.Events, start int) (parts []*a2a.Part, newest string) {
	var kept [][]*a2a.Part
	var size int64
	for i := events.Len() - 1; i >= start && len(kept) < r.maxEvents; i-- {
		ev := events.At(i)
		p := r.contextParts(ev)
		if len(p) == 0 {
			continue
		}
		n := partsSize(p)
		if len(kept) > 0 && size+n > r.maxBytes {
			break
		}
		if newest == "" {
			newest = ev.GetId()
		}
		kept, size = append(kept, p), size+n
	}
	for i := len(kept) - 1; i >= 0; i-- {
		parts = append(parts, kept[i]...)
	}
	return parts, newest
}

// partsSize is the size of parts' text.
func partsSize(parts []*a2a.Part) int64 {
	var n int64
	for _, p := range parts {
		if t, ok := p.Content.(a2a.Text); ok {
			n += int64(len(t))
		}
	}
	return n
}

// messageID is the id of the message agent sends with the event of id
// eventID as its newest: the same on every try, unique in the session.
func messageID(agentName, eventID string) string {
	sum := sha256.Sum256([]byte(agentName + "\x00" + eventID))
	return "agentrunner-" + hex.EncodeToString(sum[:16])
}

// answer returns the message that answers this agent's calls with the
// newest event, or nil when the newest event answers none. The answers to
// the calls of one remote task go in one message: to the reserved
// InputRequiredName call as text or data (answerPart), to a call the
// remote made as a function_response data part (adk-go's shape), which
// an ADK or agentrunner server takes as the answer to its call.
func (r *remote) answer(events agent.Events) *a2a.Message {
	n := events.Len()
	if n == 0 || events.At(n-1).GetAuthor() != agent.UserAuthor {
		return nil
	}
	var parts []*a2a.Part
	var ids remoteIDs
	for _, p := range events.At(n - 1).GetContent().GetParts() {
		fr := p.GetFunctionResponse()
		if fr == nil {
			continue
		}
		call, ev := r.waitingCall(events, n-1, fr.GetId())
		if call == nil || (len(parts) > 0 && idsOf(ev).taskID != ids.taskID) {
			continue
		}
		ids = idsOf(ev)
		if call.GetName() == InputRequiredName {
			parts = append(parts, answerPart(fr.GetResponse()))
		} else {
			parts = append(parts, responsePart(fr))
		}
	}
	if len(parts) == 0 {
		return nil
	}
	msg := a2a.NewMessage(a2a.MessageRoleUser, parts...)
	msg.TaskID, msg.ContextID = a2a.TaskID(ids.taskID), ids.contextID
	return msg
}

// waitingCall finds, among the events before end, this agent's call of id
// that the remote waits on (one in its event's long_running_tool_ids),
// and the event that holds it.
func (r *remote) waitingCall(events agent.Events, end int, id string) (*agentrunnerv1.FunctionCall, *agentrunnerv1.Event) {
	for i := end - 1; i >= 0; i-- {
		ev := events.At(i)
		if ev.GetAuthor() != r.name || !slices.Contains(ev.GetLongRunningToolIds(), id) {
			continue
		}
		for _, p := range ev.GetContent().GetParts() {
			if fc := p.GetFunctionCall(); fc.GetId() == id {
				return fc, ev
			}
		}
	}
	return nil, nil
}

// responsePart is a function response as adk-go sends one: data {id,
// name, response}, marked function_response.
func responsePart(fr *agentrunnerv1.FunctionResponse) *a2a.Part {
	p := a2a.NewDataPart(map[string]any{"id": fr.GetId(), "name": fr.GetName(), "response": fr.GetResponse().AsMap()})
	p.SetMeta(metaType, typeFunctionResponse)
	return p
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

// Metadata keys and data-part types of adk-go's A2A convention
// (server/adka2a), which agentrunner's own A2A server follows: a data part
// so marked is a function call or response, not data of the answer.
const (
	metaType             = "adk_type"
	metaLongRunning      = "adk_is_long_running"
	typeFunctionCall     = "function_call"
	typeFunctionResponse = "function_response"
)

// fromA2A converts the remote agent's parts: text as text, bytes inline,
// URLs as file references, data marked as a function call or response as
// one (toolPart), other data as its JSON text. It returns too the ids of
// the calls marked long-running: the remote waits on its caller for them.
func fromA2A(parts []*a2a.Part) (out []*agentrunnerv1.Part, longRunning []string) {
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			out = append(out, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: string(c)}})
		case a2a.Data:
			if tp, long := toolPart(p, c); tp != nil {
				out = append(out, tp)
				if long {
					longRunning = append(longRunning, tp.GetFunctionCall().GetId())
				}
				continue
			}
			out = append(out, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: jsonOf(c.Value)}})
		case a2a.Raw:
			out = append(out, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: p.MediaType, Data: c, DisplayName: p.Filename}}})
		case a2a.URL:
			out = append(out, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FileData{FileData: &agentrunnerv1.FileData{MimeType: p.MediaType, FileUri: string(c), DisplayName: p.Filename}}})
		}
	}
	return out, longRunning
}

// toolPart reads a data part marked function_call ({id, name, args}) or
// function_response ({id, name, response}), and whether a call is marked
// long-running; nil for any other data, and for a marked part without an
// id or whose values are no JSON objects (kept as data).
func toolPart(p *a2a.Part, d a2a.Data) (*agentrunnerv1.Part, bool) {
	typ, _ := p.Metadata[metaType].(string)
	m, _ := d.Value.(map[string]any)
	id, _ := m["id"].(string)
	name, _ := m["name"].(string)
	if id == "" || (typ != typeFunctionCall && typ != typeFunctionResponse) {
		return nil, false
	}
	key := "args"
	if typ == typeFunctionResponse {
		key = "response"
	}
	v, _ := m[key].(map[string]any)
	st, err := structpb.NewStruct(v)
	if err != nil {
		return nil, false
	}
	if typ == typeFunctionResponse {
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: st}}}, false
	}
	long, _ := p.Metadata[metaLongRunning].(bool)
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name, Args: st}}}, long
}

// isTool reports whether p is a function call or response.
func isTool(p *agentrunnerv1.Part) bool {
	return p.GetFunctionCall() != nil || p.GetFunctionResponse() != nil
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
