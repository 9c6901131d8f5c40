package server

import (
	"context"
	"fmt"
	"iter"
	"testing"

	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
	"github.com/agentrunner/agentrunner/runner/tool"
)

// chattyModel streams partial chunks without end when the user says
// "long" (until its call is cancelled), calls the tool "hang" when the
// user says "tool", and answers anything else at once.
type chattyModel struct{}

func (chattyModel) Name() string { return "chatty-model" }

func (chattyModel) Generate(ctx context.Context, req *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		last := req.Contents[len(req.Contents)-1]
		msg := last.GetParts()[0].GetText()
		textOf := func(s string) *agentrunnerv1.Content {
			return &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_Text{Text: s}}}}
		}
		switch {
		case last.GetRole() == "user" && msg == "long":
			for i := 0; ctx.Err() == nil; i++ {
				if !yield(&model.Response{Content: textOf(fmt.Sprint(i, " ")), Partial: true}, nil) {
					return
				}
			}
			yield(nil, ctx.Err())
		case last.GetRole() == "user" && msg == "tool":
			yield(&model.Response{Content: &agentrunnerv1.Content{Role: "model", Parts: []*agentrunnerv1.Part{{Data: &agentrunnerv1.Part_FunctionCall{
				FunctionCall: &agentrunnerv1.FunctionCall{Name: "hang"}}}}}, TurnComplete: true}, nil)
		default:
			yield(&model.Response{Content: textOf("ok"), TurnComplete: true}, nil)
		}
	}
}

// TestNextMessageAfterADroppedStream is what a chat client does when its
// user stops an answer: it drops the Run stream (no CancelRun) and sends
// the next message at once, on the same connection. The run whose caller
// went away still holds the session for a moment, wherever it was (before
// its model call, in it, streaming, in a tool call); the next Run waits
// for it instead of being refused with Aborted. 200 rounds, none refused.
func TestNextMessageAfterADroppedStream(t *testing.T) {
	chat := func(t *testing.T) apps.App {
		hang := func(tc tool.Context, _ struct{}) (map[string]any, error) {
			<-tc.Done()
			return nil, tc.Err()
		}
		a := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "chatter", Model: chattyModel{}, Tools: []tool.Tool{mustTool(t, "hang", hang)}}))
		return apps.App{Name: "chat", Root: a}
	}
	e := newEnv(t, withRunnerApps(t, chat))
	e.createSession(t, "chat", "u1", "s1")
	sse := &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
	cases := []struct {
		name, msg string
		// received is how many messages the client reads before it drops
		// the stream: the first record, then partials or events.
		received int
	}{
		{"before any partial", "long", 1},
		{"after one partial", "long", 2},
		{"after many partials", "long", 40},
		{"in a tool call", "tool", 2}, // the record and the stored call; the tool hangs
	}
	refused := 0
	for round := range 200 {
		tc := cases[round%len(cases)]
		ctx, drop := context.WithCancel(t.Context())
		req := runReq("chat", "s1", tc.msg)
		req.RunConfig = sse
		stream, err := e.runner.Run(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for range tc.received {
			if _, err := stream.Recv(); err != nil {
				t.Fatalf("round %d (%s): %v", round, tc.name, err)
			}
		}
		drop()
		next := e.run(t, t.Context(), runReq("chat", "s1", "next"))
		if next.status != nil {
			refused++
			t.Errorf("round %d (%s): the next message: %v", round, tc.name, next.status)
			continue
		}
		if got := next.final(t).GetStatus(); got != agentrunnerv1.RunStatus_RUN_STATUS_SUCCEEDED {
			t.Fatalf("round %d (%s): the next run ended %v", round, tc.name, got)
		}
	}
	if refused > 0 {
		t.Fatalf("%d of 200 next messages refused", refused)
	}
}
