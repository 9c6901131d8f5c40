package server

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// errDied is what the store of a process killed at that moment would
// answer, had it still answered: nothing more is written.
var errDied = errors.New("the process died")

// diesAfterAnswer is a store on which the process "dies" as soon as the
// caller's answer to a waiting call is stored: every later write is lost
// (a record dropped, an event refused), as a kill -9 right after that
// commit would leave the file.
type diesAfterAnswer struct {
	*boltstore.Store
	dead *atomic.Bool
}

// isAnswer reports whether ev is the caller's real answer to a call (not
// the interim result of a superseded one).
func isAnswer(ev *agentrunnerv1.Event) bool {
	if ev.GetAuthor() != "user" {
		return false
	}
	return slices.ContainsFunc(ev.GetContent().GetParts(), func(p *agentrunnerv1.Part) bool {
		fr := p.GetFunctionResponse()
		_, interim := fr.GetResponse().GetFields()["superseded_by_run"]
		return fr != nil && !interim
	})
}

func (s diesAfterAnswer) AppendRunEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event, rec *agentrunnerv1.Run) (*agentrunnerv1.Event, *agentrunnerv1.Run, error) {
	if s.dead.Load() {
		return nil, nil, errDied
	}
	stored, storedRec, err := s.Store.AppendRunEvent(ctx, k, ev, rec)
	s.dead.Store(err == nil && isAnswer(ev))
	return stored, storedRec, err
}

func (s diesAfterAnswer) AppendEvent(ctx context.Context, k store.SessionKey, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	if s.dead.Load() {
		return nil, errDied
	}
	stored, err := s.Store.AppendEvent(ctx, k, ev)
	s.dead.Store(err == nil && isAnswer(ev))
	return stored, err
}

func (s diesAfterAnswer) PutRun(ctx context.Context, rec *agentrunnerv1.Run) error {
	if s.dead.Load() {
		return nil // acknowledged, never written
	}
	return s.Store.PutRun(ctx, rec)
}

func (s diesAfterAnswer) PutRunLater(rec *agentrunnerv1.Run) {
	if !s.dead.Load() {
		s.Store.PutRunLater(rec)
	}
}

// TestCrashAfterAnswerStored: a crash right after the caller's answer to
// a waiting run is stored, before anything else is written. After the
// restart no run is left INPUT_REQUIRED with its calls answered: the
// waiting run answered by a Run ends SUCCEEDED, continued by the run
// that answered it, which is INTERRUPTED and goes on with ResumeRun to
// the agent's answer; a waiting run answered by its own ResumeRun is
// INTERRUPTED and goes on the same way. The answer is stored once
// (issue 45, item 8a).
func TestCrashAfterAnswerStored(t *testing.T) {
	for _, via := range []string{"Run", "ResumeRun"} {
		t.Run(via, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "agentrunner.db")
			dead := &atomic.Bool{}
			wrap := func(st *boltstore.Store) runner.Store { return diesAfterAnswer{Store: st, dead: dead} }
			e, _ := newEnvAtWrapped(t, path, Limits{}, wrap, ordersApp)
			e.createSession(t, "orders", "u1", "s1")
			res := e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "42"}`))
			if res.status != nil || len(res.runs) == 0 || !slices.Equal(res.kinds, []string{"clerk: call get_order"}) {
				t.Fatalf("call: %v %q", res.status, res.kinds)
			}
			waiting := res.runs[len(res.runs)-1].GetRunId()
			id := res.events[0].GetContent().GetParts()[0].GetFunctionCall().GetId()
			answer := answerCall(t, id, map[string]any{"status": "shipped"})
			answering := waiting
			if via == "Run" {
				stream, err := e.runner.Run(t.Context(), answer)
				if err != nil {
					t.Fatal(err)
				}
				resps, _ := collectRun(t, stream)
				if len(resps) == 0 || resps[0].GetRun() == nil {
					t.Fatalf("the answering run's stream starts with %v; want its record", resps)
				}
				answering = resps[0].GetRun().GetRunId()
			} else {
				stream, err := e.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: waiting, Answers: answer.GetNewMessage()})
				if err != nil {
					t.Fatal(err)
				}
				collectRun(t, stream)
			}
			if !dead.Load() {
				t.Fatal("the answer was not stored")
			}
			e.close(t)

			e2, _ := newEnvAt(t, path, ordersApp)
			if via == "Run" {
				w := getRun(t, e2, waiting)
				if w.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || len(w.GetPendingCallIds()) > 0 || w.GetContinuedByRunId() != answering {
					t.Errorf("after the restart the answered run is %v, pending %q, continued by %q; want SUCCEEDED, continued by %s", w.GetStatus(), w.GetPendingCallIds(), w.GetContinuedByRunId(), answering)
				}
			}
			if a := getRun(t, e2, answering); a.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
				t.Fatalf("after the restart the answering run is %v; want INTERRUPTED", a.GetStatus())
			}
			stream, err := e2.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: answering})
			if err != nil {
				t.Fatal(err)
			}
			resps, err := collectRun(t, stream)
			if err != nil {
				t.Fatalf("resume: %v", err)
			}
			var final *agentrunnerv1.Run
			var said []string
			for _, r := range resps {
				if r.GetRun() != nil {
					final = r.GetRun()
				}
				if ev := r.GetEvent(); ev.GetAuthor() == "clerk" && !ev.GetPartial() && ev.GetContent().GetParts()[0].GetText() != "" {
					said = append(said, ev.GetContent().GetParts()[0].GetText())
				}
			}
			if final.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || len(said) != 1 {
				t.Errorf("resumed run ended %v having said %q; want SUCCEEDED with the clerk's one answer", final.GetStatus(), said)
			}
			sess := must[*servicev1.GetSessionResponse](t)(e2.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1"}))
			answers := 0
			for _, ev := range sess.GetEvents() {
				if isAnswer(ev) {
					answers++
				}
			}
			if answers != 1 {
				t.Errorf("the answer is stored %d times; want once", answers)
			}
			for _, r := range must[*servicev1.ListRunsResponse](t)(e2.runner.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "orders", UserId: "u1", SessionId: "s1"})).GetRuns() {
				if r.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
					t.Errorf("run %s is still INPUT_REQUIRED, pending %q, with its calls answered", r.GetRunId(), r.GetPendingCallIds())
				}
			}
		})
	}
}
