package main

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	a2agrpc "github.com/a2aproject/a2a-go/v2/a2agrpc/v1"
	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	a2aserve "github.com/agentrunner/agentrunner/server/a2a"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

var a2aBindings = []a2a.TransportProtocol{a2a.TransportProtocolGRPC, a2a.TransportProtocolJSONRPC, a2a.TransportProtocolHTTPJSON}

// a2aClient resolves app's card on the HTTP listener (the SDK's resolver
// validates it) and returns the SDK's client over binding.
func a2aClient(t *testing.T, console, app string, binding a2a.TransportProtocol) (*a2aclient.Client, *a2a.AgentCard) {
	t.Helper()
	card, err := agentcard.DefaultResolver.Resolve(t.Context(), console+"a2a/"+app)
	if err != nil {
		t.Fatalf("resolve the card of %s: %v", app, err)
	}
	c, err := a2aclient.NewFromCard(t.Context(), card,
		a2agrpc.WithGRPCTransport(grpc.WithTransportCredentials(insecure.NewCredentials())),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{binding}}))
	if err != nil {
		t.Fatalf("client over %s: %v", binding, err)
	}
	t.Cleanup(func() { c.Destroy() })
	return c, card
}

func textMessage(contextID string, text string) *a2a.SendMessageRequest {
	m := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))
	m.ContextID = contextID
	return &a2a.SendMessageRequest{Message: m}
}

// artifactText is the text of a task's artifacts, in order.
func artifactText(task *a2a.Task) string {
	var b strings.Builder
	for _, a := range task.Artifacts {
		for _, p := range a.Parts {
			b.WriteString(p.Text())
		}
	}
	return b.String()
}

func sendBlocking(t *testing.T, c *a2aclient.Client, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := c.SendMessage(t.Context(), req)
	if err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("SendMessage returned %T; want a task", res)
	}
	return task
}

// TestA2ABindings drives every app behaviour over each binding with the
// SDK's own client against the real server.
func TestA2ABindings(t *testing.T) {
	addr, console, _, _ := startConsole(t)
	conn := dial(t, addr)
	rc, sc := servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn)
	for _, b := range a2aBindings {
		t.Run(string(b), func(t *testing.T) {
			testBlockingMultiTurn(t, console, b, sc)
			testStreamAndResubscribe(t, console, b, rc, sc)
			testCancel(t, console, b, rc)
			testInputRequired(t, console, b)
		})
	}
}

// testBlockingMultiTurn: a blocking send completes with the answer as an
// artifact; a second send in its context is a new task in the same
// session, which holds both turns.
func testBlockingMultiTurn(t *testing.T, console string, b a2a.TransportProtocol, sc servicev1.SessionServiceClient) {
	c, _ := a2aClient(t, console, "support", b)
	first := sendBlocking(t, c, textMessage("", "hello there"))
	if first.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(first), "you said: hello there") || first.ContextID == "" {
		t.Fatalf("first task: state %s, context %q, artifacts %q", first.Status.State, first.ContextID, artifactText(first))
	}
	second := sendBlocking(t, c, textMessage(first.ContextID, "and again"))
	if second.ContextID != first.ContextID || second.ID == first.ID || !strings.Contains(artifactText(second), "you said: and again") {
		t.Fatalf("second task %s in %q (%q); want a new task in %q", second.ID, second.ContextID, artifactText(second), first.ContextID)
	}
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "support", UserId: "a2a", SessionId: first.ContextID})
	if err != nil {
		t.Fatal(err)
	}
	var users []string
	for _, ev := range got.GetEvents() {
		if ev.GetAuthor() == "user" {
			users = append(users, ev.GetContent().GetParts()[0].GetText())
		}
	}
	if !slices.Equal(users, []string{"hello there", "and again"}) {
		t.Errorf("session %s holds user turns %q; want both sends", first.ContextID, users)
	}
	// The task as GetTask tells it matches what the send returned.
	task, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: second.ID})
	if err != nil || task.Status.State != a2a.TaskStateCompleted || artifactText(task) != artifactText(second) {
		t.Errorf("GetTask = %v (%q), %v; want the completed task", task, artifactText(task), err)
	}
	list, err := c.ListTasks(t.Context(), &a2a.ListTasksRequest{ContextID: first.ContextID})
	if err != nil || len(list.Tasks) != 2 || list.Tasks[0].ID != second.ID {
		t.Errorf("ListTasks = %+v, %v; want both tasks, newest first", list, err)
	}
}

