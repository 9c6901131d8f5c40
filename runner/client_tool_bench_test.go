package runner

import (
	"path/filepath"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/runner/tool"
	"github.com/agentrunner/agentrunner/store/boltstore"
	"google.golang.org/protobuf/types/known/structpb"
)

// BenchmarkClientToolRoundTrip measures a tool the client executes: a run
// in which the model calls it and the run ends waiting, then the run that
// carries the client's answer and the model's reply (offline model, no
// fsync), against a plain question and answer on the same agent.
func BenchmarkClientToolRoundTrip(b *testing.B) {
	db, err := boltstore.Open(filepath.Join(b.TempDir(), "bench.db"), boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	getOrder, err := tool.NewClientFunction("get_order", "", map[string]any{
		"type": "object", "properties": map[string]any{"order_id": map[string]any{"type": "string"}}, "required": []any{"order_id"},
	}, nil)
	if err != nil {
		b.Fatal(err)
	}
	clerk, err := llmagent.New(llmagent.Config{Name: "clerk", Model: offline.New(offline.Config{}), Tools: []tool.Tool{getOrder}})
	if err != nil {
		b.Fatal(err)
	}
	r := must[*Runner](b)(New(Config{AppName: testApp, Root: clerk, Store: db}))
	k := newSession(b, db, "u", "s")
	run := func(msg *agentrunnerv1.Content) []*agentrunnerv1.Event {
		var events []*agentrunnerv1.Event
		for ev, err := range r.Run(b.Context(), Request{UserID: k.User, SessionID: k.Session, NewMessage: msg}) {
			if err != nil {
				b.Fatal(err)
			}
			events = append(events, ev)
		}
		return events
	}
	b.Run("plain answer", func(b *testing.B) {
		for b.Loop() {
			run(userText("hello"))
		}
	})
	b.Run("call and answer", func(b *testing.B) {
		resp, _ := structpb.NewStruct(map[string]any{"status": "shipped"})
		for b.Loop() {
			events := run(userText(`call get_order {"order_id": "42"}`))
			id := events[len(events)-1].GetLongRunningToolIds()[0]
			run(&agentrunnerv1.Content{Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionResponse{
				FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: "get_order", Response: resp}}}}})
		}
	})
}
