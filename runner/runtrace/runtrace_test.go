package runtrace

import (
	"slices"
	"strings"
	"testing"
	"time"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(ms int) *timestamppb.Timestamp {
	return timestamppb.New(t0.Add(time.Duration(ms) * time.Millisecond))
}
func dur(ms int) *durationpb.Duration { return durationpb.New(time.Duration(ms) * time.Millisecond) }

func timing(start, took int) *agentrunnerv1.Timing {
	return &agentrunnerv1.Timing{StartTime: at(start), Duration: dur(took), TimeToFirstChunk: dur(took / 2)}
}

func call(id, name string) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionCall{FunctionCall: &agentrunnerv1.FunctionCall{Id: id, Name: name}}}
}

func answer(id, name string, tm *agentrunnerv1.Timing) *agentrunnerv1.Part {
	return &agentrunnerv1.Part{Data: &agentrunnerv1.Part_FunctionResponse{FunctionResponse: &agentrunnerv1.FunctionResponse{Id: id, Name: name, Timing: tm}}}
}

func ev(seq uint64, run, author string, ms int, parts ...*agentrunnerv1.Part) *agentrunnerv1.Event {
	return &agentrunnerv1.Event{Sequence: seq, InvocationId: run, Author: author, Timestamp: at(ms), Content: &agentrunnerv1.Content{Parts: parts}}
}

// tree is the app: pipeline (sequential) of triage (LLM, may hand over to
// its sub-agent billing) and summary (LLM).
var tree = &agentrunnerv1.AgentInfo{Name: "pipeline", Kind: agentrunnerv1.AgentKind_AGENT_KIND_SEQUENTIAL, SubAgents: []*agentrunnerv1.AgentInfo{
	{Name: "triage", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LLM, Model: "m1", SubAgents: []*agentrunnerv1.AgentInfo{
		{Name: "billing", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LLM, Model: "m2"}}},
	{Name: "summary", Kind: agentrunnerv1.AgentKind_AGENT_KIND_LLM, Model: "m3"},
}}

func paths(spans []*agentrunnerv1.TraceSpan) []string {
	byID := map[string]*agentrunnerv1.TraceSpan{}
	for _, s := range spans {
		byID[s.GetSpanId()] = s
	}
	var out []string
	for _, s := range spans {
		var p []string
		for x := s; x != nil; x = byID[x.GetParentSpanId()] {
			p = append([]string{x.GetName()}, p...)
		}
		out = append(out, strings.Join(p, " / "))
	}
	return out
}

func find(t *testing.T, spans []*agentrunnerv1.TraceSpan, name string) *agentrunnerv1.TraceSpan {
	t.Helper()
	for _, s := range spans {
		if s.GetName() == name {
			return s
		}
	}
	t.Fatalf("no span %q in %v", name, paths(spans))
	return nil
}

