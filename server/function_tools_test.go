package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/runner/tool/builtin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
)

// ordersApp declares get_order, a tool the client executes, in an apps
// file, on the offline model.
func ordersApp(t *testing.T) apps.App {
	cfg, err := apps.Parse("apps.yaml", []byte(`
apps:
  - name: orders
    function_tools:
      - name: get_order
        description: Looks an order up in the caller's system.
        parameters:
          type: object
          properties: { order_id: { type: string, pattern: "^[0-9]+$" } }
          required: [order_id]
    root_agent: { name: clerk, llm: { model: offline, tools: [get_order] } }
`))
	if err != nil {
		t.Fatal(err)
	}
	built, err := apps.Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return offline.New(offline.Config{}), nil })
	if err != nil {
		t.Fatal(err)
	}
	return built[0]
}

func answerCall(t *testing.T, id string, resp map[string]any) *servicev1.RunRequest {
	return &servicev1.RunRequest{AppName: "orders", UserId: "u1", SessionId: "s1", NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{
		Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: "get_order", Response: mustStruct(t, resp)}},
	}}}}
}

// TestClientExecutedTool runs the round trip a Python or TypeScript client
// makes: the model calls the tool, the run ends waiting with the call's id
// in long_running_tool_ids, the client answers, and the agent goes on.
func TestClientExecutedTool(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, ordersApp))
	e.createSession(t, "orders", "u1", "s1")

	// Arguments the schema refuses: the model gets the error at once and
	// the run does not wait.
	res := e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "abc"}`))
	if want := []string{"clerk: call get_order", "clerk: response get_order", "clerk: offline model: get_order returned"}; res.status != nil || len(res.kinds) != 3 ||
		!slices.Equal(res.kinds[:2], want[:2]) || res.events[0].GetLongRunningToolIds() != nil {
		t.Fatalf("invalid arguments: %v %q, waiting on %q", res.status, res.kinds, res.events[0].GetLongRunningToolIds())
	}

	res = e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "42"}`))
	if res.status != nil || !slices.Equal(res.kinds, []string{"clerk: call get_order"}) {
		t.Fatalf("call: %v %q", res.status, res.kinds)
	}
	waiting := res.events[0].GetLongRunningToolIds()
	if len(waiting) != 1 || waiting[0] != res.events[0].GetContent().GetParts()[0].GetFunctionCall().GetId() {
		t.Fatalf("the run waits on %q", waiting)
	}

	// A reply to a call nobody waits on is refused, and nothing is stored.
	before, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = collectRun(t, mustStream(t, e, answerCall(t, "no-such-call", map[string]any{"status": "shipped"})))
	wantCode(t, err, codes.InvalidArgument, "")
	// So is one without a call id: it would answer nothing.
	_, err = collectRun(t, mustStream(t, e, answerCall(t, "", map[string]any{"status": "shipped"})))
	wantCode(t, err, codes.InvalidArgument, "")
	if !strings.Contains(statusMessage(err), "function_response: id is empty") {
		t.Errorf("reply without a call id refused with %q, want it to say the id is empty", statusMessage(err))
	}
	after, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1"})
	if err != nil || len(after.GetEvents()) != len(before.GetEvents()) {
		t.Fatalf("a refused reply stored events: %d -> %d (%v)", len(before.GetEvents()), len(after.GetEvents()), err)
	}

	res = e.run(t, t.Context(), answerCall(t, waiting[0], map[string]any{"status": "shipped"}))
	if want := []string{`clerk: offline model: get_order returned {"status":"shipped"}`}; res.status != nil || !slices.Equal(res.kinds, want) {
		t.Fatalf("answer: %v %q, want %q", res.status, res.kinds, want)
	}
	// Answered once is answered: the same reply again is refused.
	_, err = collectRun(t, mustStream(t, e, answerCall(t, waiting[0], map[string]any{"status": "shipped"})))
	wantCode(t, err, codes.InvalidArgument, "")

	// The ledger has both calls, each answered once: the refused one by the
	// agent, the other by the client.
	ledger, err := e.sessions.ListToolCalls(t.Context(), &servicev1.ListToolCallsRequest{AppName: "orders", UserId: "u1", SessionId: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, c := range ledger.GetToolCalls() {
		lines = append(lines, fmt.Sprintf("%s waits=%v answered=%v", c.GetTool(), c.GetWaitsForCaller(), c.GetResponseSequence() > c.GetCallSequence()))
	}
	if want := []string{"get_order waits=false answered=true", "get_order waits=true answered=true"}; !slices.Equal(lines, want) {
		t.Fatalf("ledger %q, want %q", lines, want)
	}
	_, err = e.sessions.ListToolCalls(t.Context(), &servicev1.ListToolCallsRequest{AppName: "orders", UserId: "u1"})
	wantCode(t, err, codes.InvalidArgument, "session_id")
}

// mustStream starts a Run; its outcome is read with collectRun.
func mustStream(t *testing.T, e *env, req *servicev1.RunRequest) grpc.ServerStreamingClient[servicev1.RunResponse] {
	t.Helper()
	stream, err := e.runner.Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

// tellerApp's refund tool runs on the server, but only once the caller
// confirms each call; runs counts its executions.
func tellerApp(runs *atomic.Int32) func(t *testing.T) apps.App {
	return func(t *testing.T) apps.App {
		refund := must[tool.Tool](t)(tool.NewFunction("refund", "Refunds an amount.", func(_ tool.Context, args struct {
			Amount float64 `json:"amount"`
		}) (map[string]any, error) {
			runs.Add(1)
			return map[string]any{"refunded": args.Amount}, nil
		}))
		teller := must[agent.Agent](t)(llmagent.New(llmagent.Config{
			Name: "teller", Model: offline.New(offline.Config{}), Tools: []tool.Tool{refund}, RequireConfirmation: []string{"refund"},
		}))
		return apps.App{Name: "bank", Root: teller}
	}
}

func confirm(t *testing.T, id string, ok bool) *servicev1.RunRequest {
	return &servicev1.RunRequest{AppName: "bank", UserId: "u1", SessionId: "s1", NewMessage: &agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{
		Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{
			Id: id, Name: builtin.RequestConfirmationName, Response: mustStruct(t, map[string]any{"confirmed": ok})}},
	}}}}
}

