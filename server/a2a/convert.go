package a2a

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/a2aproject/a2a-go/v2/a2a"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// Metadata keys and data-part types are adk-go's (server/adka2a), so that
// an ADK remote agent reads our function calls, answers and partial
// chunks as it reads another ADK agent's.
const (
	metaType        = "adk_type"
	metaLongRunning = "adk_is_long_running"
	metaThought     = "adk_thought"
	metaPartial     = "adk_partial"
	metaErrorCode   = "adk_error_code"
	metaIsError     = "adk_is_error_message"

	typeFunctionCall     = "function_call"
	typeFunctionResponse = "function_response"
)

// toA2AParts converts a content's parts. Calls named in longRunning are
// marked as adk-go marks the calls its caller must answer.
func toA2AParts(c *agentrunnerv1.Content, longRunning []string) []*a2a.Part {
	parts := make([]*a2a.Part, 0, len(c.GetParts()))
	for _, p := range c.GetParts() {
		var out *a2a.Part
		switch d := p.GetData().(type) {
		case *agentrunnerv1.Part_Text:
			out = a2a.NewTextPart(d.Text)
			if p.GetThought() {
				out.SetMeta(metaThought, true)
			}
		case *agentrunnerv1.Part_InlineData:
			out = a2a.NewRawPart(d.InlineData.GetData())
			out.MediaType, out.Filename = d.InlineData.GetMimeType(), d.InlineData.GetDisplayName()
		case *agentrunnerv1.Part_FileData:
			out = a2a.NewFileURLPart(a2a.URL(d.FileData.GetFileUri()), d.FileData.GetMimeType())
			out.Filename = d.FileData.GetDisplayName()
		case *agentrunnerv1.Part_FunctionCall:
			out = a2a.NewDataPart(map[string]any{"id": d.FunctionCall.GetId(), "name": d.FunctionCall.GetName(), "args": d.FunctionCall.GetArgs().AsMap()})
			out.SetMeta(metaType, typeFunctionCall)
			out.SetMeta(metaLongRunning, slices.Contains(longRunning, d.FunctionCall.GetId()))
		case *agentrunnerv1.Part_FunctionResponse:
			out = a2a.NewDataPart(map[string]any{"id": d.FunctionResponse.GetId(), "name": d.FunctionResponse.GetName(), "response": d.FunctionResponse.GetResponse().AsMap()})
			out.SetMeta(metaType, typeFunctionResponse)
		default:
			continue
		}
		parts = append(parts, out)
	}
	return parts
}

// fromA2AMessage converts a caller's message into the user content of a
// run. A data part marked function_response (adk-go's convention) answers
// a call; any other data part reaches the model as its JSON text.
func fromA2AMessage(m *a2a.Message) (*agentrunnerv1.Content, error) {
	c := &agentrunnerv1.Content{Role: "user"}
	for i, p := range m.Parts {
		if p == nil {
			return nil, fmt.Errorf("%w: message.parts[%d] is empty", a2a.ErrInvalidParams, i)
		}
		part, err := fromA2APart(p)
		if err != nil {
			return nil, fmt.Errorf("%w: message.parts[%d]: %v", a2a.ErrInvalidParams, i, err)
		}
		c.Parts = append(c.Parts, part)
	}
	if len(c.Parts) == 0 {
		return nil, fmt.Errorf("%w: the message has no parts", a2a.ErrInvalidParams)
	}
	return c, nil
}

func fromA2APart(p *a2a.Part) (*agentrunnerv1.Part, error) {
	switch v := p.Content.(type) {
	case a2a.Text:
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: string(v)}}, nil
	case a2a.Raw:
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_InlineData{InlineData: &agentrunnerv1.Blob{MimeType: p.MediaType, Data: v, DisplayName: p.Filename}}}, nil
	case a2a.URL:
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FileData{FileData: &agentrunnerv1.FileData{MimeType: p.MediaType, FileUri: string(v), DisplayName: p.Filename}}}, nil
	case a2a.Data:
		if t, _ := p.Metadata[metaType].(string); t == typeFunctionResponse {
			return functionResponse(v.Value)
		}
		b, err := json.Marshal(v.Value)
		if err != nil {
			return nil, err
		}
		return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: string(b)}}, nil
	}
	return nil, fmt.Errorf("unsupported part content %T", p.Content)
}

