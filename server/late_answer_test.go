package server

import (
	"context"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"google.golang.org/protobuf/proto"
)

// offlineRecorder is the offline model; it keeps a copy of the last
// request it got.
type offlineRecorder struct {
	*offline.Model
	mu   sync.Mutex
	last *model.Request
}

func (m *offlineRecorder) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	m.mu.Lock()
	cp := *req
	cp.Contents = make([]*agentrunnerv1.Content, len(req.Contents))
	for i, c := range req.Contents {
		cp.Contents[i] = proto.CloneOf(c)
	}
	m.last = &cp
	m.mu.Unlock()
	return m.Model.Generate(ctx, req, stream)
}

func (m *offlineRecorder) lastRequest() *model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// recordingOrdersApp is ordersApp on a model that records its requests.
func recordingOrdersApp(m *offlineRecorder) func(t *testing.T) apps.App {
	return func(t *testing.T) apps.App {
		cfg, err := apps.Parse("apps.yaml", []byte(`
apps:
  - name: orders
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
		built, err := apps.Build(t.Context(), cfg, func(context.Context, string) (model.Model, error) { return m, nil })
		if err != nil {
			t.Fatal(err)
		}
		return built[0]
	}
}

// contentLine renders a content as "role: parts", for comparisons.
func contentLine(c *agentrunnerv1.Content) string {
	var parts []string
	for _, p := range c.GetParts() {
		switch {
		case p.GetFunctionCall() != nil:
			parts = append(parts, "call "+p.GetFunctionCall().GetName()+"#"+p.GetFunctionCall().GetId())
		case p.GetFunctionResponse() != nil:
			parts = append(parts, "response "+p.GetFunctionResponse().GetName()+"#"+p.GetFunctionResponse().GetId())
		default:
			parts = append(parts, p.GetText())
		}
	}
	return c.GetRole() + ": " + strings.Join(parts, " | ")
}

// TestLateAnswerIsLast checks that the client's answer to a call that
// waited while other runs went on is what the model answers: the request
// ends with the call and its response (as ADK arranges async function
// responses), and the model's reply, about the answer, is stored.
func TestLateAnswerIsLast(t *testing.T) {
	m := &offlineRecorder{Model: offline.New(offline.Config{})}
	e := newEnv(t, withRunnerApps(t, recordingOrdersApp(m)))
	e.createSession(t, "orders", "u1", "s1")

	res := e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "42"}`))
	if res.status != nil || !slices.Equal(res.kinds, []string{"clerk: call get_order"}) {
		t.Fatalf("call: %v %q", res.status, res.kinds)
	}
	id := res.events[0].GetContent().GetParts()[0].GetFunctionCall().GetId()
	for _, msg := range []string{"hello", "how are you"} {
		res = e.run(t, t.Context(), runReq("orders", "s1", msg))
		if want := []string{"clerk: offline model: you said: " + msg}; res.status != nil || !slices.Equal(res.kinds, want) {
			t.Fatalf("run %q: %v %q, want %q", msg, res.status, res.kinds, want)
		}
	}

	res = e.run(t, t.Context(), answerCall(t, id, map[string]any{"status": "shipped"}))
	if res.status != nil {
		t.Fatalf("late answer: %v", res.status)
	}
	var lines []string
	for _, c := range m.lastRequest().Contents {
		lines = append(lines, contentLine(c))
	}
	if n := len(lines); n < 2 || lines[n-2] != "model: call get_order#"+id || lines[n-1] != "user: response get_order#"+id {
		t.Fatalf("the model was asked:\n%s\nwant it to end with the call and its late response", strings.Join(lines, "\n"))
	}
	// The earlier turns are still there, before the call.
	if joined := strings.Join(lines, "\n"); !strings.Contains(joined, "user: hello\nmodel: offline model: you said: hello\nuser: how are you") {
		t.Errorf("the model was asked:\n%s\nwant the turns in between kept", joined)
	}
	want := []string{`clerk: offline model: get_order returned {"status":"shipped"}`}
	if !slices.Equal(res.kinds, want) {
		t.Fatalf("late answer: %q, want %q", res.kinds, want)
	}
}
