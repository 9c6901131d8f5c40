package runner

import (
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
	// Webhook, when set, is where the run calls back each time it stops
	// (Run.webhook), instead of the app's (Config.Webhook). Its URL is the
	// caller's to check (the server allows only some hosts): the store
	// queues a delivery with every stop of a run that names one.
	Webhook *agentrunnerv1.Webhook
	// SharedEvents tells Stream that its reader only reads the stored
	// events it gets (a server encodes them): it gets the runner's own
	// instances instead of copies, which it must not change. A copy costs
	// as much as encoding the event again. A run executed on the reader's
	// goroutine then also hands it its live first record, which the
	// reader must not keep past its yield: the run changes it afterwards.
	SharedEvents bool
	// ScheduleID names the schedule that started the run; its record
	// says so (Run.schedule_id).
	ScheduleID string
	// EvalRunID names the evaluation the run answers a turn of; it goes
	// into the run's record (Run.eval_run_id). Empty for other runs.
	EvalRunID string
}

// input is the payload a request_id covers.
func (req Request) input() *agentrunnerv1.RunInput {
	return &agentrunnerv1.RunInput{NewMessage: req.NewMessage, StateDelta: req.StateDelta, RunConfig: req.Config}
}
