package remotea2a

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

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
	s := newStream(ctx, yield, msg)
	s.start = s.now()
	err := r.send(tctx, s, &a2a.SendMessageRequest{Message: msg})
	if !s.done && s.taskID != "" {
		r.cancelTask(ctx, agent.Logger(ctx), s.taskID)
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
func (r *remote) cancelTask(ctx context.Context, log *slog.Logger, id a2a.TaskID) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
	defer cancel()
	if _, err := r.client.CancelTask(cctx, &a2a.CancelTaskRequest{ID: id}); err != nil {
		log = r.redact.logger(log) // the remote's error may echo the header
		log.WarnContext(cctx, "cancel remote A2A task", "agent", r.name, "task_id", string(id), "err", err)
	}
}

// abandon cancels the remote task that waits on calls of ev nobody will
// answer (agent.Config.Abandon): the run waiting on them was cancelled or
// a new message superseded them.
func (r *remote) abandon(ctx context.Context, ev *agentrunnerv1.Event, _ []string) {
	if id := idsOf(ev).taskID; id != "" && r.client != nil {
		r.cancelTask(ctx, r.log, a2a.TaskID(id))
	}
}

// stream turns the A2A events of one turn into the agent's events: the
// remote's tool traffic (function calls and responses, as adk-go marks
// them) as events of their own as it comes, its answer (text, files) as
// partial events when the run streams and one complete event that ends
// the turn.
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
	// open holds the remote's own calls (id to name) whose responses
	// have not come yet; stepped is set once a tool event was yielded.
	open    map[string]string
	stepped bool
	// done is set once the task reached a state that ends the turn.
	done bool
	// start is when the message was sent and first when the first A2A
	// event came back, on now, the runner's clock: the turn's timing.
	// (A stream without a clock is not timed.)
	now          func() time.Time
	start, first time.Time
}

func newStream(ctx agent.InvocationContext, yield func(*agentrunnerv1.Event, error) bool, msg *a2a.Message) *stream {
	return &stream{
		ctx: ctx, yield: yield, partials: ctx.RunConfig().GetStreamingMode() == agentrunnerv1.StreamingMode_STREAMING_MODE_SSE,
		contextID: msg.ContextID, taskID: msg.TaskID, artifacts: map[a2a.ArtifactID]int{}, open: map[string]string{},
		now: func() time.Time { return agent.Now(ctx) },
	}
}

