package server

import (
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/tool"
	"google.golang.org/grpc/codes"
)

// TestGetRunTrace: GetRunTrace answers with a run's record and its steps
// from its stored events (the run, the agent's turn, its model calls and
// its tool, timed as stored), and refuses a missing or unknown run id.
func TestGetRunTrace(t *testing.T) {
	chat := func(t *testing.T) apps.App {
		quick := func(tool.Context, struct{}) (map[string]any, error) { return map[string]any{"ok": true}, nil }
		a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "chatter", Model: chattyModel{}, Tools: []tool.Tool{mustTool(t, "hang", quick)}}))
		return apps.App{Name: "chat", Root: a}
	}
	e := newEnv(t, withRunnerApps(t, chat))
	e.createSession(t, "chat", "u1", "s1")
	res := e.run(t, t.Context(), runReq("chat", "s1", "tool"))
	run := res.runs[len(res.runs)-1]
	got, err := e.runner.GetRunTrace(t.Context(), &servicev1.GetRunTraceRequest{RunId: run.GetRunId()})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetRun().GetRunId() != run.GetRunId() || got.GetTruncated() {
		t.Errorf("trace of run %v (truncated %v), want %s whole", got.GetRun(), got.GetTruncated(), run.GetRunId())
	}
	var names []string
	var tool *agentrunnerv1.TraceSpan
	for _, s := range got.GetSpans() {
		names = append(names, s.GetName())
		if s.GetKind() == agentrunnerv1.TraceSpanKind_TRACE_SPAN_KIND_TOOL_CALL {
			tool = s
		}
	}
	if len(names) != 5 || names[0] != "invoke_agent chat" || names[1] != "invoke_agent chatter" || tool.GetName() != "execute_tool hang" {
		t.Fatalf("spans %q, want the run, chatter's turn, two model calls and the tool", names)
	}
	sess, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "chat", UserId: "u1", SessionId: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sess.GetEvents() {
		for _, p := range ev.GetContent().GetParts() {
			if tm := p.GetFunctionResponse().GetTiming(); tm != nil && (!tool.GetStartTime().AsTime().Equal(tm.GetStartTime().AsTime()) || tool.GetDuration().AsDuration() != tm.GetDuration().AsDuration()) {
				t.Errorf("tool span %v, want the stored timing %v", tool, tm)
			}
		}
	}
	_, err = e.runner.GetRunTrace(t.Context(), &servicev1.GetRunTraceRequest{})
	wantCode(t, err, codes.InvalidArgument, "run_id")
	_, err = e.runner.GetRunTrace(t.Context(), &servicev1.GetRunTraceRequest{RunId: "e-nope"})
	wantCode(t, err, codes.NotFound, "")
}
