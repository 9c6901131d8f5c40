package turn

import (
	"context"
	"fmt"
	"slices"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/internal/runrec"
	"github.com/agentrunner/agentrunner/store"
)

// Prepare loads the session of a run that is about to start, as the
// last writer left it (the caller holds the session), and checks the
// request against it: a request that cannot run fails here, before
// anything is stored.
func Prepare(ctx context.Context, env *Env, job *Job) (*Prepared, error) {
	sess, events, err := env.History.Load(ctx, env.Store, job.Key)
	if err != nil {
		return nil, fmt.Errorf("load session: %w", err)
	}
	if job.Resume != nil {
		return env.prepareResume(ctx, job, sess, events)
	}
	if err := checkResponses(events, job.Message); err != nil {
		return nil, err
	}
	if chk := env.Budgets.ForRun(env.Spend, sess, &agentrunnerv1.Run{RunId: job.ID}, env.Now); chk != nil {
		// Refused before anything is stored.
		if err := chk.Start(ctx); err != nil {
			return nil, err
		}
	}
	waiting, err := env.findWaiting(ctx, events, job.Message)
	if err != nil {
		return nil, err
	}
	first := env.Tree.SelectAgent(events, job.Message)
	inv := env.newInvocation(job.Key, job.ID, sess, events, job.Config, nil)
	return &Prepared{sess: sess, first: first, inv: inv, waiting: waiting}, nil
}

// prepareResume checks a resume request against the session and decides
// where the run goes on.
func (env *Env) prepareResume(ctx context.Context, job *Job, sess *agentrunnerv1.Session, events []*agentrunnerv1.Event) (*Prepared, error) {
	rq := job.Resume
	// A run that waits on its caller is answered only while nothing came
	// after it: else the answers would land after another run's events,
	// whose message already changed what the run was asked. An interrupted
	// run may go on after a queued run that ran meanwhile.
	if last := sess.GetLastSequence(); last > rq.LastSeq && rq.From == agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		return nil, fmt.Errorf("run %s ended at event %d and the session has moved on to %d: %w", job.ID, rq.LastSeq, last, runrec.ErrNotResumable)
	}
	inDoubt, err := env.inDoubtCalls(ctx, job)
	if err != nil {
		return nil, err
	}
	waiting := runrec.WaitingCalls(events, &agentrunnerv1.Run{RunId: job.ID, FirstSequence: rq.FirstSeq})
	answered, err := answeredCalls(job, rq, waiting, inDoubt)
	if err != nil {
		return nil, err
	}
	var unresolved []string
	for _, id := range waiting {
		if !slices.Contains(answered, id) && !slices.Contains(rq.RetryCallIDs, id) {
			unresolved = append(unresolved, id)
		}
	}
	if len(unresolved) > 0 && len(answered)+len(rq.RetryCallIDs) > 0 {
		return nil, fmt.Errorf("answer or retry every call run %s waits on; left: %q: %w", job.ID, unresolved, store.ErrInvalidArgument)
	}
	p := &Prepared{sess: sess, waits: len(unresolved) > 0}
	switch {
	case len(answered) > 0:
		p.first = env.Tree.SelectAgent(events, rq.Answers)
	case len(rq.RetryCallIDs) > 0:
		p.first = env.callerOf(events, rq.RetryCallIDs[0])
	default:
		p.first, p.then, p.answered = env.resumeAgent(events, job.ID)
	}
	p.inv = env.newInvocation(job.Key, job.ID, sess, events, rq.Config, rq.RetryCallIDs)
	p.inv.SetUserContent(userMessageOf(events, rq.FirstSeq))
	return p, nil
}

// answeredCalls checks a resume request's answers and retries against
// the calls the run waits on and those left in doubt, and returns the
// calls it answers.
func answeredCalls(job *Job, rq *Resume, waiting []string, inDoubt map[string]bool) ([]string, error) {
	var answered []string
	for _, part := range rq.Answers.GetParts() {
		id := part.GetFunctionResponse().GetId()
		if id == "" || !slices.Contains(waiting, id) {
			return nil, fmt.Errorf("answers: %q is not a call run %s waits on (it waits on %q): %w", id, job.ID, waiting, store.ErrInvalidArgument)
		}
		answered = append(answered, id)
	}
	for _, id := range rq.RetryCallIDs {
		if !inDoubt[id] || slices.Contains(answered, id) {
			return nil, fmt.Errorf("retry_call_ids: %q is not a call of run %s left in doubt, or it is answered too: %w", id, job.ID, store.ErrInvalidArgument)
		}
	}
	return answered, nil
}

// inDoubtCalls returns the run's calls that the ledger shows started and
// never finished, other than those that wait for the caller.
func (env *Env) inDoubtCalls(ctx context.Context, job *Job) (map[string]bool, error) {
	calls, err := env.Store.ListToolCalls(ctx, job.Key)
	if err != nil {
		return nil, fmt.Errorf("read the tool-call ledger: %w", err)
	}
	open := map[string]bool{}
	for _, c := range calls {
		if c.GetInvocationId() == job.ID && c.GetResponseSequence() == 0 && !c.GetWaitsForCaller() {
			open[c.GetCallId()] = true
		}
	}
	return open, nil
}

