package runner

import (
	"context"
	"iter"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/structpb"
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
