package runner_test

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/model/offline"
	"github.com/agentrunner/agentrunner/store"
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
		yield(&model.Response{Content: userContent(answer), TurnComplete: true, Usage: &agentrunnerv1.UsageMetadata{PromptTokenCount: int32(len(req.Contents))}}, nil)
	}
}

func (m *recordingModel) last() *model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.requests[len(m.requests)-1]
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

// scribe serves one LLM agent on m, its sessions compacted as c says by
// the same model.
func scribe(t *testing.T, m model.Model, c runner.Compaction) *feature {
	root := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "scribe", Model: m}))
	c.Summarizer = m
	return newFeature(t, runner.Config{Root: root, Compaction: c})
}

// TestCompactionBoundsRequests: over 1,000 turns, the model's request
// stays bounded (the summary and the latest turns, never the covered
// ones), while the store still holds every event.
func TestCompactionBoundsRequests(t *testing.T) {
	m := &recordingModel{}
	f := scribe(t, m, runner.Compaction{Interval: 10, Overlap: 2})
	k := f.session(t, "s1")
	const turns = 1000
	maxContents := 0
	for i := 1; i <= turns; i++ {
		res := f.run(t, ask("s1", fmt.Sprintf("fact number %d", i)))
		if res.err != nil || len(res.errs) > 0 {
			t.Fatalf("turn %d: %v %v", i, res.err, res.errs)
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

	// Every event is still stored, listed page by page and in one read.
	var all []*agentrunnerv1.Event
	page := store.Page{Size: 1000}
	for {
		evs, next, err := f.store.ListEvents(t.Context(), k, store.EventFilter{}, page)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, evs...)
		if page.Token = next; next == "" {
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
	sess, evs, err := f.store.GetSession(t.Context(), k, store.GetOptions{})
	if err != nil || len(evs) != len(all) {
		t.Fatalf("GetSession: %d events, %v; want all %d", len(evs), err, len(all))
	}
	if cs := sess.GetCompactedSequence(); cs == 0 || cs >= sess.GetLastSequence() {
		t.Fatalf("compacted_sequence %d of %d", cs, sess.GetLastSequence())
	}
}

// TestUsageByAgentNamesSummarizer: a run's usage_by_agent counts the
// compaction summarizer's calls under "compaction", and only the user's
// own events (which make no model call) under "user": the agent's entry
// is its calls alone and the summarizer's is the compaction event's
// usage (issue 45, item 8d).
func TestUsageByAgentNamesSummarizer(t *testing.T) {
	f := scribe(t, offline.New(offline.Config{}), runner.Compaction{Interval: 1})
	f.session(t, "s")
	res := f.run(t, ask("s", "my name is Ada"))
	if res.err != nil || len(res.runs) == 0 || len(res.events) == 0 {
		t.Fatalf("run: %v %q", res.err, res.kinds)
	}
	compaction := res.events[len(res.events)-1]
	if compaction.GetActions().GetCompaction() == nil {
		t.Fatalf("the run did not end with a compaction: %q", res.kinds)
	}
	byAgent := f.getRun(t, res.runs[0].GetRunId()).GetUsageByAgent()
	if u, ok := byAgent["user"]; ok {
		t.Errorf("usage_by_agent[user] = %v; the user made no model call", u)
	}
	if got, want := byAgent["compaction"], compaction.GetUsageMetadata(); want == nil || !proto.Equal(got, want) {
		t.Errorf("usage_by_agent[compaction] = %v; want the compaction event's usage %v", got, want)
	}
	agentUsage := byAgent["scribe"]
	for _, ev := range res.events {
		if ev.GetAuthor() == "scribe" && ev.GetUsageMetadata() != nil && proto.Equal(agentUsage, ev.GetUsageMetadata()) {
			return
		}
	}
	t.Errorf("usage_by_agent[scribe] = %v; want the agent's one call's usage (usage_by_agent %v)", agentUsage, byAgent)
}
