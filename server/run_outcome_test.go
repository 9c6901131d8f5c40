package server

import (
	"context"
	"errors"
	"iter"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"google.golang.org/grpc/codes"
)

// exhaustedModel answers every call the way the retry layer does once a
// provider failed every attempt: an in-band error response.
type exhaustedModel struct{}

func (exhaustedModel) Name() string { return "failing-model" }

func (exhaustedModel) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		yield(&model.Response{TurnComplete: true, ErrorCode: "UNAVAILABLE", ErrorMessage: "failing-model: UNAVAILABLE after 3 attempt(s): 500 Internal Server Error"}, nil)
	}
}

// TestFailedAgentFailsTheRun: a run whose last agent step is an error that
// ended the agent (a transfer target whose model failed after its
// retries; a custom agent whose last word is an error) ends FAILED with
// that error, in the stream's final record and in GetRun; an error the
// agent recovered from leaves the run SUCCEEDED.
func TestFailedAgentFailsTheRun(t *testing.T) {
	transferApp := func(t *testing.T) apps.App {
		mk := must[agent.Agent](t)
		worker := mk(llmagent.New(llmagent.Config{Name: "worker", Description: "Works.", Model: exhaustedModel{}}))
		root := mk(agent.New(agent.Config{Name: "router", SubAgents: []agent.Agent{worker}, Run: func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
			return func(yield func(*agentrunnerv1.Event, error) bool) {
				ev := say("handing over")
				ev.Actions = &agentrunnerv1.EventActions{TransferToAgent: "worker"}
				yield(ev, nil)
			}
		}}))
		return apps.App{Name: "transfer", Root: root}
	}
	lastWordError := customApp("lastword", func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if yield(say("working"), nil) {
				yield(nil, errors.New("the backend refused"))
			}
		}
	})
	recovered := customApp("recovered", func(agent.InvocationContext) iter.Seq2[*agentrunnerv1.Event, error] {
		return func(yield func(*agentrunnerv1.Event, error) bool) {
			if yield(nil, errors.New("first try failed")) {
				yield(say("second try worked"), nil)
			}
		}
	})
	e := newEnv(t, withRunnerApps(t, transferApp, lastWordError, recovered))
	for _, tc := range []struct {
		app      string
		status   agentrunnerv1.RunStatus
		code     codes.Code
		contains string
	}{
		{"transfer", agentrunnerv1.RunStatus_RUN_STATUS_FAILED, codes.Unavailable, "500 Internal Server Error"},
		{"lastword", agentrunnerv1.RunStatus_RUN_STATUS_FAILED, codes.Unknown, "the backend refused"},
		{"recovered", agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED, codes.OK, ""},
	} {
		t.Run(tc.app, func(t *testing.T) {
			e.createSession(t, tc.app, "u1", "s1")
			res := e.run(t, t.Context(), runReq(tc.app, "s1", "go"))
			if res.status != nil {
				t.Fatalf("Run: %v", res.status)
			}
			final := res.final(t)
			stored := getRun(t, e, final.GetRunId())
			for _, rec := range []*agentrunnerv1.Run{final, stored} {
				if rec.GetStatus() != tc.status || codes.Code(rec.GetError().GetCode()) != tc.code {
					t.Fatalf("run ended %v with %v; want %v with code %v", rec.GetStatus(), rec.GetError(), tc.status, tc.code)
				}
				if tc.contains != "" && !strings.Contains(rec.GetError().GetMessage(), tc.contains) {
					t.Errorf("error %q does not say %q", rec.GetError().GetMessage(), tc.contains)
				}
			}
		})
	}
}