// functionResponse reads adk-go's function_response data: {id, name,
// response}.
func functionResponse(data any) (*agentrunnerv1.Part, error) {
	m, ok := data.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("function_response data is %T, not an object", data)
	}
	id, _ := m["id"].(string)
	name, _ := m["name"].(string)
	resp, _ := m["response"].(map[string]any)
	if id == "" {
		return nil, fmt.Errorf("function_response has no id")
	}
	st, err := structpb.NewStruct(resp)
	if err != nil {
		return nil, fmt.Errorf("function_response.response: %w", err)
	}
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Response: st}}}, nil
}

// answersCalls reports whether c holds function responses: a message
// that answers the calls a task waits on.
func answersCalls(c *agentrunnerv1.Content) bool {
	return slices.ContainsFunc(c.GetParts(), func(p *agentrunnerv1.Part) bool { return p.GetFunctionResponse() != nil })
}

// taskState is a run's status as a task's state. An interrupted run (a
// server stopped under it) is failed: it goes on only through ResumeRun,
// which A2A has no word for, so "working" would keep a client waiting
// for ever.
func taskState(s agentrunnerv1.RunStatus) a2a.TaskState {
	switch s {
	case agentrunnerv1.RunStatus_RUN_STATUS_PENDING:
		return a2a.TaskStateSubmitted
	case agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED:
		return a2a.TaskStateInputRequired
	case agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED:
		return a2a.TaskStateCompleted
	case agentrunnerv1.RunStatus_RUN_STATUS_FAILED, agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
		return a2a.TaskStateFailed
	case agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED:
		return a2a.TaskStateCanceled
	}
	return a2a.TaskStateWorking
}

// runStatuses are the run statuses of a task state, for ListTasks.
func runStatuses(s a2a.TaskState) []agentrunnerv1.RunStatus {
	var out []agentrunnerv1.RunStatus
	for v := range agentrunnerv1.RunStatus_name {
		st := agentrunnerv1.RunStatus(v)
		if st != agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED && taskState(st) == s {
			out = append(out, st)
		}
	}
	slices.Sort(out)
	return out
}

// ended reports whether a run can do nothing more on its own.
func ended(s agentrunnerv1.RunStatus) bool {
	switch s {
	case agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED,
		agentrunnerv1.RunStatus_RUN_STATUS_FAILED, agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED,
		agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
		return true
	}
	return false
}

// taskInfo names a run as a task.
func taskInfo(run *agentrunnerv1.Run) a2a.TaskInfo {
	return a2a.TaskInfo{TaskID: a2a.TaskID(run.GetRunId()), ContextID: run.GetSessionId()}
}

// statusOf is a run's task status: for a run waiting on its caller, the
// calls it waits on (as data parts, from calls); for a failed one, its
// error.
func statusOf(run *agentrunnerv1.Run, calls map[string]*agentrunnerv1.Part) a2a.TaskStatus {
	st := a2a.TaskStatus{State: taskState(run.GetStatus())}
	if t := run.GetEndTime(); t != nil {
		ts := t.AsTime()
		st.Timestamp = &ts
	}
	switch st.State {
	case a2a.TaskStateInputRequired:
		c := &agentrunnerv1.Content{}
		for _, id := range run.GetPendingCallIds() {
			if p, ok := calls[id]; ok {
				c.Parts = append(c.Parts, p)
			}
		}
		st.Message = a2a.NewMessageForTask(a2a.MessageRoleAgent, taskInfo(run), toA2AParts(c, run.GetPendingCallIds())...)
	case a2a.TaskStateFailed:
		msg := run.GetError().GetMessage()
		if run.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED && msg == "" {
			msg = "the run was interrupted: the server stopped while it ran; ResumeRun (agentrunner's API) continues it"
		}
		p := a2a.NewTextPart(msg)
		p.SetMeta(metaIsError, true)
		st.Message = a2a.NewMessageForTask(a2a.MessageRoleAgent, taskInfo(run), p)
	}
	return st
}

// collectCalls remembers the function calls of an event, by id: a run
// that ends waiting names only their ids.
func collectCalls(calls map[string]*agentrunnerv1.Part, ev *agentrunnerv1.Event) {
	for _, p := range ev.GetContent().GetParts() {
		if fc := p.GetFunctionCall(); fc != nil {
			calls[fc.GetId()] = p
		}
	}
}
