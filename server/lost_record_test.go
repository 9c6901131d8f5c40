package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrunner/agentrunner/examples/demo"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/grpc/codes"
)

// crashBeforeRecord is a store on which the process "dies" between a
// run's last event and its final record: the record is acknowledged and
// never written, as a kill -9 at that moment would leave it (RUNNING).
type crashBeforeRecord struct{ *boltstore.Store }

func (s crashBeforeRecord) PutRun(ctx context.Context, rec *agentrunnerv1.Run) error {
	if rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		return nil
	}
	return s.Store.PutRun(ctx, rec)
}

// TestRecoveryKeepsFinishedRuns: a crash that takes only a run's final
// record leaves its events showing that its agents finished. Recovery
// ends it SUCCEEDED, with no INTERRUPTED event after its answer, and
// ResumeRun has nothing to run again: on the demo's workflow tree (its
// last agent, summary, answers once) and on an LLM agent.
func TestRecoveryKeepsFinishedRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	demoApp := func(*testing.T) apps.App { return demo.App() }
	lost := func(st *boltstore.Store) runner.Store { return crashBeforeRecord{st} }
	e, _ := newEnvAtWrapped(t, path, Limits{}, lost, demoApp, llmApp)
	runs := map[string]string{}
	for _, app := range []string{"demo", "llm"} {
		e.createSession(t, app, "u1", "s1")
		res := e.run(t, t.Context(), runReq(app, "s1", "hello there world"))
		if res.status != nil || res.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Fatalf("%s: %v %v", app, res.status, res.runs)
		}
		runs[app] = res.final(t).GetRunId()
	}
	e.close(t)

	e2, _ := newEnvAt(t, path, demoApp, llmApp)
	for app, id := range runs {
		rec := getRun(t, e2, id)
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || rec.GetError() != nil {
			t.Errorf("%s: after the restart the run is %v (%v); want SUCCEEDED", app, rec.GetStatus(), rec.GetError())
		}
		sess := must[*servicev1.GetSessionResponse](t)(e2.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: "u1", SessionId: "s1"}))
		events := sess.GetEvents()
		if last := events[len(events)-1]; last.GetErrorCode() != "" || rec.GetLastSequence() != last.GetSequence() {
			t.Errorf("%s: last event %v, record ends at %d; want the answer, ending the run", app, last, rec.GetLastSequence())
		}
		summaries := 0
		for _, ev := range events {
			if strings.HasPrefix(ev.GetContent().GetParts()[0].GetText(), "Summary:") {
				summaries++
			}
		}
		if app == "demo" && summaries != 1 {
			t.Errorf("demo: %d summaries stored, want 1", summaries)
		}
		_, err := collectRun(t, must[servicev1.RunnerService_ResumeRunClient](t)(e2.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: id})))
		wantCode(t, err, codes.FailedPrecondition, "")
	}
}
