package server

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a/remotea2atest"
)

// remoteCallsEnv serves an app whose coordinator transfers to a remote A2A
// agent (the a2a-go stand-in, answering as adk-go's A2A server does).
func remoteCallsEnv(t *testing.T) (*env, *remotea2atest.Server) {
	remote := remotea2atest.Start(t)
	yaml := fmt.Sprintf(`
apps:
  - name: remote
    root_agent:
      name: coordinator
      description: Routes.
      llm: {model: offline}
      sub_agents:
        - name: partner
          description: Another team's agent.
          remote_a2a: {card_url: %q, timeout: 30s}
`, remote.URL)
	return newEnv(t, withRunnerApps(t, remoteApps(yaml)...)), remote
}

// TestRemoteA2AToolTraffic: a remote agent's own tool call and its
// response (data parts marked function_call and function_response) are
// events of their own, a call and a response, not JSON glued into the
// agent's answer; the answer is the remote's words alone, and the run,
// which waits on nothing, succeeds.
func TestRemoteA2AToolTraffic(t *testing.T) {
	e, _ := remoteCallsEnv(t)
	sess := e.createSession(t, "remote", "u1", "").GetSessionId()
	res := e.run(t, t.Context(), sseReq("remote", sess, "tool: transfer to partner"))
	var partner []string
	for _, k := range res.kinds {
		if strings.HasPrefix(k, "partner") {
			partner = append(partner, k)
		}
	}
	want := []string{"partner: call lookup", "partner: response lookup", "partner: looked it up"}
	if !slices.Equal(partner, want) {
		t.Fatalf("partner's events %q (stream %q), want %q", partner, res.kinds, want)
	}
	for _, ev := range res.events {
		for _, p := range ev.GetContent().GetParts() {
			if strings.Contains(p.GetText(), "{") {
				t.Errorf("event of %s holds JSON text %q", ev.GetAuthor(), p.GetText())
			}
		}
	}
	if rec := res.runs[len(res.runs)-1]; rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("run ended %v waiting on %q, want SUCCEEDED", rec.GetStatus(), rec.GetPendingCallIds())
	}
}

// TestRemoteA2AAnswersWaitingCall: a remote task that waits on a tool
// call (input-required with a function_call data part) makes the run wait
// on that very call; its function_response goes to the remote as a
// function_response data part, in the same task, which completes with
// the answer; the remote is sent no text in its place.
func TestRemoteA2AAnswersWaitingCall(t *testing.T) {
	e, remote := remoteCallsEnv(t)
	for _, how := range []string{"Run", "ResumeRun"} {
		t.Run(how, func(t *testing.T) {
			sess := e.createSession(t, "remote", "u1", "").GetSessionId()
			res := e.run(t, t.Context(), runReq("remote", sess, "wait: transfer to partner"))
			ev := lastBy(res, "partner")
			var call *agentrunnerv1.FunctionCall
			for _, p := range ev.GetContent().GetParts() {
				if fc := p.GetFunctionCall(); fc != nil {
					call = fc
				}
			}
			_, taskID, _ := remoteIDs(ev)
			if call.GetName() != "get_order" || call.GetId() != "wait-"+taskID || !slices.Equal(ev.GetLongRunningToolIds(), []string{call.GetId()}) {
				t.Fatalf("partner's last event %v; want the remote's get_order call, long-running", ev)
			}
			rec := res.runs[len(res.runs)-1]
			if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || !slices.Equal(rec.GetPendingCallIds(), []string{call.GetId()}) {
				t.Fatalf("run ended %v waiting on %q; want INPUT_REQUIRED on %s", rec.GetStatus(), rec.GetPendingCallIds(), call.GetId())
			}
			answer := &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{
				FunctionResponse: &agentrunnerv1.FunctionResponse{Id: call.GetId(), Name: call.GetName(), Response: mustStruct(t, map[string]any{"status": "shipped"})}}}}}
			var next runResult
			if how == "Run" {
				next = e.run(t, t.Context(), &servicev1.RunRequest{AppName: "remote", UserId: "u1", SessionId: sess, NewMessage: answer})
			} else {
				next = e.resume(t, &servicev1.ResumeRunRequest{RunId: rec.GetRunId(), Answers: answer})
			}
			if got := lastBy(next, "partner").GetContent().GetParts(); len(got) != 1 || got[0].GetText() != `got {"status":"shipped"}` {
				t.Errorf("after the answer: stream %q, want the remote task's answer to the call", next.kinds)
			}
			all := remote.Received()
			last := all[len(all)-1]
			if !last.Continued || last.TaskID != taskID || len(last.Parts) != 1 || last.Parts[0].Metadata["adk_type"] != "function_response" {
				t.Fatalf("the answer reached the remote as %+v; want a function_response data part continuing task %s", last, taskID)
			}
			if d, _ := last.Parts[0].Content.(a2a.Data).Value.(map[string]any); d["id"] != call.GetId() || d["name"] != "get_order" {
				t.Errorf("function_response %v; want the call's id and name", d)
			}
		})
	}
}

// resume runs ResumeRun and collects its stream as run does.
func (e *env) resume(t *testing.T, req *servicev1.ResumeRunRequest) runResult {
	t.Helper()
	stream, err := e.runner.ResumeRun(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	resps, err := collectRun(t, stream)
	res := runResult{status: err}
	for _, r := range resps {
		if r.GetRun() != nil {
			res.runs = append(res.runs, r.GetRun())
		}
		if ev := r.GetEvent(); ev != nil && !ev.GetPartial() {
			res.events = append(res.events, ev)
			res.kinds = append(res.kinds, ev.GetAuthor())
		}
	}
	return res
}

// TestRemoteA2AAbandonedTaskCancelled: a remote task the run waits on is
// cancelled on the remote when our side abandons it: CancelRun on the
// waiting run, or a plain message that supersedes the waiting call.
func TestRemoteA2AAbandonedTaskCancelled(t *testing.T) {
	e, remote := remoteCallsEnv(t)
	for _, how := range []string{"CancelRun", "a new message"} {
		t.Run(how, func(t *testing.T) {
			sess := e.createSession(t, "remote", "u1", "").GetSessionId()
			res := e.run(t, t.Context(), runReq("remote", sess, "wait: transfer to partner"))
			rec := res.runs[len(res.runs)-1]
			_, taskID, _ := remoteIDs(lastBy(res, "partner"))
			if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || taskID == "" {
				t.Fatalf("run ended %v (stream %q); want INPUT_REQUIRED on a remote task", rec.GetStatus(), res.kinds)
			}
			if how == "CancelRun" {
				if _, err := e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: rec.GetRunId()}); err != nil {
					t.Fatal(err)
				}
			} else {
				e.run(t, t.Context(), runReq("remote", sess, "hello"))
			}
			// Cancelled before CancelRun or the new run returned: nothing to
			// wait for but a cancellation already received.
			select {
			case got := <-remote.Canceled:
				if got != taskID {
					t.Errorf("remote task %s cancelled, want %s", got, taskID)
				}
			default:
				t.Fatalf("the remote task %s was not cancelled", taskID)
			}
		})
	}
}
