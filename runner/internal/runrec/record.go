package runrec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// A run's record moves PENDING (admitted, queued) → RUNNING (started) →
// one final status: SUCCEEDED, FAILED, INPUT_REQUIRED (its calls wait on
// the caller), CANCELLED or INTERRUPTED (a shutdown or a crash cut it;
// ResumeRun continues it). INPUT_REQUIRED and INTERRUPTED runs may run
// again (RUNNING); an INPUT_REQUIRED run that the session's next message
// settles ends SUCCEEDED or CANCELLED (Answered, Superseded).

// Pending is the record of a run admitted at now, before it starts.
func Pending(id string, key store.SessionKey, now time.Time) *agentrunnerv1.Run {
	return &agentrunnerv1.Run{
		RunId: id, AppName: key.App, UserId: key.User, SessionId: key.Session,
		Status: agentrunnerv1.RunStatus_RUN_STATUS_PENDING, CreateTime: timestamppb.New(now),
	}
}

// Start marks a record running from now. A started run keeps only the
// run config of its input (see ConfigOnly).
func Start(rec *agentrunnerv1.Run, now time.Time) {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
	rec.StartTime = timestamppb.New(now)
	rec.Input = ConfigOnly(rec.GetInput())
}

// Restart marks the record of a run that runs again (ResumeRun) running,
// with nothing of its last end left.
func Restart(rec *agentrunnerv1.Run) {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_RUNNING
	rec.EndTime, rec.Error, rec.PendingCallIds = nil, nil, nil
}

// ConfigOnly is what a started run keeps of its input: the run config,
// which ResumeRun goes on with (the message is a stored event by then).
func ConfigOnly(in *agentrunnerv1.RunInput) *agentrunnerv1.RunInput {
	if in.GetRunConfig() == nil {
		return nil
	}
	return &agentrunnerv1.RunInput{RunConfig: in.GetRunConfig()}
}

// Ended reports whether a record's status is final.
func Ended(rec *agentrunnerv1.Run) bool {
	switch rec.GetStatus() {
	case agentrunnerv1.RunStatus_RUN_STATUS_PENDING, agentrunnerv1.RunStatus_RUN_STATUS_RUNNING, agentrunnerv1.RunStatus_RUN_STATUS_UNSPECIFIED:
		return false
	}
	return true
}

// End is the final record of a run whose agents returned: FAILED with
// failure when an agent's last step failed (see Failures), INPUT_REQUIRED when
// calls of the run still wait for the caller (waiting), else SUCCEEDED.
func End(rec *agentrunnerv1.Run, now time.Time, failure *agentrunnerv1.Status, waiting []string) {
	rec.EndTime = timestamppb.New(now)
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	switch {
	case failure != nil:
		rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_FAILED
		rec.Error = failure
	case len(waiting) > 0:
		rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED
		rec.PendingCallIds = waiting
	}
}

// Fail ends a record FAILED with err. Errors the runner does not know are
// not described in the record (they may name files or drivers): for them
// unknown is true, and the caller logs them.
func Fail(rec *agentrunnerv1.Run, err error, now time.Time) (unknown bool) {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_FAILED
	rec.EndTime = timestamppb.New(now)
	code, msg := CodeInternal, "internal error"
	switch {
	case errors.Is(err, agent.ErrMaxLLMCalls), errors.Is(err, agent.ErrBudgetExceeded):
		code, msg = CodeResourceExhausted, err.Error()
	case errors.Is(err, store.ErrInvalidArgument):
		code, msg = CodeInvalidArgument, err.Error()
	case errors.Is(err, store.ErrNotFound):
		code, msg = CodeNotFound, err.Error()
	case errors.Is(err, ErrRunInProgress), errors.Is(err, ErrTaken):
		// A queued run whose session another replica took meanwhile.
		code, msg = CodeAborted, err.Error()
	default:
		unknown = true
	}
	rec.Error = &agentrunnerv1.Status{Code: code, Message: msg}
	return unknown
}

// FencedEnd ends a record whose session another writer took over. It is
// not stored: the session's new owner decides what the run became (a
// replica that recovers it marks it INTERRUPTED).
func FencedEnd(rec *agentrunnerv1.Run, now time.Time) {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_FAILED
	rec.EndTime = timestamppb.New(now)
	rec.Error = &agentrunnerv1.Status{Code: CodeAborted, Message: ErrLeaseLost.Error()}
}

