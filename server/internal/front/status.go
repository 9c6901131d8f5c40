package front

import (
	"context"
	"errors"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// toStatus is the one place where errors become gRPC statuses.
//
// An error that already carries a status (validation, or a status an agent
// chose) passes through unchanged. Known sentinels map to their codes and
// keep their message: store and runner messages name only what the caller
// sent (keys, filenames, invocation ids), so they are safe and useful to
// return. Anything else is a bug or an infrastructure failure: it is logged
// with its detail and the client gets Internal "internal error", so that
// paths, driver messages and the like never leak.
func (d *Desk) toStatus(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	var be *agent.BudgetError
	if errors.As(err, &be) {
		return budgetStatus(be, d.seesAppSpend(ctx))
	}
	var le *runner.SessionLeasedError
	if errors.As(err, &le) {
		return leasedStatus(err, le)
	}
	if c, ok := codeOf(err); ok {
		return status.Error(c, err.Error())
	}
	d.log.ErrorContext(ctx, "internal error", "method", methodOf(ctx), "err", err)
	return status.Error(codes.Internal, "internal error")
}

// codeOf maps the known sentinel errors to codes; ok is false for errors it
// does not know. Context errors come first: a store call cut short by a
// cancelled client is Canceled, whatever else the error wraps.
func codeOf(err error) (c codes.Code, ok bool) {
	switch {
	case errors.Is(err, context.Canceled):
		return codes.Canceled, true
	case errors.Is(err, context.DeadlineExceeded):
		return codes.DeadlineExceeded, true
	case errors.Is(err, store.ErrNotFound):
		return codes.NotFound, true
	case errors.Is(err, store.ErrAlreadyExists):
		return codes.AlreadyExists, true
	case errors.Is(err, store.ErrInvalidArgument):
		return codes.InvalidArgument, true
	case errors.Is(err, store.ErrClosed):
		// The store closes only at shutdown; the client should retry
		// against another instance or later.
		return codes.Unavailable, true
	case errors.Is(err, runner.ErrRunInProgress):
		return codes.Aborted, true
	case errors.Is(err, store.ErrFenced):
		// Another replica took the run's session over: the run stopped
		// there and goes on (once recovered) on the replica that owns it.
		return codes.Aborted, true
	case errors.Is(err, runner.ErrShuttingDown):
		// Another instance, or this one after its restart, takes it.
		return codes.Unavailable, true
	case errors.Is(err, runner.ErrNotResumable), errors.Is(err, runner.ErrAppUnavailable), errors.Is(err, store.ErrFailedPrecondition):
		return codes.FailedPrecondition, true
	case errors.Is(err, agent.ErrMaxLLMCalls), errors.Is(err, agent.ErrBudgetExceeded):
		return codes.ResourceExhausted, true
	}
	return codes.Unknown, false
}

// budgetStatus is RESOURCE_EXHAUSTED for a run refused by a budget, with
// what a client needs to act on it as details: a QuotaFailure naming the
// budget and what spent it, an ErrorInfo with the limit, the spend and the
// reset time as values, and, for a daily budget, a RetryInfo saying when
// it resets. An app budget's spend is the app's total, every user's: it
// is given only to a caller who may read that (allSpend), as GetUsage of
// every user is; others learn that the budget is reached, and its limit.
func budgetStatus(be *agent.BudgetError, allSpend bool) error {
	msg := be.Error()
	meta := map[string]string{
		"budget": be.Budget, "app": be.App, "subject": be.Subject, "unit": be.Unit,
		"limit": strconv.FormatInt(be.Limit, 10),
	}
	if !be.SpendPrivate() || allSpend {
		msg = be.WithSpend()
		meta["spent"] = strconv.FormatInt(be.Spent, 10)
	}
	st := status.New(codes.ResourceExhausted, msg)
	details := []protoadapt.MessageV1{
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{Subject: be.Subject, Description: msg}}},
		&errdetails.ErrorInfo{Reason: "BUDGET_EXCEEDED", Domain: "agentrunner", Metadata: meta},
	}
	if !be.ResetsAt.IsZero() {
		meta["resets_at"] = be.ResetsAt.UTC().Format(time.RFC3339)
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(time.Until(be.ResetsAt).Round(time.Second))})
	}
	if d, err := st.WithDetails(details...); err == nil {
		st = d
	}
	return st.Err()
}

// seesAppSpend reports whether the caller may read an app's total spend,
// as GetUsage of every user allows: an admin, or anyone when
// authentication is off.
func (d *Desk) seesAppSpend(ctx context.Context) bool {
	if p := principalFrom(ctx); p != nil {
		return p.Admin
	}
	return d.authz.cfg == nil
}

// leasedStatus is ABORTED for a run refused because another replica
// holds its session's lease, as any busy session is, with when to try
// again as a budget refusal says it: the message names the time, an
// ErrorInfo gives it as a value, and a RetryInfo gives the delay (rounded
// up to the millisecond: a short lease has less than a second left).
func leasedStatus(err error, le *runner.SessionLeasedError) error {
	st := status.New(codes.Aborted, err.Error())
	delay := max(time.Until(le.RetryAt), 0)
	if r := delay % time.Millisecond; r != 0 {
		delay += time.Millisecond - r
	}
	meta := map[string]string{"session": le.Session, "holder": le.Holder, "retry_at": le.RetryAt.UTC().Format(time.RFC3339Nano)}
	if d, derr := st.WithDetails(
		&errdetails.ErrorInfo{Reason: "SESSION_LEASED", Domain: "agentrunner", Metadata: meta},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)},
	); derr == nil {
		st = d
	}
	return st.Err()
}

// AgentStatus converts an agent's error (an Update.Err) into the in-band
// status of a RunResponse. Unlike Status, the message is always the
// agent's own: the agent's failure is the caller's business (it is part
// of the conversation), and the run goes on after it. The code is the one
// the error carries, or Unknown.
func AgentStatus(err error) *agentrunnerv1.Status {
	ae := asAgentError(err)
	c := codes.Unknown
	if st, ok := status.FromError(ae.Err); ok {
		c = st.Code()
	} else if known, ok := codeOf(ae.Err); ok {
		c = known
	}
	return &agentrunnerv1.Status{Code: int32(c), Message: ae.Error()}
}

// asAgentError returns the AgentError in err's chain, or one wrapping
// err. It is apart from the streams' loops so that the target errors.As
// needs escapes only for an update that carries an error, not for every
// one.
func asAgentError(err error) *agent.AgentError {
	var agentErr *agent.AgentError
	if errors.As(err, &agentErr) {
		return agentErr
	}
	return &agent.AgentError{Err: err}
}

// Status maps an error of the runner or the store to a gRPC status as
// every call does: sentinels to their codes, anything else logged and
// Internal. A status passes through.
func (d *Desk) Status(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	return d.toStatus(ctx, err)
}

// StatusOf is Status's code and message, for a caller that speaks another
// protocol's errors.
func StatusOf(err error) (codes.Code, string) {
	st, _ := status.FromError(err)
	return st.Code(), st.Message()
}
