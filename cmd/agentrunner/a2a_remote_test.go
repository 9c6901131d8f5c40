package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestA2ARemoteAgentrunnerToolCall: an app whose agent is another
// agentrunner's app (the default orders app, over A2A): the remote waits
// on its client-executed get_order, the run waits on that very call, and
// its answer reaches the remote's waiting task, which goes on with it
// (the remote's run succeeds, the same task) instead of being cancelled
// by a new message.
func TestA2ARemoteAgentrunnerToolCall(t *testing.T) {
	remoteAddr, remoteConsole, _, _ := startConsole(t)
	cfg := writeFile(t, filepath.Join(t.TempDir(), "apps.yaml"), fmt.Sprintf(`
apps:
  - name: front
    root_agent:
      name: desk
      description: Routes order questions.
      llm: {model: offline}
      sub_agents:
        - name: orders_team
          description: The orders team's agent.
          remote_a2a: {card_url: %q, timeout: 30s}
`, remoteConsole+"a2a/orders"))
	addr, _, _, _ := startConsole(t, "--config", cfg)
	rc, sc := servicev1.NewRunnerServiceClient(dial(t, addr)), servicev1.NewSessionServiceClient(dial(t, addr))
	sess, err := sc.CreateSession(t.Context(), &servicev1.CreateSessionRequest{AppName: "front", UserId: "u1"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(msg *agentrunnerv1.Content) (*agentrunnerv1.Run, []*agentrunnerv1.Event) {
		t.Helper()
		stream, err := rc.Run(t.Context(), &servicev1.RunRequest{AppName: "front", UserId: "u1", SessionId: sess.GetSession().GetSessionId(), NewMessage: msg})
		if err != nil {
			t.Fatal(err)
		}
		var rec *agentrunnerv1.Run
		var evs []*agentrunnerv1.Event
		for {
			resp, err := stream.Recv()
			if err != nil {
				return rec, evs
			}
			if resp.GetRun() != nil {
				rec = resp.GetRun()
			}
			if ev := resp.GetEvent(); ev != nil && ev.GetAuthor() == "orders_team" {
				evs = append(evs, ev)
			}
		}
	}
	rec, evs := run(userText(`call get_order {"order_id": "42"} and transfer to orders_team`))
	var call *agentrunnerv1.FunctionCall
	var taskID string
	for _, ev := range evs {
		for _, p := range ev.GetContent().GetParts() {
			if fc := p.GetFunctionCall(); fc != nil {
				call = fc
				taskID = ev.GetCustomMetadata().GetFields()["a2a"].GetStructValue().GetFields()["task_id"].GetStringValue()
			}
		}
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED || call.GetName() != "get_order" || len(rec.GetPendingCallIds()) != 1 || rec.GetPendingCallIds()[0] != call.GetId() {
		t.Fatalf("run ended %v waiting on %q, the remote's events %v; want it waiting on the remote's get_order call", rec.GetStatus(), rec.GetPendingCallIds(), evs)
	}
	resp, _ := structpb.NewStruct(map[string]any{"status": "shipped"})
	rec, evs = run(&agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{
		FunctionResponse: &agentrunnerv1.FunctionResponse{Id: call.GetId(), Name: call.GetName(), Response: resp}}}}})
	var answer string
	for _, ev := range evs {
		for _, p := range ev.GetContent().GetParts() {
			answer += p.GetText()
		}
	}
	if rec.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED || !strings.Contains(answer, `get_order returned {"status":"shipped"}`) {
		t.Fatalf("after the answer: run %v, the remote said %q; want the remote's answer from the tool's result", rec.GetStatus(), answer)
	}
	remote, err := servicev1.NewRunnerServiceClient(dial(t, remoteAddr)).GetRun(t.Context(), &servicev1.GetRunRequest{RunId: taskID})
	if err != nil || remote.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Errorf("the remote's waiting run %s: %v, %v; want it answered (SUCCEEDED), not superseded", taskID, remote.GetRun().GetStatus(), err)
	}
}

// TestA2AMessageSentTwice: a message sent again with its id, in the same
// context (a retry, or an agentrunner remote agent resumed after a
// crash), gets the first send's task: the session holds the message once.
func TestA2AMessageSentTwice(t *testing.T) {
	addr, console, _, _ := startConsole(t)
	c, _ := a2aClient(t, console, "support", a2a.TransportProtocolJSONRPC)
	first := sendBlocking(t, c, textMessage("", "hello"))
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("once only"))
	msg.ContextID = first.ContextID
	one := sendBlocking(t, c, &a2a.SendMessageRequest{Message: msg})
	two := sendBlocking(t, c, &a2a.SendMessageRequest{Message: msg})
	if one.ID != two.ID || two.Status.State != a2a.TaskStateCompleted {
		t.Errorf("tasks %s and %s (%s); want the first send's task again", one.ID, two.ID, two.Status.State)
	}
	got, err := servicev1.NewSessionServiceClient(dial(t, addr)).GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "support", UserId: "a2a", SessionId: first.ContextID})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range got.GetEvents() {
		if ev.GetAuthor() == "user" && ev.GetContent().GetParts()[0].GetText() == "once only" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the session holds the message %d times; want once", n)
	}
}
