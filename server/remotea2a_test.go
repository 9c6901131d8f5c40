package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a"
	"github.com/agentrunner/agentrunner/runner/agent/remotea2a/remotea2atest"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// remoteApps builds the apps of an apps file (YAML) with the offline
// model, as `agentrunner serve` would: the remote agents' cards are
// fetched here.
func remoteApps(yaml string) []func(t *testing.T) apps.App {
	build := func(t *testing.T) []apps.App {
		cfg, err := apps.Parse("apps.yaml", []byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		models := func(context.Context, string) (model.Model, error) { return offline.New(offline.Config{}), nil }
		built, err := apps.Builder{Models: models}.Build(t.Context(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return built
	}
	var got []apps.App
	var out []func(t *testing.T) apps.App
	for i := range strings.Count(yaml, "root_agent:") {
		out = append(out, func(t *testing.T) apps.App {
			if got == nil {
				got = build(t)
			}
			return got[i]
		})
	}
	return out
}

// remoteIDs reads the remote ids an event of a remote agent carries.
func remoteIDs(ev *agentrunnerv1.Event) (contextID, taskID, state string) {
	m := ev.GetCustomMetadata().GetFields()[remotea2a.MetadataKey].GetStructValue().GetFields()
	return m["context_id"].GetStringValue(), m["task_id"].GetStringValue(), m["task_state"].GetStringValue()
}

// lastBy returns the last complete event of author in res.
func lastBy(res runResult, author string) *agentrunnerv1.Event {
	for i := len(res.events) - 1; i >= 0; i-- {
		if ev := res.events[i]; !ev.GetPartial() && ev.GetAuthor() == author {
			return ev
		}
	}
	return nil
}

func sseReq(app, session, msg string) *servicev1.RunRequest {
	req := runReq(app, session, msg)
	req.RunConfig = &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	return req
}

// TestRemoteA2AAgent runs apps with a remote A2A agent (the a2a-go server
// standing in for another team's agent) through the gRPC server: transfer
// to it and back, a workflow step on it, input-required answered by Run
// and by ResumeRun, a failing task.
func TestRemoteA2AAgent(t *testing.T) {
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
          remote_a2a: {card_url: %[1]q, timeout: 30s}
  - name: pipeline
    root_agent:
      name: steps
      sequential: {}
      sub_agents:
        - name: first
          llm: {model: offline}
        - name: partner_step
          remote_a2a: {card_url: %[1]q}
`, remote.URL)
	e := newEnv(t, withRunnerApps(t, remoteApps(yaml)...))

	t.Run("transfer to it and back", func(t *testing.T) {
		sess := e.createSession(t, "remote", "u1", "").GetSessionId()
		first := e.run(t, t.Context(), sseReq("remote", sess, "transfer to partner"))
		ev := lastBy(first, "partner")
		if ev.GetContent().GetParts()[0].GetText() != "remote echo: transfer to partner" {
			t.Fatalf("stream %q, want partner's echo", first.kinds)
		}
		if n := strings.Count(strings.Join(first.kinds, "|"), "partial"); n < 2 {
			t.Errorf("stream %q: want the remote agent's chunks as partial events", first.kinds)
		}
		ctxID, taskID, state := remoteIDs(ev)
		if ctxID == "" || taskID == "" || state != "TASK_STATE_COMPLETED" {
			t.Errorf("custom_metadata = %v, want the remote context, task and completed state", ev.GetCustomMetadata())
		}
		back := e.run(t, t.Context(), runReq("remote", sess, "hello"))
		if !slices.Equal(back.answers, []string{"coordinator"}) {
			t.Errorf("next turn answered by %v (%q), want coordinator", back.answers, back.kinds)
		}
		again := e.run(t, t.Context(), runReq("remote", sess, "transfer to partner again"))
		if lastBy(again, "partner") == nil {
			t.Fatalf("stream %q, want partner", again.kinds)
		}
		got := remote.Received()
		last := got[len(got)-1]
		if last.ContextID != ctxID {
			t.Errorf("second call in remote context %q, want the session's %q", last.ContextID, ctxID)
		}
		if !strings.Contains(last.Text, "[coordinator] said: offline model: you said: hello") {
			t.Errorf("second call sent %q, want what the coordinator said since as context", last.Text)
		}
	})

	t.Run("a step of a sequential agent", func(t *testing.T) {
		sess := e.createSession(t, "pipeline", "u1", "").GetSessionId()
		res := e.run(t, t.Context(), runReq("pipeline", sess, "hi"))
		want := []string{"first: offline model: you said: hi", "partner_step: remote echo: hi"}
		if !slices.Equal(res.kinds, want) {
			t.Errorf("stream %q, want %q", res.kinds, want)
		}
		got := remote.Received()
		if !strings.Contains(got[len(got)-1].Text, "[first] said: offline model: you said: hi") {
			t.Errorf("the step was sent %q, want the previous step's answer as context", got[len(got)-1].Text)
		}
	})

	answer := func(t *testing.T, call *agentrunnerv1.FunctionCall, text string) *agentrunnerv1.Content {
		return &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{
			FunctionResponse: &agentrunnerv1.FunctionResponse{Id: call.GetId(), Name: call.GetName(), Response: mustStruct(t, map[string]any{"text": text})}}}}}
	}
	// ask starts a task that asks for input and returns the call the run
	// waits on, the run and the remote task.
	ask := func(t *testing.T, sess string) (*agentrunnerv1.FunctionCall, string, string) {
		res := e.run(t, t.Context(), runReq("remote", sess, "ask: transfer to partner"))
		ev := lastBy(res, "partner")
		parts := ev.GetContent().GetParts()
		call := parts[len(parts)-1].GetFunctionCall()
		if call.GetName() != remotea2a.InputRequiredName || !slices.Equal(ev.GetLongRunningToolIds(), []string{call.GetId()}) {
			t.Fatalf("stream %q; last event %v, want a long-running %s call", res.kinds, ev, remotea2a.InputRequiredName)
		}
		if msg := call.GetArgs().GetFields()["message"].GetStringValue(); msg != "what is your order number?" {
			t.Errorf("call message = %q, want the remote agent's question", msg)
		}
		rec := res.runs[len(res.runs)-1]
		if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || !slices.Equal(rec.GetPendingCallIds(), []string{call.GetId()}) {
			t.Fatalf("run ended %v waiting on %q, want INPUT_REQUIRED on the call", rec.GetStatus(), rec.GetPendingCallIds())
		}
		_, taskID, _ := remoteIDs(ev)
		return call, rec.GetRunId(), taskID
	}
	continued := func(t *testing.T, res runResult, taskID string) {
		t.Helper()
		if ev := lastBy(res, "partner"); ev.GetContent().GetParts()[0].GetText() != "order 42 confirmed" {
			t.Errorf("stream %q, want the remote task's answer", res.kinds)
		}
		got := remote.Received()
		if last := got[len(got)-1]; !last.Continued || last.TaskID != taskID || last.Text != "42" {
			t.Errorf("answer reached the remote agent as %+v, want %q continuing task %s", last, "42", taskID)
		}
	}

	t.Run("input-required answered through Run", func(t *testing.T) {
		sess := e.createSession(t, "remote", "u1", "").GetSessionId()
		call, _, taskID := ask(t, sess)
		res := e.run(t, t.Context(), &servicev1.RunRequest{AppName: "remote", UserId: "u1", SessionId: sess, NewMessage: answer(t, call, "42")})
		continued(t, res, taskID)
	})

	t.Run("a resumed run continues the remote task", func(t *testing.T) {
		sess := e.createSession(t, "remote", "u1", "").GetSessionId()
		call, runID, taskID := ask(t, sess)
		stream, err := e.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: runID, Answers: answer(t, call, "42")})
		if err != nil {
			t.Fatal(err)
		}
		resps, err := collectRun(t, stream)
		if err != nil {
			t.Fatal(err)
		}
		var res runResult
		for _, r := range resps {
			if ev := r.GetEvent(); ev != nil {
				res.events = append(res.events, ev)
				res.kinds = append(res.kinds, ev.GetAuthor())
			}
		}
		continued(t, res, taskID)
	})

	t.Run("a failing task is one in-band error and the run goes on", func(t *testing.T) {
		sess := e.createSession(t, "remote", "u1", "").GetSessionId()
		res := e.run(t, t.Context(), runReq("remote", sess, "fail: transfer to partner"))
		if res.status != nil || len(res.errors) != 1 || !strings.Contains(res.errors[0].GetMessage(), "the remote agent broke") {
			t.Fatalf("stream %q, errors %v, status %v; want one in-band error with the remote message", res.kinds, res.errors, res.status)
		}
		// partner's last event is its failure, stored without content;
		// the one before it keeps the work.
		var kept string
		for _, ev := range res.events {
			if ev.GetAuthor() == "partner" && !ev.GetPartial() && len(ev.GetContent().GetParts()) > 0 {
				kept = ev.GetContent().GetParts()[0].GetText()
			}
		}
		if kept != "partial work" || lastBy(res, "partner").GetErrorCode() == "" {
			t.Errorf("stream %q, want the work done before the failure kept", res.kinds)
		}
		if next := e.run(t, t.Context(), runReq("remote", sess, "hello")); len(next.errors) != 0 || !slices.Equal(next.answers, []string{"coordinator"}) {
			t.Errorf("next turn %q, want the coordinator answering", next.kinds)
		}
	})
}

// TestRemoteA2AAgentGone: a remote agent that dies mid-task, or hangs past
// the agent's timeout, gives exactly one in-band error; the run ends and
// the session goes on.
func TestRemoteA2AAgentGone(t *testing.T) {
	killed, slow := remotea2atest.Start(t), remotea2atest.Start(t)
	yaml := fmt.Sprintf(`
apps:
  - name: killed
    root_agent:
      name: coordinator
      llm: {model: offline}
      sub_agents:
        - name: partner
          description: Another team's agent.
          remote_a2a: {card_url: %q}
  - name: slow
    root_agent:
      name: coordinator
      llm: {model: offline}
      sub_agents:
        - name: partner
          description: Another team's agent.
          remote_a2a: {card_url: %q, timeout: 200ms}
`, killed.URL+"/.well-known/agent-card.json", slow.URL)
	e := newEnv(t, withRunnerApps(t, remoteApps(yaml)...))

	oneError := func(t *testing.T, res runResult, want string) {
		t.Helper()
		if res.status != nil || len(res.errors) != 1 || !strings.Contains(res.errors[0].GetMessage(), want) {
			t.Fatalf("stream %q, errors %v, status %v; want exactly one in-band error saying %q", res.kinds, res.errors, res.status, want)
		}
	}

	t.Run("killed mid-task", func(t *testing.T) {
		sess := e.createSession(t, "killed", "u1", "").GetSessionId()
		done := make(chan runResult, 1)
		go func() { done <- e.run(t, t.Context(), runReq("killed", sess, "hang: transfer to partner")) }()
		select {
		case <-killed.Hung:
		case <-time.After(30 * time.Second): // bounds the test if the call never arrives
			t.Fatal("the remote task never started")
		}
		killed.Kill()
		res := <-done
		oneError(t, res, `remote agent "partner"`)
		if rec := res.runs[len(res.runs)-1]; rec.GetStatus() == agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
			t.Errorf("run ended %v, want it not waiting", rec.GetStatus())
		}
	})

	t.Run("hangs past its timeout", func(t *testing.T) {
		sess := e.createSession(t, "slow", "u1", "").GetSessionId()
		res := e.run(t, t.Context(), runReq("slow", sess, "hang: transfer to partner"))
		oneError(t, res, "did not finish its turn within 200ms")
		<-slow.Hung
	})
}
