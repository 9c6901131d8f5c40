package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
)

// refusalsConfig: a clerk whose get_order tool the caller answers, under
// a user's daily budget of %[1]d tokens, and an app under an app-wide
// daily budget of one token.
const refusalsConfig = `
models:
  - name: priced
    provider: offline
    price: {currency: USD, input: 2, output: 10}
apps:
  - name: clerk
    budgets: {user_daily: {tokens: %[1]d}}
    function_tools:
      - name: get_order
        description: Looks an order up.
        parameters: {type: object, properties: {order_id: {type: string}}, required: [order_id]}
    root_agent: {name: clerk, llm: {model: priced, tools: [get_order]}}
  - name: shared
    budgets: {app_daily: {tokens: 1}}
    root_agent: {name: answer, llm: {model: priced}}
`

// refusalStores are the stores the refusal tests run on.
var refusalStores = []struct {
	name string
	data func(t *testing.T) string
}{
	{"bbolt", func(t *testing.T) string { return filepath.Join(t.TempDir(), "agentrunner.db") }},
	{"postgres", func(t *testing.T) string { return pg.URL(t) }},
}

// refusalsServer serves refusalsConfig with a user budget of limit tokens
// on data, with the HTTP listener (A2A); args are more flags.
func refusalsServer(t *testing.T, data string, limit int, args ...string) (servicev1.RunnerServiceClient, servicev1.SessionServiceClient, string, func()) {
	t.Helper()
	cfg := writeFile(t, filepath.Join(t.TempDir(), "apps.yaml"), fmt.Sprintf(refusalsConfig, limit))
	addr, console, _, stop := startConsole(t, append([]string{"--config", cfg, "--data", data}, args...)...)
	conn := dial(t, addr)
	return servicev1.NewRunnerServiceClient(conn), servicev1.NewSessionServiceClient(conn), console, stop
}

// resumeOutcome resumes a run and returns the stream's last record, or
// the error that ended the stream.
func resumeOutcome(t *testing.T, rc servicev1.RunnerServiceClient, req *servicev1.ResumeRunRequest) (*agentrunnerv1.Run, error) {
	stream, err := rc.ResumeRun(t.Context(), req)
	if err != nil {
		return nil, err
	}
	var last *agentrunnerv1.Run
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return last, nil
		}
		if err != nil {
			return last, err
		}
		if r := resp.GetRun(); r != nil {
			last = r
		}
	}
}

// answerPart answers the get_order call of task as A2A sends it.
func answerPart(call map[string]any) *a2a.Part {
	p := a2a.NewDataPart(map[string]any{"id": call["id"], "name": "get_order", "response": map[string]any{"status": "shipped"}})
	p.SetMeta("adk_type", "function_response")
	return p
}