// testStreamAndResubscribe: the slow app's first chunk arrives while the
// run still runs; after the end, SubscribeToTask replays every event once.
func testStreamAndResubscribe(t *testing.T, console string, b a2a.TransportProtocol, rc servicev1.RunnerServiceClient, sc servicev1.SessionServiceClient) {
	c, _ := a2aClient(t, console, "slow", b)
	var task *a2a.Task
	var chunks, lastChunks int
	var final a2a.TaskState
	for ev, err := range c.SendStreamingMessage(t.Context(), textMessage("", "slowly now")) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		switch v := ev.(type) {
		case *a2a.Task:
			task = v
		case *a2a.TaskArtifactUpdateEvent:
			if v.LastChunk {
				lastChunks++
				continue
			}
			if chunks++; chunks == 1 {
				run, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: string(v.TaskID)})
				if err != nil || run.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_RUNNING {
					t.Errorf("at the first chunk the run is %v, %v; want RUNNING", run.GetRun().GetStatus(), err)
				}
			}
		case *a2a.TaskStatusUpdateEvent:
			final = v.Status.State
		}
	}
	if task == nil || chunks < 2 || lastChunks != 1 || final != a2a.TaskStateCompleted {
		t.Fatalf("stream: task %v, %d chunks, %d complete, final %s", task, chunks, lastChunks, final)
	}
	// Replay: one artifact per stored agent event with content, once.
	evs, err := sc.ListEvents(t.Context(), &servicev1.ListEventsRequest{AppName: "slow", UserId: "a2a", SessionId: task.ContextID})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, ev := range evs.GetEvents() {
		if ev.GetAuthor() != "user" && len(ev.GetContent().GetParts()) > 0 {
			want++
		}
	}
	seen := map[a2a.ArtifactID]int{}
	var replayed *a2a.Task
	for ev, err := range c.SubscribeToTask(t.Context(), &a2a.SubscribeToTaskRequest{ID: task.ID}) {
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		if v, ok := ev.(*a2a.TaskArtifactUpdateEvent); ok {
			seen[v.Artifact.ID]++
		}
		if v, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			replayed = &a2a.Task{Status: v.Status}
		}
	}
	if len(seen) != want || want == 0 {
		t.Errorf("replay has artifacts %v; want the %d stored agent events", seen, want)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("artifact %s replayed %d times", id, n)
		}
	}
	if replayed == nil || replayed.Status.State != a2a.TaskStateCompleted {
		t.Errorf("replay ends %v; want completed", replayed)
	}
}

// testCancel: CancelTask of a running task ends it canceled, which
// GetRun on our API confirms.
func testCancel(t *testing.T, console string, b a2a.TransportProtocol, rc servicev1.RunnerServiceClient) {
	c, _ := a2aClient(t, console, "slow", b)
	// Cancel while the stream is open: its reader going away would cancel
	// the run too (on_disconnect CANCEL), and the test would prove nothing.
	var id a2a.TaskID
	var canceled *a2a.Task
	var final a2a.TaskState
	for ev, err := range c.SendStreamingMessage(t.Context(), textMessage("", "cancel me")) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		switch v := ev.(type) {
		case *a2a.Task:
			id = v.ID
			if canceled, err = c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id}); err != nil {
				t.Fatalf("CancelTask: %v", err)
			}
		case *a2a.TaskStatusUpdateEvent:
			final = v.Status.State
		}
	}
	if canceled == nil || canceled.Status.State != a2a.TaskStateCanceled || final != a2a.TaskStateCanceled {
		t.Fatalf("CancelTask = %v, stream ended %s; want canceled", canceled, final)
	}
	run, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: string(id)})
	if err != nil || run.GetRun().GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_CANCELLED {
		t.Errorf("GetRun = %v, %v; want CANCELLED", run, err)
	}
	if _, err := c.CancelTask(t.Context(), &a2a.CancelTaskRequest{ID: id}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Errorf("second CancelTask: %v; want task not cancelable", err)
	}
	if _, err := c.GetTask(t.Context(), &a2a.GetTaskRequest{ID: "no-such-task"}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Errorf("GetTask of no task: %v; want task not found", err)
	}
}