// handle takes one A2A event.
func (s *stream) handle(ev a2a.Event) error {
	if s.now != nil && s.first.IsZero() {
		s.first = s.now()
	}
	if info := ev.TaskInfo(); info.TaskID != "" || info.ContextID != "" {
		s.taskID, s.contextID = info.TaskID, info.ContextID
	}
	switch v := ev.(type) {
	case *a2a.Message:
		// A direct answer, without a task: the turn is over.
		parts, _ := fromA2A(v.Parts)
		if err := s.collect(parts); err != nil {
			return err
		}
		s.done = true
		return s.finish(nil)
	case *a2a.Task:
		for _, art := range v.Artifacts {
			if art == nil { // a remote's JSON may say null
				continue
			}
			if err := s.collect(withoutWaited(fromA2A(art.Parts))); err != nil {
				return err
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

// withoutWaited leaves out the calls the remote waits on: its
// input-required status names them, and they are the caller's to answer.
func withoutWaited(parts []*agentrunnerv1.Part, longRunning []string) []*agentrunnerv1.Part {
	return slices.DeleteFunc(parts, func(p *agentrunnerv1.Part) bool {
		return slices.Contains(longRunning, p.GetFunctionCall().GetId()) && p.GetFunctionCall() != nil
	})
}

// collect adds parts to the answer, or yields them as a step when they
// hold tool traffic.
func (s *stream) collect(parts []*agentrunnerv1.Part) error {
	if slices.ContainsFunc(parts, isTool) {
		return s.step(parts)
	}
	s.parts = append(s.parts, parts...)
	return nil
}

// artifact takes an artifact update: its text streams as a partial event
// and is kept for the complete one; tool traffic is a step of its own,
// which replaces what the artifact streamed so far.
func (s *stream) artifact(v *a2a.TaskArtifactUpdateEvent) error {
	if v.Artifact == nil {
		return nil
	}
	parts := withoutWaited(fromA2A(v.Artifact.Parts))
	start, seen := s.artifacts[v.Artifact.ID]
	switch {
	case seen && (!v.Append || slices.ContainsFunc(parts, isTool)):
		// A replacement: drop what the artifact had (artifacts after it
		// in the answer are rare enough to be dropped with it, and
		// start again where the answer now ends if they come back).
		s.parts = s.parts[:start]
		for id, at := range s.artifacts {
			if at >= start {
				delete(s.artifacts, id)
			}
		}
	}
	if slices.ContainsFunc(parts, isTool) {
		return s.step(parts)
	}
	if _, seen := s.artifacts[v.Artifact.ID]; !seen {
		s.artifacts[v.Artifact.ID] = len(s.parts)
	}
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

// step yields the remote's tool traffic as complete events of the agent,
// in the order it came: what the answer held before it and the calls as
// one event (a model's turn), responses as another (role user, as a
// tool's result is). The calls stay open until their responses come.
func (s *stream) step(parts []*agentrunnerv1.Part) error {
	for len(parts) > 0 {
		responses := parts[0].GetFunctionResponse() != nil
		n := 1
		for n < len(parts) && (parts[n].GetFunctionResponse() != nil) == responses {
			n++
		}
		role, group := agent.RoleModel, parts[:n]
		if responses {
			role = agent.RoleUser
			if err := s.yieldStep(agent.RoleModel, s.parts); err != nil {
				return err
			}
		} else {
			group = append(s.parts, group...)
		}
		s.parts, s.artifacts = nil, map[a2a.ArtifactID]int{}
		for _, p := range group {
			if fc := p.GetFunctionCall(); fc != nil {
				s.open[fc.GetId()] = fc.GetName()
			}
			delete(s.open, p.GetFunctionResponse().GetId())
		}
		if err := s.yieldStep(role, group); err != nil {
			return err
		}
		parts = parts[n:]
	}
	return nil
}

// yieldStep yields one event of the turn that does not end it.
func (s *stream) yieldStep(role string, parts []*agentrunnerv1.Part) error {
	parts = mergeText(parts)
	if len(parts) == 0 {
		return nil
	}
	s.stepped = true
	// The author is set: an event of role user would otherwise be the
	// user's, and a tool's result is the agent's.
	ev := &agentrunnerv1.Event{Author: s.ctx.AgentName(), Content: &agentrunnerv1.Content{Role: role, Parts: parts}, CustomMetadata: metadata(s.contextID, s.taskID, s.state)}
	if !s.yield(ev, nil) {
		return errStopped
	}
	return nil
}

// closeOpen answers the remote's calls whose responses never came with an
// error the model can read: left open, they would make the run wait on a
// call nobody but the remote could answer.
func (s *stream) closeOpen() error {
	if len(s.open) == 0 {
		return nil
	}
	var parts []*agentrunnerv1.Part
	for _, id := range slices.Sorted(maps.Keys(s.open)) {
		resp, _ := newStruct(map[string]any{"error": "the remote agent did not report this call's result"})
		parts = append(parts, &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: s.open[id], Response: resp}}})
	}
	clear(s.open)
	if err := s.yieldStep(agent.RoleModel, s.parts); err != nil {
		return err
	}
	s.parts, s.artifacts = nil, map[a2a.ArtifactID]int{}
	return s.yieldStep(agent.RoleUser, parts)
}

// status takes the task's new status.
func (s *stream) status(st a2a.TaskStatus) error {
	s.state = st.State
	var said []*agentrunnerv1.Part
	if st.Message != nil {
		said, _ = fromA2A(st.Message.Parts)
	}
	switch st.State {
	case a2a.TaskStateCompleted:
		s.done = true
		if err := s.collect(said); err != nil {
			return err
		}
		return s.finish(nil)
	case a2a.TaskStateInputRequired:
		s.done = true
		if slices.ContainsFunc(said, func(p *agentrunnerv1.Part) bool { return p.GetFunctionCall() != nil }) {
			// The remote waits on calls of its own: the caller answers them.
			return s.finish(said)
		}
		return s.finish([]*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: s.inputRequired(said)}}})
	case a2a.TaskStateFailed, a2a.TaskStateRejected, a2a.TaskStateCanceled, a2a.TaskStateAuthRequired:
		// What came before the failure is kept; then the failure, in band.
		s.done = true
		if err := s.finish(nil); err != nil {
			return err
		}
		return fmt.Errorf("task %q ended in state %q: %s", s.taskID, st.State, orNone(textOf(said)))
	}
	return nil // submitted, working: the answer is still to come
}

// inputRequired is the call that makes the run wait for the caller when
// the remote asks in words.
func (s *stream) inputRequired(said []*agentrunnerv1.Part) *agentrunnerv1.FunctionCall {
	args, _ := newStruct(map[string]any{"message": textOf(said), "task_id": string(s.taskID)})
	return &agentrunnerv1.FunctionCall{Id: "a2a-" + agent.NewID(s.ctx), Name: InputRequiredName, Args: args}
}

// finish closes the remote's open calls and yields the turn's complete
// event: the answer collected, then waited (the calls the remote waits
// on, with its words), the calls' ids in long_running_tool_ids, the
// remote ids in custom_metadata. With nothing to say it yields nothing,
// unless steps were yielded: then an event without content still ends
// the turn, which the next turn starts after.
func (s *stream) finish(waited []*agentrunnerv1.Part) error {
	if err := s.closeOpen(); err != nil {
		return err
	}
	parts := mergeText(append(s.parts, waited...))
	s.parts, s.artifacts = nil, map[a2a.ArtifactID]int{}
	ev := &agentrunnerv1.Event{TurnComplete: true, CustomMetadata: metadata(s.contextID, s.taskID, s.state), Timing: s.timing()}
	for _, p := range waited {
		if fc := p.GetFunctionCall(); fc != nil {
			ev.LongRunningToolIds = append(ev.LongRunningToolIds, fc.GetId())
		}
	}
	if len(parts) == 0 && !s.stepped {
		return nil
	}
	if len(parts) > 0 {
		ev.Content = &agentrunnerv1.Content{Role: agent.RoleModel, Parts: parts}
	}
	if !s.yield(ev, nil) {
		return errStopped
	}
	return nil
}

// timing is the turn's timing as it ends: from the message sent to the
// remote's first event and to now.
func (s *stream) timing() *agentrunnerv1.Timing {
	if s.now == nil {
		return nil
	}
	t := &agentrunnerv1.Timing{StartTime: timestamppb.New(s.start), Duration: durationpb.New(s.now().Sub(s.start))}
	if !s.first.IsZero() {
		t.TimeToFirstChunk = durationpb.New(s.first.Sub(s.start))
	}
	return t
}

func orNone(s string) string {
	if s == "" {
		return "(no message)"
	}
	return s
}