// callerOf returns the agent that made a call, or the root.
func (env *Env) callerOf(events []*agentrunnerv1.Event, callID string) agent.Agent {
	for _, ev := range events {
		for _, p := range ev.GetContent().GetParts() {
			if p.GetFunctionCall().GetId() == callID {
				if a, ok := env.Tree.Find(ev.GetAuthor()); ok {
					return a
				}
			}
		}
	}
	return env.Tree.Root()
}

// resumeAgent returns where a resumed run goes on: the agent to run first
// and the agents to run after it, or that the run's agents had finished
// (treeFinished): then there is nothing left to do. An agent whose last
// event is a finished answer inside sequential agents is done: the run
// goes on with the agents after it. Any other end (a call, a result, a
// custom agent's progress, a loop or parallel agent still going) means
// the agent that stored the run's last event was cut off and runs again.
func (env *Env) resumeAgent(events []*agentrunnerv1.Event, runID string) (agent.Agent, []agent.Agent, bool) {
	for i := len(events) - 1; i >= 0; i-- {
		ev := events[i]
		if ev.GetInvocationId() != runID || ev.GetAuthor() == agent.UserAuthor || len(ev.GetContent().GetParts()) == 0 {
			continue
		}
		a, ok := env.Tree.Find(ev.GetAuthor())
		if !ok {
			continue
		}
		run := runEvents(events, runID)
		if env.treeFinished(run) {
			return a, nil, true
		}
		if finalAnswer(ev) && ev.GetTurnComplete() && ev.GetErrorCode() == "" && !ev.GetInterrupted() {
			if rest, ok := env.after(a, run); ok && len(rest) > 0 {
				return rest[0], rest[1:], false
			}
		}
		return a, nil, false
	}
	return env.Tree.SelectAgent(events, nil), nil, false
}

// after returns the agents a run still had to run once agent a had
// finished: the later sub-agents of each sequential agent above a, up to
// the agent the runner itself ran. ok is false when an agent above a is
// of another kind, whose next step the events do not tell.
func (env *Env) after(a agent.Agent, run []*agentrunnerv1.Event) (rest []agent.Agent, ok bool) {
	for {
		p := env.Tree.Parent(a)
		if p == nil || transferredTo(run, a.Name()) {
			return rest, true
		}
		if env.Tree.Kind(p) != agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL {
			return nil, false
		}
		subs := p.SubAgents()
		for i, s := range subs {
			if s.Name() == a.Name() {
				rest = append(rest, subs[i+1:]...)
			}
		}
		a = p
	}
}

// runEvents returns the events of the run, in order.
func runEvents(events []*agentrunnerv1.Event, runID string) []*agentrunnerv1.Event {
	var out []*agentrunnerv1.Event
	for _, ev := range events {
		if ev.GetInvocationId() == runID {
			out = append(out, ev)
		}
	}
	return out
}

// userMessageOf returns the content of the event with sequence seq, when
// the loaded events hold it.
func userMessageOf(events []*agentrunnerv1.Event, seq uint64) *agentrunnerv1.Content {
	for _, ev := range events {
		if ev.GetSequence() == seq {
			return ev.GetContent()
		}
	}
	return nil
}

// checkResponses checks the function responses of a new message against
// the calls the session waits on (see pendingCalls). Every
// response must answer one of them, and a reply must answer every call its
// run waits on, so that the agent goes on with all of its answers. The
// error wraps store.ErrInvalidArgument and names the ids; it comes before
// anything is stored.
func checkResponses(events []*agentrunnerv1.Event, msg *agentrunnerv1.Content) error {
	var answers []string
	for i, p := range msg.GetParts() {
		fr := p.GetFunctionResponse()
		if fr == nil {
			continue
		}
		if fr.GetId() == "" {
			// It would answer nothing, and the model would be sent a
			// result without its call.
			return fmt.Errorf("new_message.parts[%d].function_response: id is empty; give the id of the call it answers: %w", i, store.ErrInvalidArgument)
		}
		answers = append(answers, fr.GetId())
	}
	if len(answers) == 0 {
		return nil
	}
	pending := runrec.PendingCalls(events) // call id -> invocation id
	var unknown []string
	var superseded map[string]bool
	runs := map[string]bool{}
	for _, id := range answers {
		inv, ok := pending[id]
		if !ok {
			// A call a new message superseded may still be answered: its
			// interim result gives way to this one.
			if superseded == nil {
				superseded = supersededCalls(events)
			}
			if !superseded[id] {
				unknown = append(unknown, id)
			}
			continue
		}
		runs[inv] = true
	}
	if len(unknown) > 0 {
		return fmt.Errorf("function responses to calls nobody waits on (unknown or already answered): %q: %w", unknown, store.ErrInvalidArgument)
	}
	var missing []string
	for id, inv := range pending {
		if runs[inv] && !slices.Contains(answers, id) {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("the reply leaves calls its run waits on unanswered: %q: %w", missing, store.ErrInvalidArgument)
	}
	return nil
}
