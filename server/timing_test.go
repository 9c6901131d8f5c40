package server

import (
	"testing"

	"google.golang.org/protobuf/proto"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/tool"
)

// TestTimingOverGRPC: through the gRPC API, a model call's event carries
// its timing, and a tool's function response the tool's; GetSession
// returns the stored events with the same timings and timestamps, to the
// nanosecond.
func TestTimingOverGRPC(t *testing.T) {
	chat := func(t *testing.T) apps.App {
		quick := func(tool.Context, struct{}) (map[string]any, error) { return map[string]any{"ok": true}, nil }
		a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "chatter", Model: chattyModel{}, Tools: []tool.Tool{mustTool(t, "hang", quick)}}))
		return apps.App{Name: "chat", Root: a}
	}
	e := newEnv(t, withRunnerApps(t, chat))
	e.createSession(t, "chat", "u1", "s1")
	req := runReq("chat", "s1", "tool")
	req.RunConfig = &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	stream, err := e.runner.Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	var streamed []*agentrunnerv1.Event
	for {
		resp, err := stream.Recv()
		if err != nil {
			break
		}
		if ev := resp.GetEvent(); ev != nil && !ev.GetPartial() {
			streamed = append(streamed, ev)
		}
	}
	var calls, tools int
	for _, ev := range streamed {
		if tm := ev.GetTiming(); tm != nil {
			calls++
			if tm.GetStartTime() == nil || tm.GetDuration() == nil || tm.GetTimeToFirstChunk() == nil || tm.GetStartTime().AsTime().After(ev.GetTimestamp().AsTime()) {
				t.Errorf("model call timing %v of event at %v", tm, ev.GetTimestamp().AsTime())
			}
		}
		for _, p := range ev.GetContent().GetParts() {
			if tm := p.GetFunctionResponse().GetTiming(); tm != nil && tm.GetStartTime() != nil && tm.GetDuration() != nil {
				tools++
			}
		}
	}
	if calls != 2 || tools != 1 {
		t.Fatalf("streamed %d model calls and %d tools with timing, want 2 and 1: %v", calls, tools, streamed)
	}
	got, err := e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "chat", UserId: "u1", SessionId: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	stored := got.GetEvents()
	if len(stored) < len(streamed) {
		t.Fatalf("stored %d events, streamed %d", len(stored), len(streamed))
	}
	byID := map[string]*agentrunnerv1.Event{}
	for _, ev := range stored {
		byID[ev.GetId()] = ev
	}
	for _, ev := range streamed {
		s := byID[ev.GetId()]
		if !proto.Equal(s.GetTiming(), ev.GetTiming()) || !proto.Equal(s.GetTimestamp(), ev.GetTimestamp()) || !proto.Equal(s.GetContent(), ev.GetContent()) {
			t.Errorf("event %s stored as %v, streamed as %v", ev.GetId(), s, ev)
		}
	}
}
