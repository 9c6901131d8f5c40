package server

import (
	"slices"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"google.golang.org/grpc/codes"
)

// waitOnCall runs a message that makes the clerk call the client-executed
// get_order, and returns the waiting run and the call's id.
func waitOnCall(t *testing.T, e *env) (*agentrunnerv1.Run, string) {
	t.Helper()
	res := e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "42"}`))
	final := res.final(t)
	if res.status != nil || final.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || len(final.GetPendingCallIds()) != 1 {
		t.Fatalf("call: %v, ended %v", res.status, final)
	}
	return final, final.GetPendingCallIds()[0]
}

// noRunWaits fails when any run of the session is still INPUT_REQUIRED:
// what a client polling for runs that wait on it would see.
func noRunWaits(t *testing.T, e *env) {
	t.Helper()
	runs := must[*servicev1.ListRunsResponse](t)(e.runner.ListRuns(t.Context(), &servicev1.ListRunsRequest{AppName: "orders", UserId: "u1", SessionId: "s1"}))
	for _, r := range runs.GetRuns() {
		if r.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
			t.Errorf("run %s still waits on %q", r.GetRunId(), r.GetPendingCallIds())
		}
	}
}

// TestWaitingRunEnds: a run is never INPUT_REQUIRED once nothing waits on
// it. Answered by a Run's function_response, it ends SUCCEEDED pointing to
// that run; superseded by a plain message, its call is answered with a
// cancellation result the model reads, and it ends CANCELLED pointing to
// the new run (a later answer to the call is still taken); CancelRun ends
// it CANCELLED the same way, and the session goes on.
func TestWaitingRunEnds(t *testing.T) {
	t.Run("answered", func(t *testing.T) {
		e := newEnv(t, withRunnerApps(t, ordersApp))
		e.createSession(t, "orders", "u1", "s1")
		w, id := waitOnCall(t, e)
		res := e.run(t, t.Context(), answerCall(t, id, map[string]any{"status": "shipped"}))
		if res.status != nil {
			t.Fatal(res.status)
		}
		got := getRun(t, e, w.GetRunId())
		if got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || len(got.GetPendingCallIds()) != 0 || got.GetContinuedByRunId() != res.final(t).GetRunId() {
			t.Fatalf("the answered run is %v (pending %q, continued by %q); want SUCCEEDED, continued by %s",
				got.GetStatus(), got.GetPendingCallIds(), got.GetContinuedByRunId(), res.final(t).GetRunId())
		}
		noRunWaits(t, e)
		_, err := e.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: w.GetRunId()})
		if err == nil {
			_, err = must[servicev1.RunnerService_ResumeRunClient](t)(e.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: w.GetRunId()})).Recv()
		}
		wantCode(t, err, codes.FailedPrecondition, "")
	})
	t.Run("superseded", func(t *testing.T) {
		m := &offlineRecorder{Model: offline.New(offline.Config{})}
		e := newEnv(t, withRunnerApps(t, recordingOrdersApp(m)))
		e.createSession(t, "orders", "u1", "s1")
		w, id := waitOnCall(t, e)
		res := e.run(t, t.Context(), runReq("orders", "s1", "never mind, hello"))
		if res.status != nil || res.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Fatalf("plain message: %v %v", res.status, res.final(t))
		}
		got := getRun(t, e, w.GetRunId())
		if got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || got.GetContinuedByRunId() != res.final(t).GetRunId() ||
			len(got.GetPendingCallIds()) != 0 || !strings.Contains(got.GetError().GetMessage(), res.final(t).GetRunId()) {
			t.Fatalf("the superseded run is %v; want CANCELLED by %s", got, res.final(t).GetRunId())
		}
		var lines []string
		for _, c := range m.lastRequest().Contents {
			lines = append(lines, contentLine(c))
		}
		want := []string{"model: call get_order#" + id, "user: response get_order#" + id, "user: never mind, hello"}
		if n := len(lines); n < 3 || !slices.Equal(lines[n-3:], want) {
			t.Fatalf("the model was asked:\n%s\nwant it to end with\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
		}
		calls := must[*servicev1.ListToolCallsResponse](t)(e.sessions.ListToolCalls(t.Context(), &servicev1.ListToolCallsRequest{AppName: "orders", UserId: "u1", SessionId: "s1"}))
		if c := calls.GetToolCalls(); len(c) != 1 || c[0].GetResponseSequence() == 0 {
			t.Errorf("ledger %v: want the call closed by the cancellation result", c)
		}
		noRunWaits(t, e)
		// The caller's answer, late, is still taken, and answered.
		res = e.run(t, t.Context(), answerCall(t, id, map[string]any{"status": "shipped"}))
		if want := []string{`clerk: offline model: get_order returned {"status":"shipped"}`}; res.status != nil || !slices.Equal(res.kinds, want) {
			t.Fatalf("late answer: %v %q, want %q", res.status, res.kinds, want)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		e := newEnv(t, withRunnerApps(t, ordersApp))
		e.createSession(t, "orders", "u1", "s1")
		w, _ := waitOnCall(t, e)
		resp, err := e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: w.GetRunId()})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetRun(); got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || len(got.GetPendingCallIds()) != 0 {
			t.Fatalf("CancelRun = %v; want CANCELLED with nothing pending", got)
		}
		if got := getRun(t, e, w.GetRunId()); got.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED || got.GetLastSequence() <= w.GetLastSequence() {
			t.Fatalf("stored: %v; want CANCELLED with the cancellation results in its range", got)
		}
		noRunWaits(t, e)
		res := e.run(t, t.Context(), runReq("orders", "s1", "hello"))
		if res.status != nil || res.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Fatalf("next run: %v %v", res.status, res.final(t))
		}
		if got := getRun(t, e, w.GetRunId()); got.GetContinuedByRunId() != "" {
			t.Errorf("a run CancelRun ended names %q as its continuation", got.GetContinuedByRunId())
		}
	})
}
