package server

import (
	"context"
	"iter"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
	"github.com/agentrunner/agentrunner/store/boltstore"
)

// TestUsageTotals: a session's usage and each run's usage (overall and
// by agent) equal the sums of their stored events' usage_metadata, and
// still do after a restart.
func TestUsageTotals(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	start := func() *env {
		st, err := boltstore.Open(path, boltstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		logs := &syncBuffer{}
		cfg := Config{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))}
		withRunnerApps(t, llmApp)(&cfg)
		return startEnv(t, st, cfg, logs)
	}
	e := start()
	e.createSession(t, "llm", "u1", "s")
	var runIDs []string
	for _, msg := range []string{"hello there", "please transfer to helper", "and once more"} {
		res := e.run(t, t.Context(), runReq("llm", "s", msg))
		if res.status != nil || len(res.runs) == 0 {
			t.Fatalf("run %q: %v", msg, res.status)
		}
		runIDs = append(runIDs, res.runs[0].GetRunId())
	}
	check := func(e *env, when string) {
		t.Helper()
		got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "llm", UserId: "u1", SessionId: "s"})
		if err != nil {
			t.Fatal(err)
		}
		var sum *agentrunnerv1.UsageMetadata
		for _, ev := range got.GetEvents() {
			sum = store.AddUsage(sum, ev.GetUsageMetadata())
		}
		if sum.GetTotalTokenCount() == 0 || !proto.Equal(got.GetSession().GetUsage(), sum) {
			t.Fatalf("%s: session usage %v, its events add up to %v", when, got.GetSession().GetUsage(), sum)
		}
		authors := map[string]bool{}
		for _, id := range runIDs {
			rec, err := e.runner.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: id})
			if err != nil {
				t.Fatal(err)
			}
			run := rec.GetRun()
			var total *agentrunnerv1.UsageMetadata
			byAgent := map[string]*agentrunnerv1.UsageMetadata{}
			for _, ev := range got.GetEvents() {
				if ev.GetSequence() < run.GetFirstSequence() || ev.GetSequence() > run.GetLastSequence() || ev.GetUsageMetadata() == nil {
					continue
				}
				total = store.AddUsage(total, ev.GetUsageMetadata())
				byAgent[ev.GetAuthor()] = store.AddUsage(byAgent[ev.GetAuthor()], ev.GetUsageMetadata())
				authors[ev.GetAuthor()] = true
			}
			if !proto.Equal(run.GetUsage(), total) || len(run.GetUsageByAgent()) != len(byAgent) {
				t.Fatalf("%s: run %s usage %v by agent %v; its events add up to %v by agent %v", when, id, run.GetUsage(), run.GetUsageByAgent(), total, byAgent)
			}
			for a, u := range byAgent {
				if !proto.Equal(run.GetUsageByAgent()[a], u) {
					t.Fatalf("%s: run %s usage of %s = %v, its events add up to %v", when, id, a, run.GetUsageByAgent()[a], u)
				}
			}
		}
		if len(authors) < 2 {
			t.Fatalf("%s: usage of %d agents; the transfer should give two", when, len(authors))
		}
	}
	check(e, "live")
	e.close(t)
	check(start(), "after a restart")
}

// usageModel wraps a model and adds up the usage of every call it
// answers, the summarizer's included.
type usageModel struct {
	model.Model
	mu    sync.Mutex
	calls int
	sum   *agentrunnerv1.UsageMetadata
}

func (m *usageModel) Generate(ctx context.Context, req *model.Request, stream bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		for resp, err := range m.Model.Generate(ctx, req, stream) {
			if err == nil && !resp.Partial && resp.Usage != nil {
				m.mu.Lock()
				m.calls++
				m.sum = store.AddUsage(m.sum, resp.Usage)
				m.mu.Unlock()
			}
			if !yield(resp, err) {
				return
			}
		}
	}
}

// TestUsageCountsSummarizer: the compaction summarizer's model call
// counts in the run's usage, its usage by agent, and the session's
// usage, like the agents' calls: every model call the runner makes is in
// every total.
func TestUsageCountsSummarizer(t *testing.T) {
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
	if m.calls != 2 {
		t.Fatalf("%d model calls; want the agent's and the summarizer's", m.calls)
	}
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "notes", UserId: "u1", SessionId: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got.GetSession().GetUsage(), m.sum) {
		t.Errorf("session usage %v; the %d model calls add up to %v", got.GetSession().GetUsage(), m.calls, m.sum)
	}
	rec, err := e.runner.GetRun(t.Context(), &servicev1.GetRunRequest{RunId: res.runs[0].GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	run := rec.GetRun()
	if !proto.Equal(run.GetUsage(), m.sum) {
		t.Errorf("run usage %v; the %d model calls add up to %v", run.GetUsage(), m.calls, m.sum)
	}
	var byAgent *agentrunnerv1.UsageMetadata
	for _, u := range run.GetUsageByAgent() {
		byAgent = store.AddUsage(byAgent, u)
	}
	if !proto.Equal(byAgent, m.sum) {
		t.Errorf("run usage by agent %v adds up to %v; the %d model calls to %v", run.GetUsageByAgent(), byAgent, m.calls, m.sum)
	}
}