// testInputRequired: a client-executed tool makes the task input-required
// with the call as a data part; a reply in the same task answers it.
func testInputRequired(t *testing.T, console string, b a2a.TransportProtocol) {
	c, _ := a2aClient(t, console, "orders", b)
	task := sendBlocking(t, c, textMessage("", `call get_order {"order_id":"42"}`))
	if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil || len(task.Status.Message.Parts) != 1 {
		t.Fatalf("task %s is %s with %v; want input-required on one call", task.ID, task.Status.State, task.Status.Message)
	}
	call, _ := task.Status.Message.Parts[0].Data().(map[string]any)
	if call["name"] != "get_order" || task.Status.Message.Parts[0].Metadata["adk_type"] != "function_call" {
		t.Fatalf("waiting on %v; want get_order as a function_call data part", task.Status.Message.Parts[0])
	}
	answer := a2a.NewDataPart(map[string]any{"id": call["id"], "name": "get_order", "response": map[string]any{"status": "shipped"}})
	answer.SetMeta("adk_type", "function_response")
	reply := a2a.NewMessageForTask(a2a.MessageRoleUser, task, answer)
	done := sendBlocking(t, c, &a2a.SendMessageRequest{Message: reply})
	if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted || !strings.Contains(artifactText(done), `get_order returned {"status":"shipped"}`) {
		t.Fatalf("after the answer: task %s %s %q; want task %s completed with the tool's result", done.ID, done.Status.State, artifactText(done), task.ID)
	}
	if _, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, a2a.NewTextPart("more"))}); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("a message to a completed task: %v; want unsupported operation", err)
	}
}

// TestA2AAuth: with an auth file, each principal acts as its own user,
// another's task is refused, and a call without credentials is refused,
// on the gRPC port and the HTTP listener alike.
func TestA2AAuth(t *testing.T) {
	dir := t.TempDir()
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: ["*"], users: [self]}
  - {name: bob, token_sha256: `+sha("bob-secret")+`, apps: ["*"], users: [self]}
