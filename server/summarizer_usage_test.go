package server

import (
	"context"
	"testing"

	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// TestUsageByAgentNamesSummarizer: a run's usage_by_agent counts the
// compaction summarizer's calls under "compaction", and only the user's
// own events (which make no model call) under "user": the agent's entry
// is its calls alone and the summarizer's is the compaction event's
// usage (issue 45, item 8d).
func TestUsageByAgentNamesSummarizer(t *testing.T) {
	m := &usageModel{Model: offline.New(offline.Config{})}
	app := func(t *testing.T) apps.App {
		cfg, err := apps.Parse("apps.yaml", []byte(`
apps:
  - name: notes
    compaction: { interval: 1, overlap: 0 }
    root_agent: { name: scribe, llm: { model: offline } }
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
	e := newEnv(t, withRunnerApps(t, app))
	e.createSession(t, "notes", "u1", "s")
	res := e.run(t, t.Context(), runReq("notes", "s", "my name is Ada"))
	if res.status != nil || len(res.runs) == 0 {
		t.Fatalf("run: %v %q", res.status, res.kinds)
	}
	lastCompaction(t, res)
	compaction := res.events[len(res.events)-1]
	rec, err := e.runner.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: res.runs[0].GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	byAgent := rec.GetRun().GetUsageByAgent()
	if u, ok := byAgent["user"]; ok {
		t.Errorf("usage_by_agent[user] = %v; the user made no model call", u)
	}
	if got, want := byAgent["compaction"], compaction.GetUsageMetadata(); want == nil || !proto.Equal(got, want) {
		t.Errorf("usage_by_agent[compaction] = %v; want the compaction event's usage %v", got, want)
	}
	var agentUsage = byAgent["scribe"]
	for _, ev := range res.events {
		if ev.GetAuthor() == "scribe" && ev.GetUsageMetadata() != nil && proto.Equal(agentUsage, ev.GetUsageMetadata()) {
			return
		}
	}
	t.Errorf("usage_by_agent[scribe] = %v; want the agent's one call's usage (usage_by_agent %v)", agentUsage, byAgent)
}
