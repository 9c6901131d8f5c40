package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
)

// TestDrainKeepsStreamedText: a drain that cuts a run in the middle of a
// streamed answer stores what the client saw stream, marked interrupted,
// in the event that says the run was interrupted (as a dropped model
// connection does); after a restart ResumeRun goes on from it.
func TestDrainKeepsStreamedText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentrunner.db")
	chat := func(t *testing.T) apps.App {
		a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "chatter", Model: chattyModel{}}))
		return apps.App{Name: "chat", Root: a}
	}
	e, reg := newEnvAt(t, path, chat)
	e.createSession(t, "chat", "u1", "s1")
	req := runReq("chat", "s1", "long")
	req.RunConfig = &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	stream, err := e.runner.Run(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	var runID string
	for seen.Len() < 20 {
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.GetRun(); r != nil {
			runID = r.GetRunId()
		}
		if ev := resp.GetEvent(); ev.GetPartial() {
			seen.WriteString(ev.GetContent().GetParts()[0].GetText())
		}
	}
	expired, cancel := context.WithCancel(t.Context())
	cancel()
	_ = reg.shutdown(expired) // the drain's time is up: the run is cut
	res := toResult(collectRun(t, stream))
	var marker *agentrunnerv1.Event
	for _, ev := range res.events {
		if ev.GetErrorCode() == "INTERRUPTED" {
			marker = ev
		}
	}
	if marker == nil {
		t.Fatalf("no INTERRUPTED event streamed: %q (%v)", res.kinds, res.status)
	}
	got := marker.GetContent().GetParts()
	if !marker.GetInterrupted() || len(got) != 1 || !strings.HasPrefix(got[0].GetText(), seen.String()) {
		t.Fatalf("the drain's event is %v; want the %q the client saw stream, marked interrupted", marker, seen.String())
	}
	e.close(t)

	e2, _ := newEnvAt(t, path, chat)
	stored := getRun(t, e2, runID)
	if stored.GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_INTERRUPTED {
		t.Fatalf("after the restart the run is %v", stored.GetStatus())
	}
	resumed := toResult(collectRun(t, must[servicev1.RunnerService_ResumeRunClient](t)(e2.runner.ResumeRun(t.Context(), &servicev1.ResumeRunRequest{RunId: runID}))))
	if resumed.status != nil || resumed.final(t).GetStatus() != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
		t.Fatalf("ResumeRun: %v %q", resumed.status, resumed.kinds)
	}
}
