package runrec

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
)

// TestEnds: each way a run ends gives its record one status and one
// code, whoever writes it.
func TestEnds(t *testing.T) {
	now := time.Unix(1700000000, 0)
	type end struct {
		status agentrunnerv1.RunStatus
		code   int32
	}
	failed := func(err error) end {
		rec := &agentrunnerv1.Run{}
		Fail(rec, err, now)
		return end{rec.GetStatus(), rec.GetError().GetCode()}
	}
	stopped := func(cause error) end {
		rec := &agentrunnerv1.Run{}
		Stop(rec, cause, now)
		return end{rec.GetStatus(), rec.GetError().GetCode()}
	}
	cases := []struct {
		name string
		got  end
		want end
	}{
		{"max llm calls", failed(fmt.Errorf("x: %w", agent.ErrMaxLLMCalls)), end{agentrunnerv1.RunStatus_RUN_STATUS_FAILED, CodeResourceExhausted}},
		{"invalid", failed(fmt.Errorf("x: %w", store.ErrInvalidArgument)), end{agentrunnerv1.RunStatus_RUN_STATUS_FAILED, CodeInvalidArgument}},
		{"session gone", failed(fmt.Errorf("x: %w", store.ErrNotFound)), end{agentrunnerv1.RunStatus_RUN_STATUS_FAILED, CodeNotFound}},
		{"taken", failed(fmt.Errorf("x: %w: %w", ErrTaken, ErrRunInProgress)), end{agentrunnerv1.RunStatus_RUN_STATUS_FAILED, CodeAborted}},
		{"unknown", failed(errors.New("disk on fire")), end{agentrunnerv1.RunStatus_RUN_STATUS_FAILED, CodeInternal}},
		{"shutdown", stopped(fmt.Errorf("interrupted: %w", ErrShuttingDown)), end{agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED, CodeUnavailable}},
		{"deadline", stopped(context.DeadlineExceeded), end{agentrunnerv1.RunStatus_RUN_STATUS_FAILED, CodeDeadlineExceeded}},
		{"cancel", stopped(ErrCancelled), end{agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED, CodeCanceled}},
		{"disconnect", stopped(ErrDisconnected), end{agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED, CodeCanceled}},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	rec := &agentrunnerv1.Run{}
	if Fail(rec, errors.New("driver said /var/lib/x"), now); rec.GetError().GetMessage() != "internal error" {
		t.Errorf("an unknown error is described in the record: %q", rec.GetError().GetMessage())
	}
}

// TestRecovered: a run whose agents had finished ends as End would have
// ended it, at its last stored event.
func TestRecovered(t *testing.T) {
	text := func(s string) *agentrunnerv1.Content {
		return &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
	}
	call := &agentrunnerv1.Content{Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: "c1", Name: "ask"}}}}}
	user := &agentrunnerv1.Event{Sequence: 4, InvocationId: "e-1", Author: agent.UserAuthor, Content: text("hi")}
	cases := []struct {
		name   string
		last   *agentrunnerv1.Event
		status agentrunnerv1.RunStatus
	}{
		{"answered", &agentrunnerv1.Event{Sequence: 5, InvocationId: "e-1", Author: "root", Content: text("hello")}, agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED},
		{"model failed", &agentrunnerv1.Event{Sequence: 5, InvocationId: "e-1", Author: "root", ErrorCode: "UNAVAILABLE"}, agentrunnerv1.RunStatus_RUN_STATUS_FAILED},
		{"waits", &agentrunnerv1.Event{Sequence: 5, InvocationId: "e-1", Author: "root", Content: call, LongRunningToolIds: []string{"c1"}}, agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED},
	}
	for _, c := range cases {
		rec := Recovered(&agentrunnerv1.Run{RunId: "e-1", FirstSequence: 4, Status: agentrunnerv1.RunStatus_RUN_STATUS_RUNNING}, []*agentrunnerv1.Event{user, c.last})
		if rec.GetStatus() != c.status || rec.GetLastSequence() != 5 {
			t.Errorf("%s: %v at %d, want %v at 5", c.name, rec.GetStatus(), rec.GetLastSequence(), c.status)
		}
	}
	if got := CodeOf("SAFETY"); got != CodeUnknown {
		t.Errorf("a finish reason is code %d, want UNKNOWN", got)
	}
}
