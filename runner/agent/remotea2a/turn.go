package remotea2a

import (
	"context"
	"errors"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
)

// errStopped ends a turn whose consumer stopped reading.
var errStopped = errors.New("consumer stopped")

// turn runs one turn: one A2A message sent, its answer streamed back. It
// yields at most one error, and nothing after it.
func (r *remote) turn(ctx agent.InvocationContext, yield func(*agentrunnerv1.Event, error) bool) {
	if r.unavailable != nil {
		yield(nil, r.unavailable)
		return
	}
	msg := r.message(ctx)
	if len(msg.Parts) == 0 {
		return // nothing new to say since this agent's last turn
	}
	tctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	s := &stream{
		ctx: ctx, yield: yield, partials: ctx.RunConfig().GetStreamingMode() == agentrunnerv1.StreamingMode_STREAMING_MODE_SSE,
		contextID: msg.ContextID, taskID: msg.TaskID, artifacts: map[a2a.ArtifactID]int{},
	}
	err := r.send(tctx, s, &a2a.SendMessageRequest{Message: msg})
	if !s.done && s.taskID != "" {
		r.cancelTask(ctx, s.taskID)
	}
	switch {
	case errors.Is(err, errStopped):
		return
	case err != nil && ctx.Err() != nil:
		yield(nil, fmt.Errorf("remote agent %q: %w", r.name, ctx.Err())) // the run ends: terminal
	case err != nil && errors.Is(tctx.Err(), context.DeadlineExceeded):
		yield(nil, fmt.Errorf("remote agent %q did not finish its turn within %s", r.name, r.timeout))
	case err != nil:
		yield(nil, fmt.Errorf("remote agent %q: %w", r.name, err))
	case !s.done:
		yield(nil, fmt.Errorf("remote agent %q ended its answer before its task %q finished (state %q)", r.name, s.taskID, s.state))
	}
}

// send sends req and hands what comes back to s. It returns the
// transport's error, the task's failure, or errStopped.
func (r *remote) send(ctx context.Context, s *stream, req *a2a.SendMessageRequest) error {
	if !r.streaming {
		res, err := r.client.SendMessage(ctx, req)
		if err != nil {
			return err
		}
		return s.handle(res)
	}
	for ev, err := range r.client.SendStreamingMessage(ctx, req) {
		if err != nil {
			return err
		}
		if err := s.handle(ev); err != nil || s.done {
			return err
		}
	}
	return nil
}

// cancelTask cancels a remote task this side gave up on (an error, a
// timeout, a cancelled run), so that it does not run on for nobody. Best
// effort: the run's own context may be gone, hence WithoutCancel.
func (r *remote) cancelTask(ctx agent.InvocationContext, id a2a.TaskID) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := r.client.CancelTask(cctx, &a2a.CancelTaskRequest{ID: id}); err != nil {
		agent.Logger(ctx).WarnContext(cctx, "cancel remote A2A task", "agent", r.name, "task_id", string(id), "err", err)
	}
}

// stream turns the A2A events of one turn into the agent's events.
type stream struct {
	ctx      agent.InvocationContext
	yield    func(*agentrunnerv1.Event, error) bool
	partials bool

	contextID string
	taskID    a2a.TaskID
	state     a2a.TaskState
	// parts collects the answer for the complete event, artifacts the
	// index in parts where each artifact starts (a non-append update
	// replaces it).
	parts     []*agentrunnerv1.Part
	artifacts map[a2a.ArtifactID]int
	// done is set once the task reached a state that ends the turn.
	done bool
}

// handle takes one A2A event.
func (s *stream) handle(ev a2a.Event) error {
	if info := ev.TaskInfo(); info.TaskID != "" || info.ContextID != "" {
		s.taskID, s.contextID = info.TaskID, info.ContextID
	}
	switch v := ev.(type) {
	case *a2a.Message:
		// A direct answer, without a task: the turn is over.
		s.parts = append(s.parts, fromA2A(v.Parts)...)
		s.done = true
		return s.emit(nil)
	case *a2a.Task:
		for _, art := range v.Artifacts {
			if art != nil { // a remote's JSON may say null
				s.parts = append(s.parts, fromA2A(art.Parts)...)
			}
		}
		return s.status(v.Status)
	case *a2a.TaskStatusUpdateEvent:
		return s.status(v.Status)
	case *a2a.TaskArtifactUpdateEvent:
		return s.artifact(v)
	}
	return nil
}

// artifact takes an artifact update: its text streams as a partial event
// and is kept for the complete one.
func (s *stream) artifact(v *a2a.TaskArtifactUpdateEvent) error {
	if v.Artifact == nil {
		return nil
	}
	start, seen := s.artifacts[v.Artifact.ID]
	switch {
	case !seen:
		s.artifacts[v.Artifact.ID] = len(s.parts)
	case !v.Append:
		// A replacement: drop what the artifact had (artifacts after it
		// in the answer are rare enough to be dropped with it, and
		// start again where the answer now ends if they come back).
		s.parts = s.parts[:start]
		for id, at := range s.artifacts {
			if at > start {
				delete(s.artifacts, id)
			}
		}
	}
	parts := fromA2A(v.Artifact.Parts)
	s.parts = append(s.parts, parts...)
	if !s.partials || len(parts) == 0 {
		return nil
	}
	ev := &agentrunnerv1.Event{Partial: true, Content: &agentrunnerv1.Content{Role: agent.RoleModel, Parts: parts}}
	if !s.yield(ev, nil) {
		return errStopped
	}
	return nil
}

// status takes the task's new status.
func (s *stream) status(st a2a.TaskStatus) error {
	s.state = st.State
	var said []*agentrunnerv1.Part
	if st.Message != nil {
		said = fromA2A(st.Message.Parts)
	}
	switch st.State {
	case a2a.TaskStateCompleted:
		s.parts = append(s.parts, said...)
		s.done = true
		return s.emit(nil)
	case a2a.TaskStateInputRequired:
		s.done = true
		return s.emit(s.inputRequired(said))
	case a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateCanceled, a2a.TaskStateAuthRequired:
		// What came before the failure is kept; then the failure, in band.
		s.done = true
		if err := s.emit(nil); err != nil {
			return err
		}
		return fmt.Errorf("task %q ended in state %q: %s", s.taskID, st.State, orNone(textOf(said)))
	}
	return nil // submitted, working: the answer is still to come
}

// inputRequired is the call that makes the run wait for the caller.
func (s *stream) inputRequired(said []*agentrunnerv1.Part) *agentrunnerv1.FunctionCall {
	args, _ := newStruct(map[string]any{"message": textOf(said), "task_id": string(s.taskID)})
	return &agentrunnerv1.FunctionCall{Id: "a2a-" + agent.NewID(s.ctx), Name: InputRequiredName, Args: args}
}

// emit yields the turn's complete event: the answer collected, then call
// when there is one, with the remote ids in custom_metadata. Nothing is
// yielded when there is neither an answer nor a call.
func (s *stream) emit(call *agentrunnerv1.FunctionCall) error {
	parts := mergeText(s.parts)
	s.parts, s.artifacts = nil, map[a2a.ArtifactID]int{}
	ev := &agentrunnerv1.Event{TurnComplete: true}
	if call != nil {
		parts = append(parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: call}})
		ev.LongRunningToolIds = []string{call.GetId()}
	}
	if len(parts) == 0 {
		return nil
	}
	ev.Content = &agentrunnerv1.Content{Role: agent.RoleModel, Parts: parts}
	ev.CustomMetadata = metadata(s.contextID, s.taskID, s.state)
	if !s.yield(ev, nil) {
		return errStopped
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}