`)
	_, console, _, _ := startConsole(t, "--auth-file", authFile)
	as := func(token string) context.Context {
		return a2aclient.AttachServiceParams(t.Context(), a2aclient.ServiceParams{"authorization": {"Bearer " + token}})
	}
	for _, b := range []a2a.TransportProtocol{a2a.TransportProtocolGRPC, a2a.TransportProtocolJSONRPC} {
		t.Run(string(b), func(t *testing.T) {
			c, card := a2aClient(t, console, "support", b)
			if _, ok := card.SecuritySchemes["bearer"]; !ok {
				t.Errorf("card schemes %v; want bearer", card.SecuritySchemes)
			}
			res, err := c.SendMessage(as("alice-secret"), textMessage("", "mine"))
			if err != nil {
				t.Fatalf("alice sends: %v", err)
			}
			task := res.(*a2a.Task)
			if _, err := c.GetTask(as("alice-secret"), &a2a.GetTaskRequest{ID: task.ID}); err != nil {
				t.Errorf("alice gets her task: %v", err)
			}
			if _, err := c.GetTask(as("bob-secret"), &a2a.GetTaskRequest{ID: task.ID}); !errors.Is(err, a2a.ErrUnauthorized) {
				t.Errorf("bob gets alice's task: %v; want permission denied", err)
			}
			bob := textMessage(task.ContextID, "into alice's context")
			res, err = c.SendMessage(as("bob-secret"), bob)
			if err != nil {
				t.Fatalf("bob sends: %v", err)
			}
			if bt := res.(*a2a.Task); bt.ContextID != task.ContextID || !strings.Contains(artifactText(bt), "into alice") {
				t.Errorf("bob's send: %v", bt)
			}
			if list, err := c.ListTasks(as("bob-secret"), &a2a.ListTasksRequest{ContextID: task.ContextID}); err != nil || len(list.Tasks) != 1 || list.Tasks[0].ID == task.ID {
				t.Errorf("bob lists the context: %+v, %v; want only his own task (his own session)", list, err)
			}
			users := a2aclient.ServiceParams{"authorization": {"Bearer bob-secret"}, "x-agentrunner-user": {"alice"}}
			if _, err := c.SendMessage(a2aclient.AttachServiceParams(t.Context(), users), textMessage("", "as alice")); !errors.Is(err, a2a.ErrUnauthorized) {
				t.Errorf("bob acting as alice: %v; want permission denied", err)
			}
			if _, err := c.SendMessage(t.Context(), textMessage("", "anonymous")); err == nil {
				t.Errorf("a send without credentials succeeded")
			}
		})
	}
}

// adkEvent is what adk-go's remoteagent makes of one A2A event (its
// session.Event, reduced to what the test checks).
type adkEvent struct {
	text    string
	partial bool
	final   bool
	state   a2a.TaskState
}

// adkRead reads a streamed task as adk-go's remoteagent (v2) does:
// adka2a.ToSessionEvent for each event, then its run processor's
// aggregatePartial. An event whose metadata sets adk_partial is taken as
// it is (partial as the flag says); an artifact update's text parts are
// the event's content; a status update that is terminal or
// input-required ends the run; other status updates with a message are
// partial thoughts.
func adkRead(t *testing.T, seq func(func(a2a.Event, error) bool)) []adkEvent {
	t.Helper()
	var out []adkEvent
	for ev, err := range seq {
		if err != nil {
			t.Fatalf("remote agent: %v", err)
		}
		switch v := ev.(type) {
		case *a2a.TaskArtifactUpdateEvent:
			partial, set := v.Metadata["adk_partial"].(bool)
			if !set {
				partial = v.Append || !v.LastChunk
			}
			if partial && v.LastChunk { // an ADK partial artifact reset
				continue
			}
			var b strings.Builder
			for _, p := range v.Artifact.Parts {
				b.WriteString(p.Text())
			}
			out = append(out, adkEvent{text: b.String(), partial: partial})
		case *a2a.TaskStatusUpdateEvent:
			if v.Status.State.Terminal() || v.Status.State == a2a.TaskStateInputRequired {
				out = append(out, adkEvent{final: true, state: v.Status.State})
			}
		}
	}
	return out
}

// TestA2AADKRemoteAgent reads the slow app's card and a streamed task as
// adk-go's remoteagent does: agentcard.DefaultResolver, a client from the
// SDK's default factory (no transport preference: the card's order), one
// SendStreamingMessage; the agent's answer arrives as partial chunks, then
// once whole, then the completed status.
func TestA2AADKRemoteAgent(t *testing.T) {
	_, console, _, _ := startConsole(t)
	card, err := agentcard.DefaultResolver.Resolve(t.Context(), console+"a2a/slow")
	if err != nil {
		t.Fatal(err)
	}
	if !card.Capabilities.Streaming || card.Capabilities.PushNotifications || card.Name != "slow" || len(card.Skills) == 0 {
		t.Errorf("card: %+v", card)
	}
	c, err := a2aclient.NewFactory().CreateFromCard(t.Context(), card)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	msg := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("from an ADK agent"))
	evs := adkRead(t, c.SendStreamingMessage(t.Context(), &a2a.SendMessageRequest{Message: msg}))
	var partials, whole []string
	for _, e := range evs[:max(len(evs)-1, 0)] {
		if e.partial {
			partials = append(partials, e.text)
		} else {
			whole = append(whole, e.text)
		}
	}
	if len(evs) == 0 || !evs[len(evs)-1].final || evs[len(evs)-1].state != a2a.TaskStateCompleted {
		t.Fatalf("events %+v; want the completed status last", evs)
	}
	if len(partials) < 2 || len(whole) != 1 || strings.Join(partials, "") != whole[0] || !strings.Contains(whole[0], "you said: from an ADK agent") {
		t.Errorf("partials %q, whole %q; want chunks that add up to the one whole answer", partials, whole)
	}
}

// TestA2ARefusedSendLeavesNoSession: a send without a context that the
// server refuses (here, more parts than --max-parts) leaves no empty
// session behind, however often a client retries it.
func TestA2ARefusedSendLeavesNoSession(t *testing.T) {
	addr, console, _, _ := startConsole(t, "--max-parts", "1")
	c, _ := a2aClient(t, console, "support", a2a.TransportProtocolJSONRPC)
	two := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("one"), a2a.NewTextPart("two"))
	for range 3 {
		if _, err := c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: two}); err == nil {
			t.Fatal("a message of two parts was taken with --max-parts 1")
		}
	}
	sc := servicev1.NewSessionServiceClient(dial(t, addr))
	list, err := sc.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "support", UserId: a2aserve.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(list.GetSessions()); n != 0 {
		t.Fatalf("%d sessions left by refused sends, want none", n)
	}
	// A send that is taken still makes its session.
	sendBlocking(t, c, textMessage("", "one part"))
	if list, err = sc.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "support", UserId: a2aserve.DefaultUser}); err != nil || len(list.GetSessions()) != 1 {
		t.Fatalf("after a taken send: %v, %v; want one session", list.GetSessions(), err)
	}
}
