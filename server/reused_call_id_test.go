package server

import (
	"context"
	"iter"
	"path/filepath"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/protobuf/types/known/structpb"
)

// sameIDTransfer hands over to helper with a call of the same id in every
// run, as some OpenAI-compatible servers number their calls.
type sameIDTransfer struct{}

func (sameIDTransfer) Name() string { return "same-id" }

func (sameIDTransfer) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		args, _ := structpb.NewStruct(map[string]any{"agent_name": "helper"})
		yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
			FunctionCall: &agentrunnerv1.FunctionCall{Id: "call_0", Name: "transfer_to_agent", Args: args}}}}}, TurnComplete: true, FinishReason: "STOP"}, nil)
	}
}

// TestResumeRetriesReusedCallID: a model that gives every run's call the
// same id (the tool-call ledger opens an id once per session, so the
// second run's call is not in it) and a crash between the second run's
// call and its result: the resume waits on that call (INPUT_REQUIRED),
// and retrying it, as the record's pending_call_ids say, goes on to
// SUCCEEDED. It was refused ("not a call of run ... left in doubt"),
// which left the run waiting for ever; the kill -9 harness met it once
// in 5,738 resumes.
func TestResumeRetriesReusedCallID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	calls := &modelCalls{}
	build := func(t *testing.T) apps.App {
		helper := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "helper", Model: passModel{name: "helper", calls: calls}}))
		router := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "router", Model: sameIDTransfer{}, SubAgents: []agent.Agent{helper}}))
		tail := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "tail", Model: passModel{name: "tail", calls: calls}}))
		return apps.App{Name: "xfer", Root: must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "xfer_root", SubAgents: []agent.Agent{router, tail}}))}
	}
	// A run stores four agent events (the call, its result, helper's and
	// tail's answers): the process dies once the second run's call is
	// stored.
	wrap := func(st *boltstore.Store) runner.Store { return &cutStore{Store: st, after: 5} }
	e, _ := newEnvAtWrapped(t, path, Limits{}, wrap, build)
	e.createSession(t, "xfer", "u1", "s1")
	if res := e.run(t, t.Context(), runReq("xfer", "s1", "go")); res.status != nil {
		t.Fatalf("first run: %v", res.status)
	}
	res := e.run(t, t.Context(), runReq("xfer", "s1", "again"))
	if len(res.runs) == 0 {
		t.Fatalf("no record of the second run: %v", res.status)
	}
	id := res.runs[0].GetRunId()
	e.close(t)

	e2, _ := newEnvAt(t, path, build)
	rec := getRun(t, e2, id)
	for range 3 {
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED && rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
			break
		}
		req := &servicev1.ResumeRunRequest{RunId: id, RetryCallIds: rec.GetPendingCallIds()}
		resps, err := collectRun(t, must[servicev1.RunnerService_ResumeRunClient](t)(e2.runner.ResumeRun(t.Context(), req)))
		if err != nil {
			t.Fatalf("ResumeRun(retry %q): %v", req.GetRetryCallIds(), err)
		}
		rec = resps[len(resps)-1].GetRun()
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("the run ended %v (%v), waiting on %q; want SUCCEEDED", rec.GetStatus(), rec.GetError(), rec.GetPendingCallIds())
	}
	// The retried transfer ran its target, and the sequence went on.
	stored := map[string]int{}
	sess := must[*servicev1.GetSessionResponse](t)(e2.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "xfer", UserId: "u1", SessionId: "s1"}))
	for _, ev := range sess.GetEvents() {
		for _, p := range ev.GetContent().GetParts() {
			stored[p.GetText()]++
		}
	}
	for _, want := range []string{"helper answered #2", "tail answered #2"} {
		if stored[want] != 1 {
			t.Errorf("%q stored %d times; want once", want, stored[want])
		}
	}
}
