package runner

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Request is one Run: a user message sent to a session of the runner's app.
type Request struct {
	// UserID and SessionID address an existing session of the runner's app.
	UserID, SessionID string
	// NewMessage is the user's message. Its role is forced to "user".
	NewMessage *agentrunnerv1.Content
	// StateDelta is applied with the user message, before the agent runs.
	StateDelta *structpb.Struct
	// Config tunes the run; nil means defaults.
	Config *agentrunnerv1.RunConfig
	// RequestID, when set, makes the request idempotent within its
	// session: a request with the same id and payload gets the first
	// one's run; with another payload it is refused (store.ErrAlreadyExists
	// naming the run).
	RequestID string
	// Strategy says what happens when the session has an active run;
	// unspecified means MULTITASK_STRATEGY_REJECT.
	Strategy agentrunnerv1.MultitaskStrategy
	// OnDisconnect says what happens when the reader that started the run
	// stops before it ends; unspecified means ON_DISCONNECT_CANCEL.
	OnDisconnect agentrunnerv1.OnDisconnect
	// Timeout bounds the run from its start; zero means no bound. The
	// run's own deadline: the caller's context bounds only its reading.
	Timeout time.Duration
	// SharedEvents tells Stream that its reader only reads the stored
	// events it gets (a server encodes them): it gets the runner's own
	// instances instead of copies, which it must not change. A copy costs
	// as much as encoding the event again. A run executed on the reader's
	// goroutine then also hands it its live first record, which the
	// reader must not keep past its yield: the run changes it afterwards.
	SharedEvents bool
}

// input is the payload a request_id covers.
func (req Request) input() *agentrunnerv1.RunInput {
	return &agentrunnerv1.RunInput{NewMessage: req.NewMessage, StateDelta: req.StateDelta, RunConfig: req.Config}
}

// errStopped tells run's callers that the consumer stopped reading.
var errStopped = errors.New("consumer stopped")

// Run runs one invocation: it appends req.NewMessage to the session, runs
// the agent the selection rules pick (and the agents it transfers to), and
// streams the events. It is Stream without the run records.
//
// Complete events are yielded after they are persisted, with their sequence
// set. Each yielded event is the caller's own copy: changing it changes
// nothing the runner keeps. Partial events are yielded without being
// stored, after the on_event hooks saw them (which may replace or drop
// them). The stored user event is yielded first only when
// req.Config.stream_user_event is set. An error that errors.As to
// *agent.AgentError is delivered in place of an event and the run goes on.
// Any other error is terminal and the last element: it wraps
// store.ErrNotFound for a missing session, store.ErrInvalidArgument for an
// invalid request, ErrRunInProgress when the session has a run in progress,
// agent.ErrMaxLLMCalls when the LLM call limit is reached, or
// context.Canceled or context.DeadlineExceeded when the run was cancelled
// or timed out.
//
// The plugins' hooks run as package plugin describes. Stopping the
// iteration early cancels the run (unless req.OnDisconnect says to go on)
// and returns once it has released the session. The sequence is
// single-use.
func (r *Runner) Run(ctx context.Context, req Request) iter.Seq2[*agentrunnerv1.Event, error] {
	return func(yield func(*agentrunnerv1.Event, error) bool) {
		for u, err := range r.Stream(ctx, req) {
			switch {
			case err != nil:
				yield(nil, err)
				return
			case u.Err != nil:
				if !yield(nil, u.Err) {
					return
				}
			case u.Event != nil:
				if !yield(u.Event, nil) {
					return
				}
			}
		}
	}
}

// invocation is one run in progress, as the runner drives it.
type invocation struct {
	r     *Runner
	lr    *liveRun
	prep  *prepared
	key   store.SessionKey
	inv   *agent.Invocation
	hctx  agent.InvocationContext // what run-level plugin hooks get
	first agent.Agent             // the agent selection picked
	// current is the agent whose events are being stored; a run that is
	// cancelled stores its last event in its name.
	current agent.Agent
	yield   func(*agentrunnerv1.Event, error) bool
	// recordWritten reports that the record is in the store with this
	// execution's status; until then the next event carries it.
	recordWritten bool
	// inMemory reports that the session was added to memory in this run.
	inMemory bool
	// failure is how the agents' last step ended when it ended in an
	// error: a stored event with an error_code (a model that failed after
	// its retries), or an in-band error with nothing after it. An agent
	// event stored after it clears it: the agent recovered. A run whose
	// agents return with a failure ends FAILED.
	failure *agentrunnerv1.Status
	// streamed holds the parts of the partial events streamed since the
	// last complete event: what a cut-off answer had said so far.
	streamed []*agentrunnerv1.Part
}

