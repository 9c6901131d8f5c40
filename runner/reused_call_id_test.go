package runner_test

import (
	"context"
	"iter"
	"path/filepath"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// sameIDTransfer hands over to helper with a call of the same id in every
// run, as some OpenAI-compatible servers number their calls.
type sameIDTransfer struct{}

func (sameIDTransfer) Name() string { return "same-id" }

func (sameIDTransfer) Generate(context.Context, *model.Request, bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		yield(&model.Response{Content: transferCall("helper", "call_0"), TurnComplete: true, FinishReason: "STOP"}, nil)
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
	build := func(t *testing.T) runner.Config {
		helper := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "helper", Model: passModel{name: "helper", calls: calls}}))
		router := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "router", Model: sameIDTransfer{}, SubAgents: []agent.Agent{helper}}))
		tail := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "tail", Model: passModel{name: "tail", calls: calls}}))
		return runner.Config{Root: must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "xfer_root", SubAgents: []agent.Agent{router, tail}}))}
	}
	// A run stores four agent events (the call, its result, helper's and
	// tail's answers): the process dies once the second run's call is
	// stored.
	wrap := func(st *boltstore.Store) runner.Store { return &cutStore{Store: st, after: 5} }
	f := openFeature(t, path, build(t), wrap)
	f.session(t, "s1")
	if res := f.run(t, ask("s1", "go")); res.err != nil {
		t.Fatalf("first run: %v", res.err)
	}
	res := f.run(t, ask("s1", "again"))
	if len(res.runs) == 0 {
		t.Fatalf("no record of the second run: %v", res.err)
	}
	id := res.runs[0].GetRunId()

	f2 := f.restart(t, build(t))
	rec := f2.getRun(t, id)
	for range 3 {
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED && rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
			break
		}
		res := f2.resume(t, runner.ResumeRequest{RunID: id, RetryCallIDs: rec.GetPendingCallIds()})
		if res.err != nil {
			t.Fatalf("Resume(retry %q): %v", rec.GetPendingCallIds(), res.err)
		}
		rec = res.final(t)
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("the run ended %v (%v), waiting on %q; want SUCCEEDED", rec.GetStatus(), rec.GetError(), rec.GetPendingCallIds())
	}
	// The retried transfer ran its target, and the sequence went on.
	stored := map[string]int{}
	for _, ev := range f2.events(t, "s1") {
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
