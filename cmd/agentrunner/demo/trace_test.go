package demo

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/plugin"
	"github.com/agentrunner/agentrunner/runner/plugin/telemetry"
	"github.com/agentrunner/agentrunner/runner/runtrace"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestDemoTrace: a run of the demo app (custom agents, a sequential,
// a parallel and a loop agent) has the same steps, nested alike, in the
// trace built from its stored events (GetRunTrace's) and in the
// OpenTelemetry spans of the telemetry plugin: a turn per pass of the
// loop's custom agent among them.
func TestDemoTrace(t *testing.T) {
	db, err := boltstore.Open(filepath.Join(t.TempDir(), "demo.db"), boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(telemetry.Config{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := apps.NewRegistry(apps.Config{Store: db, Plugins: []plugin.Plugin{tel}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := reg.Register(App())
	if err != nil {
		t.Fatal(err)
	}
	k := store.SessionKey{App: Name, User: "ada", Session: "s1"}
	if _, err := db.CreateSession(t.Context(), k, nil); err != nil {
		t.Fatal(err)
	}
	runID := ""
	for ev, err := range r.Run(t.Context(), runner.Request{UserID: k.User, SessionID: k.Session, NewMessage: &agentrunnerv1.Content{
		Role: "user", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: "hello big world"}}}}}) {
		if err != nil {
			t.Fatal(err)
		}
		runID = ev.GetInvocationId()
	}
	rec, err := r.GetRun(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	_, events, err := db.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var built []string
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
	var exported []string
	for _, s := range stubs {
		p := []string{s.Name}
		for x, ok := byStub[s.Parent.SpanID().String()]; ok; x, ok = byStub[x.Parent.SpanID().String()] {
			p = append([]string{x.Name}, p...)
		}
		exported = append(exported, strings.Join(p, " / "))
	}
	slices.Sort(built)
	slices.Sort(exported)
	ticks := 0
	for _, p := range built {
		if strings.HasSuffix(p, "invoke_agent countdown / invoke_agent tick") {
			ticks++
		}
	}
	if !slices.Equal(built, exported) || ticks != 4 {
		t.Errorf("built from events (%d tick turns, want 4):\n%s\nexported:\n%s", ticks, strings.Join(built, "\n"), strings.Join(exported, "\n"))
	}
}