// Cancelled ends the record of a run that never started (it left its
// queue) CANCELLED with cause.
func Cancelled(rec *agentrunnerv1.Run, cause error, now time.Time) *agentrunnerv1.Run {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED
	rec.Error = &agentrunnerv1.Status{Code: CodeCanceled, Message: cause.Error()}
	rec.Input = nil
	rec.EndTime = timestamppb.New(now)
	return rec
}

// Stop ends the record of a run stopped by cause (its context cancelled
// or timed out) and returns the error_code of the event that says so: a
// shutdown interrupts it, its deadline fails it, anything else cancels it.
func Stop(rec *agentrunnerv1.Run, cause error, now time.Time) (codeName string) {
	rec.EndTime = timestamppb.New(now)
	switch {
	case errors.Is(cause, ErrShuttingDown):
		rec.Status, rec.Error = agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED, &agentrunnerv1.Status{Code: CodeUnavailable, Message: cause.Error()}
		return "INTERRUPTED"
	case errors.Is(cause, context.DeadlineExceeded):
		rec.Status, rec.Error = agentrunnerv1.RunStatus_RUN_STATUS_FAILED, &agentrunnerv1.Status{Code: CodeDeadlineExceeded, Message: "the run's deadline passed"}
		return "DEADLINE_EXCEEDED"
	}
	rec.Status, rec.Error = agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED, &agentrunnerv1.Status{Code: CodeCanceled, Message: cause.Error()}
	return "CANCELLED"
}

// InterruptedMessage is what the record and the event of a run a crash
// cut off say.
const InterruptedMessage = "the server stopped while the run was running; ResumeRun continues it"

// Interrupted ends the record of a run a crash cut off INTERRUPTED at
// now; ResumeRun continues it.
func Interrupted(rec *agentrunnerv1.Run, now time.Time) {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED
	rec.Error = &agentrunnerv1.Status{Code: CodeUnavailable, Message: InterruptedMessage}
	rec.EndTime = timestamppb.New(now)
}

// Recovered is the final record of a run whose agents had finished when
// a crash took its record: the status End would have given it, ending at
// its last stored event (events: the run's, in order, at least one).
func Recovered(rec *agentrunnerv1.Run, events []*agentrunnerv1.Event) *agentrunnerv1.Run {
	last := events[len(events)-1]
	rec.LastSequence = last.GetSequence()
	rec.EndTime = last.GetTimestamp()
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	if f := RunFailure(events); f != nil {
		rec.Status, rec.Error = agentrunnerv1.RunStatus_RUN_STATUS_FAILED, f
	} else if ids := WaitingCalls(events, rec); len(ids) > 0 {
		rec.Status, rec.PendingCallIds = agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED, ids
	}
	return rec
}

// Answered ends a waiting run whose calls run by answered: SUCCEEDED,
// pointing to the run that goes on with the answers.
func Answered(rec *agentrunnerv1.Run, by string) {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED
	rec.PendingCallIds = nil
	rec.ContinuedByRunId = by
}

// Superseded ends a waiting run whose calls were answered with interim
// results (a plain message of run by, or CancelRun when by is empty):
// CANCELLED, saying why.
func Superseded(rec *agentrunnerv1.Run, by, reason string, now time.Time) {
	rec.Status = agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED
	rec.Error = &agentrunnerv1.Status{Code: CodeCanceled, Message: reason}
	rec.PendingCallIds = nil
	rec.ContinuedByRunId = by
	rec.EndTime = timestamppb.New(now)
}

// Stored moves the record's sequences and usage totals past an event the
// run stored.
func Stored(rec *agentrunnerv1.Run, ev *agentrunnerv1.Event) {
	if rec.FirstSequence == 0 {
		rec.FirstSequence = ev.GetSequence()
	}
	rec.LastSequence = ev.GetSequence()
	AddUsage(rec, ev)
}