// run stores the user's message, then lets before_run answer or runs the
// agents, following transfers the agents left to the runner.
func (in *invocation) run(ctx context.Context, req Request) error {
	if err := in.settleWaiting(ctx, req); err != nil {
		return err
	}
	content, err := in.r.plugins.BeforeRun(in.hctx)
	if err != nil && !in.yield(nil, &agent.AgentError{Agent: in.first.Name(), Err: err}) {
		return errStopped
	}
	// The answer, or the state the hooks changed, lands in an event of the
	// agent that would have answered.
	ev := &agentrunnerv1.Event{Content: content, Author: in.first.Name(), InvocationId: in.hctx.InvocationID()}
	agent.FlushActions(in.hctx, ev)
	if content != nil || ev.Actions != nil {
		if content != nil && content.Role == "" {
			content.Role = agent.RoleModel
		}
		if _, err := in.emit(ctx, ev); err != nil || content != nil {
			return err
		}
	}
	for a := in.first; a != nil; {
		if a, err = in.runAgent(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// settleWaiting stores the user's message, settling the session's run
// that waits on the caller around it: a plain message supersedes its
// calls first, so that the model reads an answer to each before the
// message; a message that answers them ends it once they are stored.
func (in *invocation) settleWaiting(ctx context.Context, req Request) error {
	w := in.prep.waiting
	if w != nil && !w.answered {
		stored, _, err := in.r.supersede(ctx, in.inv.Events(), w, in.lr.id)
		if err != nil {
			return err
		}
		in.inv.Record(nil, stored)
	}
	if err := in.appendUserEvent(ctx, req); err != nil {
		return err
	}
	if w != nil && w.answered {
		return in.r.settleAnswered(ctx, w, in.lr.id)
	}
	return nil
}

// appendUserEvent runs the on_user_message hooks, then stores the user's
// message with the request's state delta.
func (in *invocation) appendUserEvent(ctx context.Context, req Request) error {
	msg := req.NewMessage
	replaced, err := in.r.plugins.OnUserMessage(in.hctx, msg)
	if err == nil && replaced != nil {
		if verr := validateMessage(replaced); verr != nil {
			err = fmt.Errorf("replacement message: %w", verr)
		} else {
			msg = replaced
		}
	}
	if err != nil && !in.yield(nil, &agent.AgentError{Agent: in.first.Name(), Err: err}) {
		return errStopped
	}
	userEv, err := in.userEvent(ctx, msg, req.StateDelta)
	if err != nil {
		return err
	}
	// State the on_user_message hooks changed is stored with the message;
	// the request's own delta wins for a key both set.
	agent.FlushActions(in.hctx, userEv)
	stored, err := in.append(ctx, userEv)
	if err != nil {
		return fmt.Errorf("append user event: %w", err)
	}
	in.inv.Record(userEv.GetActions().GetStateDelta(), stored) // with "temp:" keys, which the store dropped
	in.inv.SetUserContent(stored.GetContent())
	if !in.hctx.RunConfig().GetStreamUserEvent() {
		in.lr.publish(Update{Event: stored, attachOnly: true})
		return nil
	}
	if !in.yield(stored, nil) {
		return errStopped
	}
	return nil
}

// runAgent runs one agent of the invocation to its end, persisting and
// yielding its events. It returns the agent a transfer hands over to, if
// any.
func (in *invocation) runAgent(ctx context.Context, a agent.Agent) (next agent.Agent, err error) {
	var transfer string
	in.current = a
	for ev, err := range a.Run(in.inv.Context(ctx, a)) {
		if err != nil {
			var ae *agent.AgentError
			if transfer != "" && errors.As(err, &ae) && in.under(transfer, ae.Agent) {
				transfer = "" // the target ran inside the turn, and failed
			}
			if err := in.deliver(ctx, a, err); err != nil {
				return nil, err
			}
			continue
		}
		if ev == nil {
			continue
		}
		stored, err := in.emit(ctx, ev)
		if err != nil {
			return nil, err
		}
		if t := stored.GetActions().GetTransferToAgent(); t != "" {
			transfer = t
		} else if transfer != "" && stored != nil && in.under(transfer, stored.GetAuthor()) {
			// The target already took over inside the turn: it, or an
			// agent under it (a workflow target writes no event of its
			// own), wrote this.
			transfer = ""
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("run %s: %w", in.hctx.InvocationID(), err)
	}
	if transfer == "" || in.inv.Ended() {
		return nil, nil
	}
	target, ok := in.r.tree.Find(transfer)
	if !ok {
		if !in.yield(nil, &agent.AgentError{Agent: a.Name(), Err: fmt.Errorf("transfer to unknown agent %q", transfer)}) {
			return nil, errStopped
		}
		return nil, nil
	}
	return target, nil
}

// under reports whether the agent named name is target or one of its
// descendants.
func (in *invocation) under(target, name string) bool {
	a, ok := in.r.tree.Find(name)
	for ok && a != nil {
		if a.Name() == target {
			return true
		}
		a = in.r.tree.Parent(a)
	}
	return false
}

// deliver yields an agent's error in-band, or returns it when it ends the
// run.
func (in *invocation) deliver(ctx context.Context, a agent.Agent, err error) error {
	var ae *agent.AgentError
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("run %s: %w", in.hctx.InvocationID(), ctx.Err())
	case errors.Is(err, agent.ErrMaxLLMCalls):
		return err
	case !errors.As(err, &ae):
		err = &agent.AgentError{Agent: a.Name(), Err: err}
	}
	in.failure = inBandStatus(err)
	if !in.yield(nil, err) {
		return errStopped
	}
	return nil
}

// emit completes an event, lets the on_event hooks replace it, persists it
// when complete, and yields the caller's copy. It returns the stored event
// (nil for a partial one).
func (in *invocation) emit(ctx context.Context, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	in.complete(ev, nil)
	if ev.Partial {
		return nil, in.emitPartial(ev)
	}
	ev, err := in.onEvent(ev)
	if err != nil {
		return nil, err
	}
	stored, err := in.append(ctx, ev)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("run %s: %w", in.hctx.InvocationID(), ctx.Err())
		}
		return nil, fmt.Errorf("append event of agent %s: %w", ev.GetAuthor(), err)
	}
	in.inv.Record(ev.GetActions().GetStateDelta(), stored)
	in.streamed = in.streamed[:0] // the complete event supersedes the partials
	if stored.GetAuthor() != agent.UserAuthor {
		in.failure = eventFailure(stored)
	}
	// The stored instance stays with the runner (the session view and the
	// history cache); each reader of the run gets a copy of its own.
	if !in.yield(stored, nil) {
		return nil, errStopped
	}
	return stored, nil
}

// append stores a complete event. The first event an execution stores
// carries the run record, in the same transaction: the user message of a
// new run, or the first event of a resumed one.
func (in *invocation) append(ctx context.Context, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	var stored *agentrunnerv1.Event
	var err error
	if in.recordWritten {
		stored, err = in.r.store.AppendEvent(ctx, in.key, ev)
	} else {
		// No copy: while the run runs, only this goroutine changes the
		// record (noteStored, under the lock, after this returns), and
		// the store does not keep what it is given.
		stored, _, err = in.r.store.AppendRunEvent(ctx, in.key, ev, in.lr.rec)
		in.recordWritten = err == nil
	}
	if err == nil {
		in.lr.noteStored(stored)
		in.addToMemory(ctx)
	}
	return stored, err
}

// addToMemory adds the session to memory after a complete event, when
// the app says so: once per run, since the session then stays in memory
// and the store indexes every later event as it stores it. Memory is a
// convenience for later sessions: a failure is logged, not the run's.
func (in *invocation) addToMemory(ctx context.Context) {
	if !in.r.addToMemory || in.inMemory {
		return
	}
	if err := in.r.memory.AddSession(ctx, in.key); err != nil {
		in.r.log.Warn("add session to memory", "session", in.key.String(), "err", err)
		return
	}
	in.inMemory = true
}

// emitPartial lets the on_event hooks see a partial event, then yields it
// unstored: its text reaches the caller at once, so a hook that redacts
// the stored answer must be able to redact its pieces too. A replacement
// stays partial; plugin.ErrDropPartial drops the event. State a hook
// changes is not flushed into a partial (it would be lost with it): it
// stays pending and lands in the next complete event.
func (in *invocation) emitPartial(ev *agentrunnerv1.Event) error {
	// The hot path of streaming: without on_event hooks, OnEvent returns
	// at once and nothing is allocated.
	rep, err := in.r.plugins.OnEvent(in.hctx, ev)
	switch {
	case errors.Is(err, plugin.ErrDropPartial):
		return nil
	case err != nil:
		if !in.yield(nil, &agent.AgentError{Agent: ev.GetAuthor(), Err: err}) {
			return errStopped
		}
	case rep != nil && rep != ev:
		rep.Partial = true // a partial's replacement is not stored either
		in.complete(rep, ev)
		ev = rep
	}
	// What the caller saw of the answer so far: a run stopped before the
	// complete event stores it (see stopped).
	in.streamed = append(in.streamed, ev.GetContent().GetParts()...)
	if !in.yield(ev, nil) {
		return errStopped
	}
	return nil
}

// onEvent runs the on_event hooks on a complete event. A replacement is
// completed from the original (author, branch, ids, time); a hook's error
// is delivered and the original goes on.
func (in *invocation) onEvent(ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	rep, err := in.r.plugins.OnEvent(in.hctx, ev)
	if err != nil {
		if !in.yield(nil, &agent.AgentError{Agent: ev.GetAuthor(), Err: err}) {
			return nil, errStopped
		}
		return ev, nil
	}
	if rep != nil && rep != ev {
		rep.Partial = false // a complete event's replacement is stored
		in.complete(rep, ev)
		ev = rep
	}
	// State the hooks changed lands in the event they saw.
	agent.FlushActions(in.hctx, ev)
	return ev, nil
}

// complete fills in the ids and the time of an event, from orig where it
// has them.
func (in *invocation) complete(ev, orig *agentrunnerv1.Event) {
	if ev.Author == "" {
		ev.Author = orig.GetAuthor()
	}
	if ev.Branch == "" {
		ev.Branch = orig.GetBranch()
	}
	if ev.Id == "" {
		ev.Id = orig.GetId()
	}
	if ev.Id == "" {
		ev.Id = in.r.newID()
	}
	if ev.InvocationId == "" {
		ev.InvocationId = in.hctx.InvocationID()
	}
	if ev.Timestamp == nil {
		ev.Timestamp = orig.GetTimestamp()
	}
	if ev.Timestamp == nil {
		ev.Timestamp = timestamppb.New(in.r.now())
	}
}

// userEvent builds the event of the user's message: role "user", inline
// blobs saved as artifacts and replaced by placeholders when the run asks
// for it, and the request's state delta.
func (in *invocation) userEvent(ctx context.Context, msg *agentrunnerv1.Content, delta *structpb.Struct) (*agentrunnerv1.Event, error) {
	content := proto.CloneOf(msg)
	content.Role = agent.RoleUser
	ev := &agentrunnerv1.Event{
		Id:           in.r.newID(),
		InvocationId: in.hctx.InvocationID(),
		Author:       agent.UserAuthor,
		Timestamp:    timestamppb.New(in.r.now()),
		Content:      content,
	}
	var actions agentrunnerv1.EventActions
	if len(delta.GetFields()) > 0 {
		// A copy: hooks' changes are added to it, and the request is the
		// caller's.
		actions.StateDelta = proto.CloneOf(delta)
	}
	if in.hctx.RunConfig().GetSaveInputBlobsAsArtifacts() {
		if err := in.saveBlobs(ctx, content, &actions); err != nil {
			return nil, err
		}
	}
	if actions.StateDelta != nil || actions.ArtifactDelta != nil {
		ev.Actions = &actions
	}
	return ev, nil
}

// saveBlobs saves the message's inline blobs as artifacts and replaces each
// with a text placeholder.
func (in *invocation) saveBlobs(ctx context.Context, content *agentrunnerv1.Content, actions *agentrunnerv1.EventActions) error {
	for i, p := range content.Parts {
		blob := p.GetInlineData()
		if blob == nil {
			continue
		}
		name := blob.GetDisplayName()
		if name == "" {
			name = fmt.Sprintf("upload_%s_%d", in.hctx.InvocationID(), i)
		}
		v, err := in.r.store.SaveArtifact(ctx, in.key, name, p)
		if err != nil {
			return fmt.Errorf("save input blob %d as artifact %q: %w", i, name, err)
		}
		if actions.ArtifactDelta == nil {
			actions.ArtifactDelta = make(map[string]int64)
		}
		actions.ArtifactDelta[name] = v.GetVersion()
		content.Parts[i] = &agentrunnerv1.Part{Data: &agentrunnerv1.Part_Text{Text: fmt.Sprintf(
			"[Uploaded file saved as artifact %q version %d (%s, %d bytes)]",
			name, v.GetVersion(), blob.GetMimeType(), len(blob.GetData()))}}
	}
	return nil
}

// validateMessage checks the user message: present, with parts that all
// carry data.
func validateMessage(c *agentrunnerv1.Content) error {
	if len(c.GetParts()) == 0 {
		return fmt.Errorf("new_message has no parts: %w", store.ErrInvalidArgument)
	}
	for i, p := range c.Parts {
		if p.GetData() == nil {
			return fmt.Errorf("new_message part %d is empty: %w", i, store.ErrInvalidArgument)
		}
	}
	return nil
}
