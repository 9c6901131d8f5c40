package turn

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// invocation is one run in progress, as the runner drives it.
type invocation struct {
	env   *Env
	job   *Job
	sink  Sink
	prep  *Prepared
	key   store.SessionKey
	inv   *agent.Invocation
	hctx  agent.InvocationContext // what run-level plugin hooks get
	first agent.Agent             // the agent selection picked
	// current is the agent whose events are being stored; a run that is
	// cancelled stores its last event in its name.
	current agent.Agent
	// j is the run's way to the store and its readers.
	j *journal
	// failures holds each agent's last step (runrec.Failures): a run
	// whose agents return while one's last step failed ends FAILED.
	failures runrec.Failures
	// streamed holds, per agent and branch, the parts of the partial
	// events it streamed since its last complete event: what a cut-off
	// answer had said so far (parallel branches stream at once).
	streamed []streamedText
	// speaker is the agent (and branch) that produced the run's latest
	// event or error: a run stopped while nobody was streaming says so
	// in its name.
	speaker streamedText
	// cuts are the model calls the run's end cut off (cut.go).
	cuts *agent.CutCalls
	// partialPrefix and partials make the ids of partial events (see
	// newEventID).
	partialPrefix string
	partials      uint64
}

// Execute runs a prepared execution to its end and returns its final
// record and terminal error. The record is on disk before it returns
// (unless the session was taken over, or the store refused it: then the
// sink is told), so that the readers, who hear of the end only from the
// caller, after this, are never told a status a crash could take back.
// However the run ended, what it stored is the next run's starting point
// (see history).
func Execute(ctx context.Context, env *Env, job *Job, p *Prepared, sink Sink) (*agentrunnerv1.Run, error) {
	ctx, cuts := agent.WithCutCalls(ctx)
	in := &invocation{cuts: cuts, env: env, job: job, sink: sink, prep: p, key: job.Key, inv: p.inv, hctx: p.inv.Context(ctx, p.first), first: p.first, current: p.first}
	in.j = newJournal(env, job.Key, sink, p.inv, in.holds)
	if chk := env.Budgets.ForRun(env.Spend, p.sess, sink.Live(), env.Now); chk != nil {
		p.inv.SetBudget(chk.Call)
		p.inv.SetReserve(chk.Reserve)
	}
	err := in.runGuarded(ctx)
	env.Plugins.AfterRun(in.hctx, err)
	rec, err := in.finalize(ctx, err)
	env.History.Put(job.Key, p.sess, p.inv.Events())
	return rec, err
}

