package server

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
)

// sayHiSet is an eval set of one case that an app answering "hi" passes.
const sayHiSet = `{"eval_set_id": "hi", "eval_cases": [{"eval_id": "greets",
  "conversation": [{"user_content": {"parts": [{"text": "hello"}]}, "final_response": {"parts": [{"text": "hi"}]},
  "intermediate_data": {"tool_uses": []}}]}]}`

// evalCases are the matrix cases of EvalService: an evaluation acts as
// its user on its app, and reads only that user's evaluations.
func evalCases() []rpcCase {
	return []rpcCase{
		{method: servicev1.EvalService_RunEval_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := servicev1.NewEvalServiceClient(e.conn).RunEval(ctx, &servicev1.RunEvalRequest{AppName: f.app, UserId: f.user, EvalSet: []byte(sayHiSet)})
			return err
		}},
		{method: servicev1.EvalService_ListEvalRuns_FullMethodName, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := servicev1.NewEvalServiceClient(e.conn).ListEvalRuns(ctx, &servicev1.ListEvalRunsRequest{AppName: f.app, UserId: f.user})
			return err
		}},
		// No evaluation has that id: a caller who may ask is told so.
		{method: servicev1.EvalService_GetEvalRun_FullMethodName, allowed: codes.NotFound, call: func(ctx context.Context, e *env, f fixture) error {
			_, err := servicev1.NewEvalServiceClient(e.conn).GetEvalRun(ctx, &servicev1.GetEvalRunRequest{AppName: f.app, UserId: f.user, EvalRunId: "none"})
			return err
		}},
	}
}

// TestRunEvalThroughTheServer: an evaluation of a custom app, through the
// generated client: the case passes, its run is an ordinary run of the
// case's session, and the stored result reads back whole, while the list
// leaves the turns out.
func TestRunEvalThroughTheServer(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, customApp("echo", sayHi)))
	c := servicev1.NewEvalServiceClient(e.conn)
	resp, err := c.RunEval(t.Context(), &servicev1.RunEvalRequest{AppName: "echo", UserId: "u", EvalSet: []byte(sayHiSet), Repeats: 2, Label: "first"})
	if err != nil {
		t.Fatal(err)
	}
	rec := resp.GetEvalRun()
	if !rec.GetPassed() || len(rec.GetCases()) != 1 || len(rec.GetCases()[0].GetRepeats()) != 2 || rec.GetCases()[0].GetMetrics()[1].GetScore() != 1 {
		t.Fatalf("evaluation = %v", rec)
	}
	rep := rec.GetCases()[0].GetRepeats()[1]
	inv := rep.GetInvocations()[0]
	if inv.GetActualResponse() != "hi" || inv.GetRunId() == "" {
		t.Errorf("turn = %v", inv)
	}
	runs, err := e.runner.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "echo", UserId: "u", SessionId: rep.GetSessionId()})
	if err != nil || len(runs.GetRuns()) != 1 || runs.GetRuns()[0].GetRunId() != inv.GetRunId() || runs.GetRuns()[0].GetEvalRunId() != rec.GetEvalRunId() {
		t.Errorf("runs of the case's session: %v, %v", runs, err)
	}
	got, err := c.GetEvalRun(t.Context(), &servicev1.GetEvalRunRequest{AppName: "echo", UserId: "u", EvalRunId: rec.GetEvalRunId()})
	if err != nil || got.GetEvalRun().GetCases()[0].GetRepeats()[1].GetInvocations()[0].GetActualResponse() != "hi" {
		t.Errorf("GetEvalRun = %v, %v", got, err)
	}
	list, err := c.ListEvalRuns(t.Context(), &servicev1.ListEvalRunsRequest{AppName: "echo", UserId: "u"})
	if err != nil || len(list.GetEvalRuns()) != 1 || list.GetEvalRuns()[0].GetLabel() != "first" ||
		len(list.GetEvalRuns()[0].GetCases()[0].GetRepeats()[0].GetInvocations()) != 0 {
		t.Errorf("ListEvalRuns = %v, %v", list, err)
	}
	if _, err := c.ListEvalRuns(t.Context(), &servicev1.ListEvalRunsRequest{AppName: "echo", UserId: "u", Limit: 501}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("ListEvalRuns with limit 501: %v", err)
	}
}