// TestBuild: a sequential workflow's steps, a transfer, a retried model
// call, a timed tool, another run's and partial events skipped; the run's
// span covers them, and a call still waiting is open and waiting.
func TestBuild(t *testing.T) {
	handover := ev(4, "r1", "triage", 31, answer("t1", "transfer_to_agent", timing(30, 1)))
	handover.Actions = &agentrunnerv1.EventActions{TransferToAgent: "billing"}
	retried := ev(5, "r1", "billing", 60, call("c1", "lookup"))
	retried.Timing = timing(32, 28)
	retried.Timing.Attempts = []*agentrunnerv1.ModelAttempt{{Model: "m2-primary"}, {Model: "m2-fallback"}}
	retried.UsageMetadata = &agentrunnerv1.UsageMetadata{TotalTokenCount: 7}
	first := ev(2, "r1", "triage", 30, call("t1", "transfer_to_agent"))
	first.Timing = timing(10, 20)
	first.UsageMetadata = &agentrunnerv1.UsageMetadata{TotalTokenCount: 5}
	partial := ev(0, "r1", "summary", 99)
	partial.Partial = true
	events := []*agentrunnerv1.Event{
		ev(1, "r1", "user", 1),
		ev(3, "other", "triage", 30), // another run's, between
		first, handover, retried,
		ev(6, "r1", "billing", 75, answer("c1", "lookup", timing(61, 12))),
		ev(7, "r1", "summary", 90, call("c2", "ask_user")),
		partial,
	}
	slices.Reverse(events) // any order
	run := &agentrunnerv1.Run{RunId: "r1", AppName: "app", StartTime: at(0), PendingCallIds: []string{"c2"}, Status: agentrunnerv1.RunStatus_RUN_STATUS_INPUT_REQUIRED, EndTime: at(95)}
	spans := Build(run, events, tree)
	want := []string{
		"invoke_agent app",
		"invoke_agent app / invoke_agent pipeline",
		"invoke_agent app / invoke_agent pipeline / invoke_agent triage",
		"invoke_agent app / invoke_agent pipeline / invoke_agent triage / chat m1",
		"invoke_agent app / invoke_agent pipeline / invoke_agent triage / execute_tool transfer_to_agent",
		"invoke_agent app / invoke_agent pipeline / invoke_agent triage / invoke_agent billing",
		"invoke_agent app / invoke_agent pipeline / invoke_agent triage / invoke_agent billing / chat m2-primary",
		"invoke_agent app / invoke_agent pipeline / invoke_agent triage / invoke_agent billing / execute_tool lookup",
		"invoke_agent app / invoke_agent pipeline / invoke_agent summary",
		"invoke_agent app / invoke_agent pipeline / invoke_agent summary / execute_tool ask_user",
	}
	if got := paths(spans); !slices.Equal(got, want) {
		t.Fatalf("spans\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r := spans[0]; r.GetDuration().AsDuration() != 95*time.Millisecond || r.GetOpen() || !slices.Equal(r.GetEventSequences(), []uint64{1}) {
		t.Errorf("run span %v, want 95ms, ended, with the user's event", r)
	}
	tool := find(t, spans, "execute_tool lookup")
	if !tool.GetStartTime().AsTime().Equal(t0.Add(61*time.Millisecond)) || tool.GetDuration().AsDuration() != 12*time.Millisecond || !slices.Equal(tool.GetEventSequences(), []uint64{5, 6}) || tool.GetOpen() {
		t.Errorf("tool span %v, want its timing (61ms + 12ms) and its call's and response's events", tool)
	}
	chat := find(t, spans, "chat m1")
	if chat.GetDuration().AsDuration() != 20*time.Millisecond || chat.GetTimeToFirstChunk().AsDuration() != 10*time.Millisecond || chat.GetUsage().GetTotalTokenCount() != 5 {
		t.Errorf("chat span %v, want 20ms, first chunk 10ms, 5 tokens", chat)
	}
	if h := find(t, spans, "execute_tool transfer_to_agent"); h.GetTransferToAgent() != "billing" {
		t.Errorf("transfer span %v, want it to say billing", h)
	}
	if b := find(t, spans, "invoke_agent billing"); b.GetUsage().GetTotalTokenCount() != 7 || b.GetAgentKind() != agentrunnerv1.AgentKind_AGENT_KIND_LLM {
		t.Errorf("billing's turn %v, want its model call's 7 tokens", b)
	}
	if w := find(t, spans, "execute_tool ask_user"); !w.GetWaiting() || !w.GetOpen() {
		t.Errorf("the pending call's span %v, want it waiting", w)
	}
}

// TestBuildActive: while a run goes on, it and the turns it is in are
// open; a parallel agent's branches hang under it, with or without the
// tree.
func TestBuildActive(t *testing.T) {
	par := &agentrunnerv1.AgentInfo{Name: "fan", Kind: agentrunnerv1.AgentKind_AGENT_KIND_PARALLEL, SubAgents: []*agentrunnerv1.AgentInfo{{Name: "a"}, {Name: "b"}}}
	a, b := ev(2, "r", "a", 10), ev(3, "r", "b", 12)
	a.Branch, b.Branch = "fan.a", "fan.b"
	run := &agentrunnerv1.Run{RunId: "r", AppName: "app", StartTime: at(0), Status: agentrunnerv1.RunStatus_RUN_STATUS_RUNNING}
	spans := Build(run, []*agentrunnerv1.Event{ev(1, "r", "user", 0), a, b}, par)
	want := []string{"invoke_agent app", "invoke_agent app / invoke_agent fan", "invoke_agent app / invoke_agent fan / invoke_agent a", "invoke_agent app / invoke_agent fan / invoke_agent b"}
	if got := paths(spans); !slices.Equal(got, want) {
		t.Fatalf("spans %q, want %q", got, want)
	}
	for _, s := range spans {
		if !s.GetOpen() {
			t.Errorf("span %s closed while the run goes on", s.GetName())
		}
	}
	// Without the tree, the branches still name the parallel agent.
	if got := paths(Build(run, []*agentrunnerv1.Event{a, b}, nil)); !slices.Equal(got, want) {
		t.Errorf("without a tree: %q, want %q", got, want)
	}
}
