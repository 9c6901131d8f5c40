package runner

import (
	"slices"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/plugin/telemetry"
	"github.com/agentrunner/agentrunner/runner/tool"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTelemetrySpans runs a transfer and a tool call with the telemetry
// plugin and checks the span tree and its GenAI attributes in the SDK's
// in-memory exporter.
func TestTelemetrySpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	billingModel := &fakeModel{name: "billing-model", respond: script(
		content(agent.RoleModel, call("c1", "lookup", map[string]any{"q": "invoice"})), modelText("found it"))}
	lookup := mustTool(t, "lookup", func(tool.Context, map[string]any) (map[string]any, error) { return map[string]any{"ok": true}, nil })
	billing := llm(t, llmagent.Config{Name: "billing", Model: billingModel, Tools: []tool.Tool{lookup}})
	triageModel := &fakeModel{name: "triage-model", respond: func(*model.Request, int) ([]*model.Response, error) {
		return []*model.Response{{Content: content(agent.RoleModel, call("t1", "transfer_to_agent", map[string]any{"agent_name": "billing"})), TurnComplete: true,
			FinishReason: "STOP", ModelVersion: "triage-model-001", Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: 12, CandidatesTokenCount: 3}}}, nil
	}}
	triage := llm(t, llmagent.Config{Name: "triage", Model: triageModel, SubAgents: []agent.Agent{billing}})
	db := newTestStore(t)
	tel, err := telemetry.New(telemetry.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	r := must[*Runner](t)(New(Config{AppName: testApp, Root: triage, Store: db, Plugins: []plugin.Plugin{tel}}))
	k := newSession(t, db, "u1", "s1")
	mustRun(t, r, request(k, "my invoice is wrong"))

	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	var tree []string
	for _, s := range spans {
		parent := "-"
		if p, ok := byID[s.Parent.SpanID().String()]; ok {
			parent = p.Name
		}
		tree = append(tree, s.Name+" < "+parent)
	}
	slices.Sort(tree)
	want := []string{
		"chat billing-model < invoke_agent billing",
		"chat billing-model < invoke_agent billing",
		"chat triage-model < invoke_agent triage",
		"execute_tool lookup < invoke_agent billing",
		"execute_tool transfer_to_agent < invoke_agent triage",
		"invoke_agent app < -",
		"invoke_agent billing < invoke_agent triage",
		"invoke_agent triage < invoke_agent app",
	}
	if !slices.Equal(tree, want) {
		t.Fatalf("span tree\\n%s\\nwant\\n%s", strings.Join(tree, "\\n"), strings.Join(want, "\\n"))
	}
	attrs := func(name string) map[attribute.Key]attribute.Value {
		for _, s := range spans {
			if s.Name == name {
				m := map[attribute.Key]attribute.Value{}
				for _, kv := range s.Attributes {
					m[kv.Key] = kv.Value
				}
				return m
			}
		}
		t.Fatalf("no span %q", name)
		return nil
	}
	run := attrs("invoke_agent app")
	if run["gen_ai.conversation.id"].AsString() != "s1" || !strings.HasPrefix(run[telemetry.RunIDKey].AsString(), "e-") {
		t.Errorf("run span attributes %v", run)
	}
	chat := attrs("chat triage-model")
	if chat["gen_ai.operation.name"].AsString() != "chat" || chat["gen_ai.request.model"].AsString() != "triage-model" ||
		chat["gen_ai.response.model"].AsString() != "triage-model-001" || chat["gen_ai.usage.input_tokens"].AsInt64() != 12 ||
		chat["gen_ai.usage.output_tokens"].AsInt64() != 3 || !slices.Equal(chat["gen_ai.response.finish_reasons"].AsStringSlice(), []string{"stop"}) {
		t.Errorf("chat span attributes %v", chat)
	}
	if _, captured := chat["gen_ai.input.messages"]; captured {
		t.Error("message content recorded without CaptureContent")
	}
	tl := attrs("execute_tool lookup")
	if tl["gen_ai.tool.name"].AsString() != "lookup" || tl["gen_ai.tool.call.id"].AsString() != "c1" || tl["gen_ai.tool.type"].AsString() != "function" {
		t.Errorf("tool span attributes %v", tl)
	}
}
