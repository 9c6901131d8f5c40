package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// compactingOrdersApp is ordersApp on the offline model, compacting every
// two runs with none kept verbatim.
func compactingOrdersApp(t *testing.T) apps.App {
	cfg, err := apps.Parse("apps.yaml", []byte(`
apps:
  - name: orders
    compaction: { interval: 2, overlap: 0 }
    function_tools:
      - name: get_order
        description: Looks an order up in the caller's system.
        parameters:
          type: object
          properties: { order_id: { type: string } }
          required: [order_id]
    root_agent: { name: clerk, llm: { model: offline, tools: [get_order] } }
`))
	if err != nil {
		t.Fatal(err)
	}
	m := offline.New(offline.Config{})
	built, err := apps.Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return m, nil })
	if err != nil {
		t.Fatal(err)
	}
	return built[0]
}

// TestLateAnswerAfterCompaction: a call a new message superseded can be
// answered until a compaction covers it (TestLateAnswerIsLast); once one
// has, the answer is refused INVALID_ARGUMENT saying exactly that: the
// call was superseded and the compaction (named by its last sequence)
// covers it, not that nobody knows the call.
func TestLateAnswerAfterCompaction(t *testing.T) {
	e := newEnv(t, withRunnerApps(t, compactingOrdersApp))
	e.createSession(t, "orders", "u1", "s1")
	res := e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "42"}`))
	if res.status != nil || len(res.events) == 0 {
		t.Fatalf("call: %v %q", res.status, res.kinds)
	}
	call := res.events[0]
	id := call.GetContent().GetParts()[0].GetFunctionCall().GetId()
	for _, msg := range []string{"hello", "how are you", "still there"} {
		if res = e.run(t, t.Context(), runReq("orders", "s1", msg)); res.status != nil {
			t.Fatalf("run %q: %v", msg, res.status)
		}
	}
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "orders", UserId: "u1", SessionId: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.GetSession().GetCompactedSequence(); c < call.GetSequence() {
		t.Fatalf("compacted up to #%d; want the call, #%d, covered", c, call.GetSequence())
	}
	res = e.run(t, t.Context(), answerCall(t, id, map[string]any{"status": "shipped"}))
	msg := status.Convert(res.status).Message()
	if status.Code(res.status) != codes.InvalidArgument || !strings.Contains(msg, id) ||
		!strings.Contains(msg, "superseded") || !strings.Contains(msg, "compaction") {
		t.Fatalf("answer after the compaction: %v; want INVALID_ARGUMENT naming the call as superseded and covered by the compaction", res.status)
	}
}
