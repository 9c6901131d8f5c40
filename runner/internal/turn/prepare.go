package turn

import (
	"cmp"
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
	// Refused before anything is stored.
	if err := env.CheckBudgets(ctx, sess, &agentrunnerv1.Run{RunId: job.ID}, job.ID); err != nil {
		return nil, err
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
	inDoubt, err := env.inDoubtCalls(ctx, job, events)
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
	run := runEvents(events, job.ID)
	// The run goes on where it was cut (agent.Replay): from the agent it
	// started with, every agent that had finished skipped. Answers and
	// retried calls reach the agent that made the calls, which was cut
	// while it waited on them.
	p.first = env.firstAgentOf(events, rq.FirstSeq)
	p.answered = len(answered) == 0 && len(rq.RetryCallIDs) == 0 && env.treeFinished(run, p.first)
	if !p.waits && !p.answered {
		// It goes on to call models: refused now, before its answers are
		// stored, a run stays as it was (still waiting, or interrupted),
		// to be resumed once its budgets allow; refused at its first
		// model call, it would end FAILED with its answers stored.
		if err := env.CheckBudgets(ctx, sess, rq.Stored, job.ID); err != nil {
			return nil, err
		}
	}
	p.inv = env.newInvocation(job.Key, job.ID, sess, events, rq.Config, rq.RetryCallIDs)
	p.inv.SetReplay(agent.NewReplay(env.Tree, p.first, run))
	p.inv.SetUserContent(userMessageOf(events, rq.FirstSeq))
	return p, nil
}

// firstAgentOf returns the agent a run started with: the one the
// selection rules picked for its message (stored at sequence seq) from
// the events before it. A run whose message is no longer loaded starts
// at the root.
func (env *Env) firstAgentOf(events []*agentrunnerv1.Event, seq uint64) agent.Agent {
	i, ok := slices.BinarySearchFunc(events, seq, func(ev *agentrunnerv1.Event, seq uint64) int {
		return cmp.Compare(ev.GetSequence(), seq)
	})
	if !ok {
		return env.Tree.Root()
	}
	return env.Tree.SelectAgent(events[:i], events[i].GetContent())
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
// never finished, other than those that wait for the caller, and those
// of its calls the ledger holds under another run (shadowedCalls).
func (env *Env) inDoubtCalls(ctx context.Context, job *Job, events []*agentrunnerv1.Event) (map[string]bool, error) {
	calls, err := env.Store.ListToolCalls(ctx, job.Key)
	if err != nil {
		return nil, fmt.Errorf("read the tool-call ledger: %w", err)
	}
	open := map[string]bool{}
	owner := map[string]string{}
	for _, c := range calls {
		owner[c.GetCallId()] = c.GetInvocationId()
		if c.GetInvocationId() == job.ID && c.GetResponseSequence() == 0 && !c.GetWaitsForCaller() {
			open[c.GetCallId()] = true
		}
	}
	for _, id := range shadowedCalls(events, job.ID, owner) {
		open[id] = true
	}
	return open, nil
}

// shadowedCalls returns the calls of run runID, unanswered in its stored
// events and not waiting for the caller, whose id the ledger holds for
// another run (owner: call id to the run the ledger has it from). The
// ledger opens an id once per session, and a model that numbers its calls
// alike in every run ("call_0") gives a later run's call an id an earlier
// run took: a crash between such a call and its result left the run
// waiting on it (its record reads the events) while the ledger knew
// nothing of it, and the retry its record asks for was refused for ever.
func shadowedCalls(events []*agentrunnerv1.Event, runID string, owner map[string]string) []string {
	run := runEvents(events, runID)
	answered := map[string]bool{}
	for _, ev := range run {
		for _, p := range ev.GetContent().GetParts() {
			if id := p.GetFunctionResponse().GetId(); id != "" {
				answered[id] = true
			}
		}
	}
	var out []string
	for _, ev := range run {
		for _, p := range ev.GetContent().GetParts() {
			id := p.GetFunctionCall().GetId()
			if id == "" || answered[id] || owner[id] == "" || owner[id] == runID || slices.Contains(ev.GetLongRunningToolIds(), id) {
				continue
			}
			out = append(out, id)
		}
	}
	return out
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

// CheckBudgets refuses a run that would start with one of its budgets
// reached; rec is what the run spent so far (nothing for a new run).
func (env *Env) CheckBudgets(ctx context.Context, sess *agentrunnerv1.Session, rec *agentrunnerv1.Run, runID string) error {
	if rec == nil {
		rec = &agentrunnerv1.Run{RunId: runID}
	}
	if chk := env.Budgets.ForRun(env.Spend, sess, rec, env.Now); chk != nil {
		return chk.Start(ctx)
	}
	return nil
}