// runGuarded runs the invocation; a panic in the runner's own code ends
// the run with an error instead of the process.
func (in *invocation) runGuarded(ctx context.Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &agent.PanicError{Where: "runner", Value: v}
			in.env.Log.Error("panic recovered", "where", "runner", "run", in.job.ID, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	if in.job.Resume != nil {
		err = in.resume(ctx)
	} else {
		err = in.run(ctx)
	}
	if err == nil {
		// The run's last step: a summarizer that panics is caught here
		// like any agent.
		err = in.compact(ctx)
	}
	return err
}

// run stores the user's message, then lets before_run answer or runs the
// agents, following transfers the agents left to the runner.
func (in *invocation) run(ctx context.Context) error {
	if err := in.settleWaiting(ctx); err != nil {
		return err
	}
	content, err := in.env.Plugins.BeforeRun(in.hctx)
	if err != nil {
		if err := in.j.publishErr(ctx, &agent.AgentError{Agent: in.first.Name(), Err: err}); err != nil {
			return err
		}
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

// resume is a resumed run's execution: store the answers, then let the
// agent go on.
func (in *invocation) resume(ctx context.Context) error {
	rq := in.job.Resume
	if in.prep.waits || in.prep.answered {
		return nil // the record says what the run waits on, or that it is done
	}
	// The steps the run's agents took before the cut count as theirs.
	for _, ev := range runEvents(in.inv.Events(), in.job.ID) {
		in.failures.Event(ev)
	}
	if rq.Answers != nil {
		ev, err := in.userEvent(ctx, rq.Answers, nil)
		if err != nil {
			return err
		}
		stored, err := in.j.write(ctx, ev, nobody)
		if err != nil {
			return fmt.Errorf("append answers: %w", err)
		}
		in.inv.SetUserContent(stored.GetContent())
	}
	// The agents the runner ran before the cut run again in order, each
	// going on where it was (agent.Replay); a transfer the runner had
	// followed is followed again.
	tops := in.inv.Replay().Tops()
	for i, a := 0, in.first; a != nil; i++ {
		next, err := in.runAgent(ctx, a)
		if err != nil {
			return err
		}
		if next == nil && i+1 < len(tops) && !in.inv.Ended() {
			next, _ = in.env.Tree.Find(tops[i+1])
		}
		a = next
	}
	return nil
}

// settleWaiting stores the user's message, settling the session's run
// that waits on the caller around it: a plain message supersedes its
// calls first, so that the model reads an answer to each before the
// message; a message that answers them ends it once they are stored.
func (in *invocation) settleWaiting(ctx context.Context) error {
	w := in.prep.waiting
	if w != nil && !w.answered {
		stored, _, err := in.env.supersede(ctx, in.inv.Events(), w, in.job.ID)
		if err != nil {
			return err
		}
		in.j.note(stored)
	}
	if err := in.appendUserEvent(ctx); err != nil {
		return err
	}
	if w != nil && w.answered {
		return in.env.settleAnswered(ctx, w, in.job.ID)
	}
	return nil
}

// appendUserEvent runs the on_user_message hooks, then stores the user's
// message with the request's state delta.
func (in *invocation) appendUserEvent(ctx context.Context) error {
	msg := in.job.Message
	replaced, err := in.env.Plugins.OnUserMessage(in.hctx, msg)
	if err == nil && replaced != nil {
		if verr := ValidateMessage(replaced); verr != nil {
			err = fmt.Errorf("replacement message: %w", verr)
		} else {
			msg = replaced
		}
	}
	if err != nil {
		if err := in.j.publishErr(ctx, &agent.AgentError{Agent: in.first.Name(), Err: err}); err != nil {
			return err
		}
	}
	userEv, err := in.userEvent(ctx, msg, in.job.StateDelta)
	if err != nil {
		return err
	}
	// State the on_user_message hooks changed is stored with the message;
	// the request's own delta wins for a key both set.
	agent.FlushActions(in.hctx, userEv)
	to := attachers
	if in.hctx.RunConfig().GetStreamUserEvent() {
		to = everyone
	}
	stored, err := in.j.write(ctx, userEv, to)
	if err != nil {
		return fmt.Errorf("append user event: %w", err)
	}
	in.inv.SetUserContent(stored.GetContent())
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
	target, ok := in.env.Tree.Find(transfer)
	if !ok {
		return nil, in.j.publishErr(ctx, &agent.AgentError{Agent: a.Name(), Err: fmt.Errorf("transfer to unknown agent %q", transfer)})
	}
	return target, nil
}

// under reports whether the agent named name is target or one of its
// descendants.
func (in *invocation) under(target, name string) bool {
	a, ok := in.env.Tree.Find(name)
	for ok && a != nil {
		if a.Name() == target {
			return true
		}
		a = in.env.Tree.Parent(a)
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
	errors.As(err, &ae) // err is an *agent.AgentError from here on
	name, st := ae.Agent, runrec.InBandStatus(err)
	in.failures.Step(name, st)
	// The failure is stored as well, before it is delivered: the rules
	// that read a run's failures from the stored events (the next
	// message's agent, Tree.SelectAgent; a resume, agent.Replay; the
	// status after a crash) would otherwise not see it, and the next
	// message would go to the failing agent again if it had answered
	// before.
	if _, serr := in.emit(ctx, failureEvent(ae, st)); serr != nil {
		return serr
	}
	in.speaker = streamedText{author: name}
	return in.j.publishErr(ctx, err)
}

// failureEvent is the event that stores the in-band failure ae (of
// status st) in the failing agent's branch: no content, the status's
// code as error_code, the agent's error as error_message (so that the
// run's error read from it, runrec.EventFailure, is the in-band one's,
// "agent <name>: <error>"). It does not say turn_complete: an in-band
// error need not end the agent's turn (a tool that panicked, after
// which the model goes on), and a resume (agent.Replay) must not take
// the agent as finished.
func failureEvent(ae *agent.AgentError, st *agentrunnerv1.Status) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{
		Author: ae.Agent, Branch: ae.Branch,
		ErrorCode: runrec.CodeName(st.GetCode()), ErrorMessage: ae.Err.Error(),
	}
}

// emit completes an event, lets the on_event hooks replace it, and
// writes it to the journal: stored and handed to the readers when
// complete, handed to them unstored when partial. It returns the event
// as stored (nil for a partial one).
func (in *invocation) emit(ctx context.Context, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	in.complete(ev, nil)
	if ev.Partial {
		return nil, in.emitPartial(ctx, ev)
	}
	ev, err := in.onEvent(ctx, ev)
	if err != nil {
		return nil, err
	}
	stored, err := in.j.write(ctx, ev, everyone)
	if err != nil {
		if ctx.Err() != nil {
			in.unstoredCall(ev)
			return nil, fmt.Errorf("run %s: %w", in.hctx.InvocationID(), ctx.Err())
		}
		return nil, fmt.Errorf("append event of agent %s: %w", ev.GetAuthor(), err)
	}
	in.spoke(stored, false) // the complete event supersedes its agent's partials
	in.failures.Event(stored)
	return stored, nil
}

// emitPartial lets the on_event hooks see a partial event, then yields it
// unstored: its text reaches the caller at once, so a hook that redacts
// the stored answer must be able to redact its pieces too. A replacement
// stays partial; plugin.ErrDropPartial drops the event. State a hook
// changes is not flushed into a partial (it would be lost with it): it
// stays pending and lands in the next complete event.
func (in *invocation) emitPartial(ctx context.Context, ev *agentrunnerv1.Event) error {
	// The hot path of streaming: without on_event hooks, OnEvent returns
	// at once and nothing is allocated.
	rep, err := in.env.Plugins.OnEvent(in.hctx, ev)
	switch {
	case errors.Is(err, plugin.ErrDropPartial):
		return nil
	case err != nil:
		if err := in.j.publishErr(ctx, &agent.AgentError{Agent: ev.GetAuthor(), Err: err}); err != nil {
			return err
		}
	case rep != nil && rep != ev:
		rep.Partial = true // a partial's replacement is not stored either
		in.complete(rep, ev)
		ev = rep
	}
	// What the caller saw of the answer so far: a run stopped before the
	// complete event stores it (see stopped).
	in.spoke(ev, true)
	return in.j.publish(ctx, ev)
}

// onEvent runs the on_event hooks on a complete event. A replacement is
// completed from the original (author, branch, ids, time); a hook's error
// is delivered and the original goes on.
func (in *invocation) onEvent(ctx context.Context, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	rep, err := in.env.Plugins.OnEvent(in.hctx, ev)
	if err != nil {
		return ev, in.j.publishErr(ctx, &agent.AgentError{Agent: ev.GetAuthor(), Err: err})
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
		ev.Id = in.newEventID(ev.Partial)
	}
	if ev.InvocationId == "" {
		ev.InvocationId = in.hctx.InvocationID()
	}
	if ev.Timestamp == nil {
		ev.Timestamp = orig.GetTimestamp()
	}
	if ev.Timestamp == nil {
		ev.Timestamp = timestamppb.New(in.env.Now())
	}
}

// newEventID returns a fresh id for an event. A complete event's comes
// from the generator; a partial one's, of which a streamed answer has one
// a word, is the run's own prefix (an id from the generator, taken once)
// and a count: as unique, and no random bits to draw for each. The
// invocation's events are emitted one at a time, so the count needs no
// lock.
func (in *invocation) newEventID(partial bool) string {
	if !partial {
		return in.env.NewID()
	}
	if in.partialPrefix == "" {
		in.partialPrefix = in.env.NewID() + "."
	}
	in.partials++
	// Made in a buffer on the stack: one allocation, the string's.
	var buf [64]byte
	return string(strconv.AppendUint(append(buf[:0], in.partialPrefix...), in.partials, 10))
}

// userEvent builds the event of the user's message: role "user", inline
// blobs saved as artifacts and replaced by placeholders when the run asks
// for it, and the request's state delta.
func (in *invocation) userEvent(ctx context.Context, msg *agentrunnerv1.Content, delta *structpb.Struct) (*agentrunnerv1.Event, error) {
	content := msg.CloneVT()
	content.Role = agent.RoleUser
	now := in.env.Now()
	timeAnswers(content, in.inv.Events(), now)
	ev := &agentrunnerv1.Event{
		Id:           in.env.NewID(),
		InvocationId: in.hctx.InvocationID(),
		Author:       agent.UserAuthor,
		Timestamp:    timestamppb.New(now),
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
		v, err := in.env.Store.SaveArtifact(ctx, in.key, name, p)
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

// streamedText is what one agent, in one branch, streamed since its last
// complete event.
type streamedText struct {
	author, branch string
	parts          []*agentrunnerv1.Part
}

// spoke notes an event of an agent: a partial one adds to what the agent
// streamed in its branch, a complete one supersedes it.
func (in *invocation) spoke(ev *agentrunnerv1.Event, partial bool) {
	author, branch := ev.GetAuthor(), ev.GetBranch()
	if author == agent.UserAuthor {
		return
	}
	in.speaker = streamedText{author: author, branch: branch}
	for i := range in.streamed {
		st := &in.streamed[i]
		if st.author != author || st.branch != branch {
			continue
		}
		if partial {
			st.parts = append(st.parts, ev.GetContent().GetParts()...)
		} else {
			in.streamed = slices.Delete(in.streamed, i, i+1)
		}
		return
	}
	if partial {
		in.streamed = append(in.streamed, streamedText{author: author, branch: branch, parts: slices.Clone(ev.GetContent().GetParts())})
	}
}
