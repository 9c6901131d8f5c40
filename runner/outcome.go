package runner

import (
	"context"
	"errors"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

// codeNames maps the google.rpc.Code names that events carry in
// error_code (a model's failure after its retries is classified as one of
// them) to their numbers. A name outside it, such as a model's finish
// reason (SAFETY, MAX_TOKENS), is UNKNOWN.
var codeNames = map[string]int32{
	"CANCELLED": codeCanceled, "UNKNOWN": 2, "INVALID_ARGUMENT": codeInvalidArgument,
	"DEADLINE_EXCEEDED": codeDeadlineExceeded, "NOT_FOUND": codeNotFound, "ALREADY_EXISTS": 6,
	"PERMISSION_DENIED": 7, "RESOURCE_EXHAUSTED": codeResourceExhausted, "FAILED_PRECONDITION": 9,
	"ABORTED": codeAborted, "OUT_OF_RANGE": 11, "UNIMPLEMENTED": 12, "INTERNAL": codeInternal,
	"UNAVAILABLE": codeUnavailable, "DATA_LOSS": 15, "UNAUTHENTICATED": 16,
}

// eventFailure is the status of a stored agent event that reports an
// error (error_code set), nil for any other event.
func eventFailure(ev *agentrunnerv1.Event) *agentrunnerv1.Status {
	name := ev.GetErrorCode()
	if name == "" {
		return nil
	}
	code, ok := codeNames[name]
	if !ok {
		code = 2
	}
	msg := ev.GetErrorMessage()
	if msg == "" {
		msg = name
	}
	return &agentrunnerv1.Status{Code: code, Message: "agent " + ev.GetAuthor() + ": " + msg}
}

// inBandStatus is the status of an in-band error an agent reported. The
// runner does not import gRPC, so only the causes it knows get a code of
// their own; the server sends the in-band error itself with its full
// mapping.
func inBandStatus(err error) *agentrunnerv1.Status {
	var pe *agent.PanicError
	code := int32(2) // UNKNOWN
	switch {
	case errors.As(err, &pe):
		code = codeInternal
	case errors.Is(err, context.DeadlineExceeded):
		code = codeDeadlineExceeded
	case errors.Is(err, store.ErrInvalidArgument):
		code = codeInvalidArgument
	case errors.Is(err, store.ErrNotFound):
		code = codeNotFound
	}
	return &agentrunnerv1.Status{Code: code, Message: err.Error()}
}