// TestSpentBudgetKeepsRunWaiting (issue 46): once a daily budget is
// spent, answering a waiting run through ResumeRun or an A2A reply is
// refused with RESOURCE_EXHAUSTED before anything is stored: the run
// keeps waiting, and goes on once the budget allows. (It used to store
// the answer and end FAILED, never to be resumed.)
func TestSpentBudgetKeepsRunWaiting(t *testing.T) {
	for _, st := range refusalStores {
		t.Run(st.name, func(t *testing.T) {
			data := st.data(t)
			rc, sc, console, stop := refusalsServer(t, data, 1)
			c, _ := a2aClient(t, console, "clerk", a2a.TransportProtocolJSONRPC)
			task := sendBlocking(t, c, textMessage("", `call get_order {"order_id":"42"}`))
			if task.Status.State != a2a.TaskStateInputRequired || task.Status.Message == nil || len(task.Status.Message.Parts) != 1 {
				t.Fatalf("task %s is %s; want input-required on one call", task.ID, task.Status.State)
			}
			call, _ := task.Status.Message.Parts[0].Data().(map[string]any)
			before := sessionEvents(t, sc, "clerk", "a2a", task.ContextID)

			answers := &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
				Id: fmt.Sprint(call["id"]), Name: "get_order", Response: mustStruct(t, map[string]any{"status": "shipped"})}}}}}
			_, err := resumeOutcome(t, rc, &servicev1.ResumeRunRequest{RunId: string(task.ID), Answers: answers})
			if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "budget user_daily") {
				t.Fatalf("ResumeRun with the daily budget spent: %v; want RESOURCE_EXHAUSTED naming it", err)
			}
			_, err = c.SendMessage(t.Context(), &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, answerPart(call))})
			if err == nil || !strings.Contains(err.Error(), "budget user_daily") {
				t.Fatalf("A2A reply with the daily budget spent: %v; want refused by the budget", err)
			}
			waiting(t, rc, string(task.ID))
			if after := sessionEvents(t, sc, "clerk", "a2a", task.ContextID); after != before {
				t.Fatalf("session holds %d events after the refusals, %d before: a refusal stores nothing", after, before)
			}

			stop()
			rc, _, console, _ = refusalsServer(t, data, 1_000_000)
			c, _ = a2aClient(t, console, "clerk", a2a.TransportProtocolJSONRPC)
			done := sendBlocking(t, c, &a2a.SendMessageRequest{Message: a2a.NewMessageForTask(a2a.MessageRoleUser, task, answerPart(call))})
			if done.ID != task.ID || done.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("reply once the budget allows: task %s %s; want task %s completed", done.ID, done.Status.State, task.ID)
			}
		})
	}
}

func mustStruct(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// waiting checks that run id still waits on its caller.
func waiting(t *testing.T, rc servicev1.RunnerServiceClient, id string) {
	t.Helper()
	got, err := rc.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id})
	if err != nil {
		t.Fatal(err)
	}
	if r := got.GetRun(); r.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED {
		t.Fatalf("run %s is %v (%v) after the refusals; want it still INPUT_REQUIRED", id, r.GetStatus(), r.GetError())
	}
}

// sessionEvents is the number of events session holds.
func sessionEvents(t *testing.T, sc servicev1.SessionServiceClient, app, user, session string) int {
	t.Helper()
	got, err := sc.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: app, UserId: user, SessionId: session})
	if err != nil {
		t.Fatal(err)
	}
	return len(got.GetEvents())
}

// TestRefusedA2ASendCreatesNothing (issue 46): an A2A send a budget
// refuses, blocking or streaming, in a new context or one it names,
// creates no session.
func TestRefusedA2ASendCreatesNothing(t *testing.T) {
	for _, st := range refusalStores {
		t.Run(st.name, func(t *testing.T) {
			_, sc, console, _ := refusalsServer(t, st.data(t), 1)
			c, _ := a2aClient(t, console, "clerk", a2a.TransportProtocolJSONRPC)
			first := sendBlocking(t, c, textMessage("", "hello"))
			if first.Status.State != a2a.TaskStateCompleted {
				t.Fatalf("first send: %s", first.Status.State)
			}
			for i, req := range []*a2a.SendMessageRequest{textMessage("", "again"), textMessage("named-context", "again")} {
				if _, err := c.SendMessage(t.Context(), req); err == nil || !strings.Contains(err.Error(), "budget user_daily") {
					t.Errorf("send %d with the budget spent: %v; want refused by the budget", i, err)
				}
				var err error
				for _, e := range c.SendStreamingMessage(t.Context(), req) {
					if e != nil {
						err = e
						break
					}
				}
				if err == nil || !strings.Contains(err.Error(), "budget user_daily") {
					t.Errorf("streaming send %d with the budget spent: %v; want refused by the budget", i, err)
				}
			}
			list, err := sc.ListSessions(t.Context(), &servicev1.ListSessionsRequest{AppName: "clerk", UserId: "a2a"})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(list.GetSessions()); n != 1 {
				t.Fatalf("user a2a has %d sessions after refused sends; want only the first send's", n)
			}
		})
	}
}

