package runrec

import (
	"context"
	"errors"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

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