// AddUsage adds a stored event's token counts to the run's totals,
// overall and of the event's author (UsageAgent).
func AddUsage(rec *agentrunnerv1.Run, ev *agentrunnerv1.Event) {
	u := ev.GetUsageMetadata()
	if u == nil {
		return
	}
	rec.Usage = store.AddUsage(rec.Usage, u)
	rec.Cost = store.AddEventCost(rec.Cost, ev)
	rec.TotalTokens += store.EventTokens(ev)
	if rec.UsageByAgent == nil {
		rec.UsageByAgent = map[string]*agentrunnerv1.UsageMetadata{}
	}
	who := UsageAgent(ev)
	rec.UsageByAgent[who] = store.AddUsage(rec.UsageByAgent[who], u)
}

// UsageAgent is the name usage_by_agent counts ev's usage under: its
// author, except for a compaction event, which the user authors but
// whose tokens are the summarizer's (agent.SummarizerName).
func UsageAgent(ev *agentrunnerv1.Event) string {
	if ev.GetActions().GetCompaction() != nil {
		return agent.SummarizerName
	}
	return ev.GetAuthor()
}

// Err is the terminal error of a run that ended elsewhere, from its
// record: what its own replica's reader got, as near as the record says.
func Err(rec *agentrunnerv1.Run) error {
	msg := rec.GetError().GetMessage()
	switch rec.GetStatus() {
	case agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED:
		return fmt.Errorf("run %s: %s: %w", rec.GetRunId(), msg, context.Canceled)
	case agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED:
		return fmt.Errorf("run %s: %s: %w", rec.GetRunId(), msg, ErrShuttingDown)
	case agentrunnerv1.RunStatus_RUN_STATUS_FAILED:
		if rec.GetError().GetCode() == CodeDeadlineExceeded {
			return fmt.Errorf("run %s: %w", rec.GetRunId(), context.DeadlineExceeded)
		}
		return fmt.Errorf("run %s failed: %s", rec.GetRunId(), msg)
	}
	return nil
}

// EventFailure is the status of a stored agent event that reports an
// error (error_code set), nil for any other event.
func EventFailure(ev *agentrunnerv1.Event) *agentrunnerv1.Status {
	name := ev.GetErrorCode()
	if name == "" {
		return nil
	}
	msg := ev.GetErrorMessage()
	if msg == "" {
		msg = name
	}
	return &agentrunnerv1.Status{Code: CodeOf(name), Message: "agent " + ev.GetAuthor() + ": " + msg}
}

// InBandStatus is the status of an in-band error an agent reported. The
// runner does not import gRPC, so only the causes it knows get a code of
// their own; the server sends the in-band error itself with its full
// mapping.
func InBandStatus(err error) *agentrunnerv1.Status {
	var pe *agent.PanicError
	code := CodeUnknown
	switch {
	case errors.As(err, &pe):
		code = CodeInternal
	case errors.Is(err, context.DeadlineExceeded):
		code = CodeDeadlineExceeded
	case errors.Is(err, store.ErrInvalidArgument):
		code = CodeInvalidArgument
	case errors.Is(err, store.ErrNotFound):
		code = CodeNotFound
	case errors.Is(err, agent.ErrBudgetExceeded):
		code = CodeResourceExhausted
	}
	return &agentrunnerv1.Status{Code: code, Message: err.Error()}
}

// LastAgentEvent returns the last of events written by an agent.
func LastAgentEvent(events []*agentrunnerv1.Event) *agentrunnerv1.Event {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].GetAuthor() != agent.UserAuthor {
			return events[i]
		}
	}
	return nil
}

// PendingCalls returns the calls of events that still wait for an
// answer, with the invocation that made each: long-running calls (those
// in an event's long_running_tool_ids) no user event has answered, and
// other calls nobody has answered (a custom agent's call for the client).
func PendingCalls(events []*agentrunnerv1.Event) map[string]string {
	pending := map[string]string{}
	longRunning := map[string]bool{}
	for _, ev := range events {
		for _, id := range ev.GetLongRunningToolIds() {
			longRunning[id] = true
		}
		for _, p := range ev.GetContent().GetParts() {
			if id := p.GetFunctionCall().GetId(); id != "" {
				pending[id] = ev.GetInvocationId()
			}
			// A call that waits for confirmation is waited on through its
			// confirmation request, not by itself.
			if fc := p.GetFunctionCall(); fc.GetName() == builtin.RequestConfirmationName {
				delete(pending, fc.GetArgs().GetFields()["call_id"].GetStringValue())
			}
			id := p.GetFunctionResponse().GetId()
			if id != "" && (ev.GetAuthor() == agent.UserAuthor || !longRunning[id]) {
				delete(pending, id)
			}
		}
	}
	return pending
}

