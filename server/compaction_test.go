package server

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
)

// recordingModel answers every call and records the requests: a
// summarization (its instruction is the runner's) with "SUMMARY n", any
// other call with "ok".
type recordingModel struct {
	mu        sync.Mutex
	requests  []*model.Request
	summaries int
}

func (m *recordingModel) Name() string { return "recorder" }

func (m *recordingModel) Generate(_ context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		m.mu.Lock()
		answer := "ok"
		if req.SystemInstruction == runner.DefaultCompactionInstruction {
			m.summaries++
			answer = fmt.Sprintf("SUMMARY %d", m.summaries)
		} else {
			m.requests = append(m.requests, req)
		}
		m.mu.Unlock()
		yield(&model.Response{Content: text(answer), TurnComplete: true, Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: int32(len(req.Contents))}}, nil)
	}
}

func (m *recordingModel) last() *model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
}

// compactingApp is an LLM app whose sessions are compacted every 10 runs,
// the last 2 kept verbatim, by the same model.
func compactingApp(m model.Model) func(t *testing.T) apps.App {
	return func(t *testing.T) apps.App {
		cfg, err := apps.Parse("apps.yaml", []byte(`
apps:
  - name: notes
    compaction: { interval: 10, overlap: 2 }
    root_agent: { name: scribe, llm: { model: recorder } }
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

func requestText(req *model.Request) string {
	var b strings.Builder
	for _, c := range req.Contents {
		for _, p := range c.GetParts() {
			b.WriteString(p.GetText() + "\n")
		}
	}
	return b.String()
}

// TestCompactionBoundsRequests: over 1,000 turns, the model's request
// stays bounded (the summary and the latest turns, never the covered
// ones), while GetSession and ListEvents still return every event.
func TestCompactionBoundsRequests(t *testing.T) {
	m := &recordingModel{}
	e := newEnv(t, withRunnerApps(t, compactingApp(m)))
	e.createSession(t, "notes", "u1", "s1")
	const turns = 1000
	maxContents := 0
	for i := 1; i <= turns; i++ {
		res := e.run(t, t.Context(), runReq("notes", "s1", fmt.Sprintf("fact number %d", i)))
		if res.status != nil || len(res.errors) > 0 {
			t.Fatalf("turn %d: %v %v", i, res.status, res.errors)
		}
		req := m.last()
		maxContents = max(maxContents, len(req.Contents))
		if i > 10 {
			// Fact 1 went into the first summary and is never sent again.
			if strings.Contains(requestText(req), "fact number 1\n") {
				t.Fatalf("turn %d: the model still sees the first turn:\n%s", i, requestText(req))
			}
			if !strings.HasPrefix(req.Contents[0].GetParts()[0].GetText(), "Summary of the conversation so far:\nSUMMARY ") {
				t.Fatalf("turn %d: the request does not start with the summary: %q", i, req.Contents[0].GetParts()[0].GetText())
			}
		}
	}
	// A compaction leaves 2 runs verbatim, and 10 runs later the next one
	// comes: never more than the summary and 12 runs of 2 contents each
	// (the 12th run's answer not yet given).
	if maxContents > 1+2*11+1 {
		t.Errorf("a request carried %d contents; compaction should bound it at 24", maxContents)
	}
	if m.summaries < turns/10-2 {
		t.Errorf("%d compactions in %d turns, want about one per 8 runs", m.summaries, turns)
	}

	// Every event is still stored and returned.
	var all []*agentrunnerv1.Event
	token := ""
	for {
		page, err := e.sessions.ListEvents(t.Context(), &servicev1.ListEventsRequest{AppName: "notes", UserId: "u1", SessionId: "s1", PageSize: 1000, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.GetEvents()...)
		if token = page.GetNextPageToken(); token == "" {
			break
		}
	}
	compactions := 0
	for _, ev := range all {
		if ev.GetActions().GetCompaction() != nil {
			compactions++
		}
	}
	if len(all) != 2*turns+compactions || compactions != m.summaries {
		t.Fatalf("ListEvents returned %d events with %d compactions; want %d turns of 2 events plus %d compactions", len(all), compactions, turns, m.summaries)
	}
	if first := all[0].GetContent().GetParts()[0].GetText(); first != "fact number 1" {
		t.Fatalf("first stored event says %q", first)
	}
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "notes", UserId: "u1", SessionId: "s1"})
	if err != nil || len(got.GetEvents()) != len(all) || got.GetOmittedEvents() != 0 {
		t.Fatalf("GetSession: %d events, %d omitted, %v; want all %d", len(got.GetEvents()), got.GetOmittedEvents(), err, len(all))
	}
	if cs := got.GetSession().GetCompactedSequence(); cs == 0 || cs >= got.GetSession().GetLastSequence() {
		t.Fatalf("compacted_sequence %d of %d", cs, got.GetSession().GetLastSequence())
	}
}

// pendingApp compacts every 2 runs, on the offline model: its clerk calls
// get_order, which the caller executes, and its teller's refund waits for
// the caller's confirmation.
func pendingApp(runs *atomic.Int32) func(t *testing.T) apps.App {
	return func(t *testing.T) apps.App {
		a := tellerApp(runs)(t)
		a.Compaction = runner.Compaction{Summarizer: offline.New(offline.Config{}), Interval: 2}
		return a
	}
}

// TestCompactionKeepsPendingCalls: a compaction that comes while a call
// waits for the caller (a client-executed tool, a confirmation) ends
// before the call, and the caller's answer is taken afterwards.
func TestCompactionKeepsPendingCalls(t *testing.T) {
	t.Run("client tool", func(t *testing.T) {
		order := ordersApp(t)
		order.Compaction = runner.Compaction{Summarizer: offline.New(offline.Config{}), Interval: 2}
		e := newEnv(t, withRunnerApps(t, func(*testing.T) apps.App { return order }))
		e.createSession(t, "orders", "u1", "s1")
		if res := e.run(t, t.Context(), runReq("orders", "s1", "hello")); res.status != nil {
			t.Fatal(res.status)
		}
		res := e.run(t, t.Context(), runReq("orders", "s1", `call get_order {"order_id": "42"}`))
		call := res.events[0]
		id := call.GetContent().GetParts()[0].GetFunctionCall().GetId()
		compaction := lastCompaction(t, res)
		if compaction.GetEndSequence() >= call.GetSequence() {
			t.Fatalf("compaction covers %d..%d, past the waiting call at %d", compaction.GetStartSequence(), compaction.GetEndSequence(), call.GetSequence())
		}
		res = e.run(t, t.Context(), answerCall(t, id, map[string]any{"status": "shipped"}))
		if res.status != nil || !slices.ContainsFunc(res.kinds, func(k string) bool { return strings.Contains(k, "get_order returned") }) {
			t.Fatalf("the answer after the compaction: %v %q", res.status, res.kinds)
		}
	})
	t.Run("confirmation", func(t *testing.T) {
		var refunds atomic.Int32
		e := newEnv(t, withRunnerApps(t, pendingApp(&refunds)))
		e.createSession(t, "bank", "u1", "s1")
		if res := e.run(t, t.Context(), runReq("bank", "s1", "hello")); res.status != nil {
			t.Fatal(res.status)
		}
		res := e.run(t, t.Context(), runReq("bank", "s1", `call refund {"amount": 5}`))
		if len(res.events) < 2 {
			t.Fatalf("refund: %q", res.kinds)
		}
		ask := res.events[1]
		compaction := lastCompaction(t, res)
		if compaction.GetEndSequence() >= res.events[0].GetSequence() {
			t.Fatalf("compaction covers %d..%d, past the call waiting for confirmation at %d", compaction.GetStartSequence(), compaction.GetEndSequence(), res.events[0].GetSequence())
		}
		res = e.run(t, t.Context(), confirm(t, ask.GetLongRunningToolIds()[0], true))
		if res.status != nil || refunds.Load() != 1 {
			t.Fatalf("confirmed after the compaction: %v %q, refunded %d times", res.status, res.kinds, refunds.Load())
		}
	})
}

// lastCompaction returns the compaction the run ended with.
func lastCompaction(t *testing.T, res runResult) *agentrunnerv1.EventCompaction {
	t.Helper()
	if len(res.events) == 0 {
		t.Fatalf("no events: %v", res.status)
	}
	c := res.events[len(res.events)-1].GetActions().GetCompaction()
	if c == nil {
		t.Fatalf("the run did not end with a compaction: %q", res.kinds)
	}
	return c
}
