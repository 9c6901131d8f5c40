package runner

import (
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/store"
)

// tagger marks every event of an agent with custom metadata from its
// on_event hook.
type tagger struct{}

func (tagger) Name() string { return "tagger" }

func (tagger) OnEvent(_ agent.InvocationContext, ev *agentrunnerv1.Event) (*agentrunnerv1.Event, error) {
	out := proto.CloneOf(ev)
	m := out.GetCustomMetadata().AsMap()
	m["tagged_by"] = "tagger"
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, err
	}
	out.CustomMetadata = s
	return out, nil
}

// TestCustomMetadataIsKept: custom metadata an after_model callback puts
// on the model's response, and what a plugin's on_event adds, reach the
// caller and the store, and the model never sees them.
func TestCustomMetadataIsKept(t *testing.T) {
	m := &fakeModel{name: "fake", reply: "answer"}
	after := func(_ agent.CallbackContext, r *model.Response) (*model.Response, error) {
		s, err := structpb.NewStruct(map[string]any{"reviewed": true})
		r.CustomMetadata = s
		return r, err
	}
	root := llm(t, llmagent.Config{Name: "root", Model: m, AfterModelCallbacks: []llmagent.AfterModelCallback{after}})
	db := newTestStore(t)
	r := must[*Runner](t)(New(Config{AppName: testApp, Root: root, Store: db, Plugins: []plugin.Plugin{tagger{}}}))
	k := newSession(t, db, "u1", "s1")
	res := mustRun(t, r, request(k, "hi"))
	mustRun(t, r, request(k, "again"))
	want := map[string]any{"reviewed": true, "tagged_by": "tagger"}
	if len(res.events) != 1 || !reflect.DeepEqual(res.events[0].GetCustomMetadata().AsMap(), want) {
		t.Fatalf("streamed events %v, want one with custom metadata %v", res.events, want)
	}
	_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 4 || !proto.Equal(events[1], res.events[0]) {
		t.Fatalf("stored %v, want the streamed answer as event 2", events)
	}
	calls := m.calls()
	if len(calls) != 2 || len(calls[1].Contents) != 3 {
		t.Fatalf("model calls %v, want a second call with the history", calls)
	}
	for _, c := range calls[1].Contents {
		if text := prototext.Format(c); strings.Contains(text, "tagged_by") || strings.Contains(text, "reviewed") {
			t.Errorf("the model's request carries the custom metadata: %s", text)
		}
	}
}