// TestConfirmation checks a tool that requires confirmation: the call
// waits for the caller through a request_confirmation call; approval runs
// it once, rejection gives the model a rejection, and a second answer to
// the same request is refused.
func TestConfirmation(t *testing.T) {
	var runs atomic.Int32
	e := newEnv(t, withRunnerApps(t, tellerApp(&runs)))
	e.createSession(t, "bank", "u1", "s1")
	ask := func(msg string) string {
		t.Helper()
		res := e.run(t, t.Context(), runReq("bank", "s1", msg))
		if want := []string{"teller: call refund", "teller: call request_confirmation"}; res.status != nil || !slices.Equal(res.kinds, want) {
			t.Fatalf("%s: %v %q, want %q", msg, res.status, res.kinds, want)
		}
		req := res.events[1]
		args := req.GetContent().GetParts()[0].GetFunctionCall().GetArgs().AsMap()
		if len(req.GetLongRunningToolIds()) != 1 || args["name"] != "refund" || args["call_id"] != res.events[0].GetContent().GetParts()[0].GetFunctionCall().GetId() {
			t.Fatalf("confirmation request %v", req)
		}
		return req.GetLongRunningToolIds()[0]
	}

	id := ask(`call refund {"amount": 5}`)
	if runs.Load() != 0 {
		t.Fatal("the tool ran before it was confirmed")
	}
	res := e.run(t, t.Context(), confirm(t, id, true))
	if want := []string{"teller: response refund", `teller: offline model: refund returned {"refunded":5}`}; res.status != nil || !slices.Equal(res.kinds, want) || runs.Load() != 1 {
		t.Fatalf("approved: %v %q (ran %d times), want %q", res.status, res.kinds, runs.Load(), want)
	}
	_, err := collectRun(t, mustStream(t, e, confirm(t, id, true)))
	wantCode(t, err, codes.InvalidArgument, "")

	list, err := e.runner.ListApps(t.Context(), &servicev1.ListAppsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if d := list.GetApps()[0].GetRootAgent().GetToolDetails(); len(d) != 1 || d[0].GetKind() != agentrunnerv1.ToolKind_TOOL_KIND_CUSTOM || !d[0].GetRequireConfirmation() {
		t.Fatalf("ListApps tool details %v; want refund, custom, requiring confirmation", d)
	}

	id = ask(`call refund {"amount": 7}`)
	res = e.run(t, t.Context(), confirm(t, id, false))
	if res.status != nil || len(res.kinds) != 2 || res.kinds[0] != "teller: response refund" || !strings.Contains(res.kinds[1], "rejected") || runs.Load() != 1 {
		t.Fatalf("rejected: %v %q (ran %d times)", res.status, res.kinds, runs.Load())
	}
}
