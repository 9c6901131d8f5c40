package front

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/store"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestToStatus(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		code    codes.Code
		message string // "" means the error's own text
	}{
		{"status passes through", status.Error(codes.FailedPrecondition, "as chosen"), codes.FailedPrecondition, "as chosen"},
		{"wrapped status keeps its code", fmt.Errorf("outer: %w", status.Error(codes.PermissionDenied, "no")), codes.PermissionDenied, "outer: rpc error: code = PermissionDenied desc = no"},
		{"not found", fmt.Errorf("session a/b/c: %w", store.ErrNotFound), codes.NotFound, ""},
		{"already exists", fmt.Errorf("session a/b/c: %w", store.ErrAlreadyExists), codes.AlreadyExists, ""},
		{"invalid argument", fmt.Errorf("malformed page_token: %w", store.ErrInvalidArgument), codes.InvalidArgument, ""},
		{"closed", fmt.Errorf("append: %w", store.ErrClosed), codes.Unavailable, ""},
		{"run in progress", fmt.Errorf("invocation e-1: %w", runner.ErrRunInProgress), codes.Aborted, ""},
		{"session lease lost", fmt.Errorf("run e-1: taken over: %w", store.ErrFenced), codes.Aborted, ""},
		{"max llm calls", fmt.Errorf("after 5: %w", agent.ErrMaxLLMCalls), codes.ResourceExhausted, ""},
		{"canceled", fmt.Errorf("get session: %w", context.Canceled), codes.Canceled, ""},
		{"deadline", fmt.Errorf("run: %w", context.DeadlineExceeded), codes.DeadlineExceeded, ""},
		{"context wins over sentinel", fmt.Errorf("%w: %w", store.ErrNotFound, context.Canceled), codes.Canceled, ""},
		{"unknown error is hidden", errors.New("open /secret/path: disk on fire"), codes.Internal, "internal error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncBuffer{}
			s := New(Config{Store: nopStore{}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			st := status.Convert(s.toStatus(t.Context(), tc.err))
			if st.Code() != tc.code {
				t.Errorf("code = %v, want %v", st.Code(), tc.code)
			}
			want := tc.message
			if want == "" {
				want = tc.err.Error()
			}
			if st.Message() != want {
				t.Errorf("message = %q, want %q", st.Message(), want)
			}
			logged := strings.Contains(logs.String(), tc.err.Error())
			if wantLogged := tc.code == codes.Internal; logged != wantLogged {
				t.Errorf("error logged = %v, want %v; logs:\n%s", logged, wantLogged, logs)
			}
		})
	}
	if err := New(Config{Store: nopStore{}}).toStatus(t.Context(), nil); err != nil {
		t.Errorf("toStatus(nil) = %v", err)
	}
}

func TestAgentStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
		code codes.Code
	}{
		{"plain", errors.New("tool failed"), codes.Unknown},
		{"status", status.Error(codes.Unavailable, "model overloaded"), codes.Unavailable},
		{"sentinel", fmt.Errorf("artifact x: %w", store.ErrNotFound), codes.NotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := AgentStatus(&agent.AgentError{Agent: "helper", Err: tc.err})
			if codes.Code(got.GetCode()) != tc.code {
				t.Errorf("code = %v, want %v", codes.Code(got.GetCode()), tc.code)
			}
			if !strings.Contains(got.GetMessage(), "helper") || !strings.Contains(got.GetMessage(), tc.err.Error()) {
				t.Errorf("message %q should name the agent and hold %q", got.GetMessage(), tc.err)
			}
		})
	}
}

// nopStore satisfies Store for tests that never reach storage; calling it
// panics, which those tests would report.
type nopStore struct{ Store }
