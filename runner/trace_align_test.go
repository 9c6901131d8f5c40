package runner

import (
	"slices"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/plugin/telemetry"
	"github.com/agentrunner/agentrunner/runner/runtrace"
	"github.com/agentrunner/agentrunner/store"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// alignedTrees runs text on root with the telemetry plugin and returns
// the span trees, as paths of names, built from the run's stored events
// (runtrace) and exported by the plugin.
func alignedTrees(t *testing.T, root agent.Agent, text string) (built, exported []string) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	db := newTestStore(t)
	tel, err := telemetry.New(telemetry.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	r := must[*Runner](t)(New(Config{AppName: testApp, Root: root, Store: db, Plugins: []plugin.Plugin{tel}}))
	k := newSession(t, db, "u1", "s1")
	res := mustRun(t, r, request(k, text))
	rec, err := r.GetRun(t.Context(), res.events[len(res.events)-1].GetInvocationId())
	if err != nil {
		t.Fatal(err)
	}
	_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spans := runtrace.Build(rec, events, r.Info().GetRootAgent())
	byID := map[string]*agentrunnerv1.TraceSpan{}
	for _, s := range spans {
		byID[s.GetSpanId()] = s
	}
	for _, s := range spans {
		var p []string
		for x := s; x != nil; x = byID[x.GetParentSpanId()] {
			p = append([]string{x.GetName()}, p...)
		}
		built = append(built, strings.Join(p, " / "))
	}
	stubs := exp.GetSpans()
	byStub := map[string]tracetest.SpanStub{}
	for _, s := range stubs {
		byStub[s.SpanContext.SpanID().String()] = s
	}
	for _, s := range stubs {
		p := []string{s.Name}
		for x, ok := byStub[s.Parent.SpanID().String()]; ok; x, ok = byStub[x.Parent.SpanID().String()] {
			p = append([]string{x.Name}, p...)
		}
		exported = append(exported, strings.Join(p, " / "))
	}
	slices.Sort(built)
	slices.Sort(exported)
	return built, exported
}

// TestTraceOfTransferBack: a transfer to a sub-agent that transfers back
// to its parent runs the parent again inside the sub-agent's turn; the
// telemetry plugin's spans and the trace built from the stored events
// (runtrace) both nest it there, and the outer turn's span still ends.
func TestTraceOfTransferBack(t *testing.T) {
	billing := llm(t, llmagent.Config{Name: "billing", Model: &fakeModel{name: "m2", respond: script(
		content(agent.RoleModel, call("b1", "transfer_to_agent", map[string]any{"agent_name": "triage"})))}})
	triage := llm(t, llmagent.Config{Name: "triage", Model: &fakeModel{name: "m1", respond: script(
		content(agent.RoleModel, call("t1", "transfer_to_agent", map[string]any{"agent_name": "billing"})), modelText("back to you"))}, SubAgents: []agent.Agent{billing}})
	built, exported := alignedTrees(t, triage, "my invoice")
	if !slices.Equal(built, exported) || !slices.Contains(built, "invoke_agent app / invoke_agent triage / invoke_agent billing / invoke_agent triage / chat m1") {
		t.Errorf("built from events:\n%s\nexported:\n%s", strings.Join(built, "\n"), strings.Join(exported, "\n"))
	}
}

// TestTraceOfLoop: a loop's passes over one LLM agent are a turn each,
// in the plugin's spans and in the trace built from the events alike.
func TestTraceOfLoop(t *testing.T) {
	writer := llm(t, llmagent.Config{Name: "writer", Model: &fakeModel{name: "m", respond: script(modelText("draft"), modelText("better"), modelText("best"))}})
	loop := must[agent.Agent](t)(workflow.NewLoop(workflow.LoopConfig{Name: "refine", SubAgents: []agent.Agent{writer}, MaxIterations: 3}))
	built, exported := alignedTrees(t, loop, "write")
	n := 0
	for _, p := range built {
		if p == "invoke_agent app / invoke_agent refine / invoke_agent writer" {
			n++
		}
	}
	if !slices.Equal(built, exported) || n != 3 {
		t.Errorf("built from events (%d writer turns, want 3):\n%s\nexported:\n%s", n, strings.Join(built, "\n"), strings.Join(exported, "\n"))
	}
}