// WaitingCalls returns the calls the run made that still wait for the
// caller, sorted: the record's pending_call_ids. Only the events from the
// run's first on can hold them: the scan costs the run's length, not the
// session's.
func WaitingCalls(events []*agentrunnerv1.Event, rec *agentrunnerv1.Run) []string {
	from, _ := slices.BinarySearchFunc(events, rec.GetFirstSequence(), func(ev *agentrunnerv1.Event, seq uint64) int {
		return cmp.Compare(ev.GetSequence(), seq)
	})
	var ids []string
	for call, inv := range PendingCalls(events[from:]) {
		if inv == rec.GetRunId() {
			ids = append(ids, call)
		}
	}
	slices.Sort(ids)
	return ids
}

// LastRunWaits returns the id of the session's last run and the calls it
// waits on (nil when none), from the events of that run alone.
func LastRunWaits(events []*agentrunnerv1.Event) (string, []string) {
	if len(events) == 0 {
		return "", nil
	}
	id := events[len(events)-1].GetInvocationId()
	from := len(events)
	for from > 0 && events[from-1].GetInvocationId() == id {
		from--
	}
	var calls []string
	for call, inv := range PendingCalls(events[from:]) {
		if inv == id {
			calls = append(calls, call)
		}
	}
	slices.Sort(calls)
	return id, calls
}

// google.rpc.Code values of run records' errors. The runner does not
// import gRPC; the numbers are the wire's, and the server maps the same
// causes to the same codes.
const (
	CodeCanceled           int32 = 1
	CodeUnknown            int32 = 2
	CodeInvalidArgument    int32 = 3
	CodeDeadlineExceeded   int32 = 4
	CodeNotFound           int32 = 5
	CodeAlreadyExists      int32 = 6
	CodePermissionDenied   int32 = 7
	CodeResourceExhausted  int32 = 8
	CodeFailedPrecondition int32 = 9
	CodeAborted            int32 = 10
	CodeOutOfRange         int32 = 11
	CodeUnimplemented      int32 = 12
	CodeInternal           int32 = 13
	CodeUnavailable        int32 = 14
	CodeDataLoss           int32 = 15
	CodeUnauthenticated    int32 = 16
)

// codeNames maps the google.rpc.Code names that events carry in
// error_code (a model's failure after its retries is classified as one of
// them) to their numbers. A name outside it, such as a model's finish
// reason (SAFETY, MAX_TOKENS), is UNKNOWN.
var codeNames = map[string]int32{
	"CANCELLED": CodeCanceled, "UNKNOWN": CodeUnknown, "INVALID_ARGUMENT": CodeInvalidArgument,
	"DEADLINE_EXCEEDED": CodeDeadlineExceeded, "NOT_FOUND": CodeNotFound, "ALREADY_EXISTS": CodeAlreadyExists,
	"PERMISSION_DENIED": CodePermissionDenied, "RESOURCE_EXHAUSTED": CodeResourceExhausted,
	"FAILED_PRECONDITION": CodeFailedPrecondition, "ABORTED": CodeAborted, "OUT_OF_RANGE": CodeOutOfRange,
	"UNIMPLEMENTED": CodeUnimplemented, "INTERNAL": CodeInternal, "UNAVAILABLE": CodeUnavailable,
	"DATA_LOSS": CodeDataLoss, "UNAUTHENTICATED": CodeUnauthenticated,
}

// CodeName is the google.rpc.Code name of code, the error_code of an
// event that reports a failure of that code; UNKNOWN for a code it does
// not name.
func CodeName(code int32) string {
	for name, c := range codeNames {
		if c == code {
			return name
		}
	}
	return "UNKNOWN"
}

// CodeOf returns the code an event's error_code names; UNKNOWN for a
// name that is not a google.rpc.Code.
func CodeOf(name string) int32 {
	if c, ok := codeNames[name]; ok {
		return c
	}
	return CodeUnknown
}
