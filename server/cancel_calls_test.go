package server

import (
	"context"
	"errors"
	"iter"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
	"google.golang.org/grpc/codes"
)

// hangingModel is a model call that ends only when its context does: it
// reports that it started on entered and its context's error on stopped.
type hangingModel struct {
	entered chan string
	stopped chan error
}

func (m hangingModel) Name() string { return "hanging-model" }

func (m hangingModel) Generate(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.entered <- "model"
		<-ctx.Done()
		m.stopped <- ctx.Err()
		yield(nil, ctx.Err())
	}
}

// TestCancelRunInModelAndToolCalls: CancelRun aborts an LLM agent's model
// call and its tool call alike; each run stores an event saying so, ends
// CANCELLED, and the session takes the next run.
func TestCancelRunInModelAndToolCalls(t *testing.T) {
	entered, stopped := make(chan string, 4), make(chan error, 4)
	inModel := func(t *testing.T) apps.App {
		a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "thinker", Model: hangingModel{entered, stopped}}))
		return apps.App{Name: "inmodel", Root: a}
	}
	inTool := func(t *testing.T) apps.App {
		hang := func(tc tool.Context, _ struct{}) (map[string]any, error) {
			entered <- "tool"
			<-tc.Done()
			stopped <- tc.Err()
			return nil, tc.Err()
		}
		a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "worker", Model: toolModel{call: "hang"}, Tools: []tool.Tool{mustTool(t, "hang", hang)}}))
		return apps.App{Name: "intool", Root: a}
	}
	e := newEnv(t, withRunnerApps(t, inModel, inTool))
	for _, tc := range []struct{ app, where, author string }{{"inmodel", "model", "thinker"}, {"intool", "tool", "worker"}} {
		t.Run(tc.where, func(t *testing.T) {
			e.createSession(t, tc.app, "u1", "s1")
			started, err := e.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: tc.app, UserId: "u1", SessionId: "s1", NewMessage: text("go")})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, entered, tc.where)
			resp, err := e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: started.GetRun().GetRunId()})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.GetRun(); got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || got.GetError().GetCode() != int32(codes.Canceled) {
				t.Fatalf("CancelRun = %v, want CANCELLED", got)
			}
			if err := <-stopped; !errors.Is(err, context.Canceled) {
				t.Errorf("the %s call stopped with %v, want context.Canceled", tc.where, err)
			}
			res := e.attach(t, started.GetRun().GetRunId(), 0)
			last := res.events[len(res.events)-1]
			if last.GetErrorCode() != "CANCELLED" || last.GetAuthor() != tc.author || last.GetSequence() != res.final(t).GetLastSequence() {
				t.Errorf("last event %v of record %v; want the stored CANCELLED event by %s", last, res.final(t), tc.author)
			}
			if tc.where == "tool" && !containsCall(res.events, "hang") {
				t.Errorf("the cancelled run's events %q lack the call it was in", res.kinds)
			}
			// The session is free: the next run is admitted, not Aborted.
			next, err := e.runner.StartRun(t.Context(), &servicev1.StartRunRequest{AppName: tc.app, UserId: "u1", SessionId: "s1", NewMessage: text("again")})
			if err != nil {
				t.Fatalf("run after the cancel: %v", err)
			}
			waitFor(t, entered, tc.where)
			if _, err := e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: next.GetRun().GetRunId()}); err != nil {
				t.Fatal(err)
			}
			<-stopped
		})
	}
}

func containsCall(events []*agentrunnerv1.Event, name string) bool {
	for _, ev := range events {
		for _, p := range ev.GetContent().GetParts() {
			if p.GetFunctionCall().GetName() == name {
				return true
			}
		}
	}
	return false
}