// TestBudgetRefusalHidesAppSpend (issue 46): a refusal by an app's daily
// budget tells a user that it is reached, and its limit, not what the
// whole app spent (every user's spend); an admin is told the spend.
func TestBudgetRefusalHidesAppSpend(t *testing.T) {
	dir := t.TempDir()
	authFile := writeFile(t, filepath.Join(dir, "auth.yaml"), `principals:
  - {name: alice, token_sha256: `+sha("alice-secret")+`, apps: ["*"], users: [self]}
  - {name: root, token_sha256: `+sha("root-secret")+`, admin: true}
`)
	for _, st := range refusalStores {
		t.Run(st.name, func(t *testing.T) {
			rc, sc, console, _ := refusalsServer(t, st.data(t), 1000, "--auth-file", authFile)
			as := func(token string) context.Context {
				return metadata.AppendToOutgoingContext(t.Context(), "authorization", "Bearer "+token)
			}
			alice := as("alice-secret")
			if _, err := sc.CreateSession(alice, &servicev1.CreateSessionRequest{AppName: "shared", UserId: "alice", SessionId: "s"}); err != nil {
				t.Fatal(err)
			}
			if err := runWith(alice, rc, &servicev1.RunRequest{AppName: "shared", UserId: "alice", SessionId: "s", NewMessage: userText("hello there")}); err != nil {
				t.Fatalf("first run: %v", err)
			}
			got, err := sc.GetSession(alice, &servicev1.GetSessionRequest{AppName: "shared", UserId: "alice", SessionId: "s"})
			if err != nil {
				t.Fatal(err)
			}
			spent := got.GetSession().GetUsage().GetTotalTokenCount()
			hidden := fmt.Sprintf("%d tokens of", spent)

			err = runWith(alice, rc, &servicev1.RunRequest{AppName: "shared", UserId: "alice", SessionId: "s", NewMessage: userText("again")})
			if msg, meta := refusalOf(t, err); strings.Contains(msg, hidden) || meta["spent"] != "" || !strings.Contains(msg, "reached its limit of 1 tokens") {
				t.Errorf("alice's refusal says %q, %v; want the app budget reached, its limit, not the app's spend", msg, meta)
			}
			c, _ := a2aClient(t, console, "shared", a2a.TransportProtocolJSONRPC)
			ctx := a2aclient.AttachServiceParams(t.Context(), a2aclient.ServiceParams{"authorization": {"Bearer alice-secret"}})
			if _, err := c.SendMessage(ctx, textMessage("", "again")); err == nil || strings.Contains(err.Error(), hidden) || !strings.Contains(err.Error(), "budget app_daily") {
				t.Errorf("alice's A2A refusal: %v; want the app budget named, not the app's spend", err)
			}

			root := as("root-secret")
			if _, err := sc.CreateSession(root, &servicev1.CreateSessionRequest{AppName: "shared", UserId: "bob", SessionId: "s"}); err != nil {
				t.Fatal(err)
			}
			err = runWith(root, rc, &servicev1.RunRequest{AppName: "shared", UserId: "bob", SessionId: "s", NewMessage: userText("hello")})
			if msg, meta := refusalOf(t, err); !strings.Contains(msg, hidden) || meta["spent"] != fmt.Sprint(spent) {
				t.Errorf("the admin's refusal says %q, %v; want the app's spend, %d tokens", msg, meta, spent)
			}
		})
	}
}

// runWith runs req to its end as ctx's caller and returns the stream's
// error.
func runWith(ctx context.Context, rc servicev1.RunnerServiceClient, req *servicev1.RunRequest) error {
	stream, err := rc.Run(ctx, req)
	if err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// refusalOf returns a budget refusal's message and its ErrorInfo's
// metadata; it fails the test on another error.
func refusalOf(t *testing.T, err error) (string, map[string]string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.ResourceExhausted || !strings.Contains(st.Message(), "budget app_daily") {
		t.Fatalf("%v; want RESOURCE_EXHAUSTED by the app_daily budget", err)
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return st.Message(), info.GetMetadata()
		}
	}
	t.Fatalf("refusal %v has no ErrorInfo", err)
	return "", nil
}
