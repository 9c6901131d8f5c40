package server

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"testing"

	servicev1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/service/v1"
	agentrunnerv1 "github.com/agentrunner/agentrunner/gen/go/agentrunner/v1"
	"github.com/agentrunner/agentrunner/runner/agent"
	"github.com/agentrunner/agentrunner/runner/agent/llmagent"
	"github.com/agentrunner/agentrunner/runner/agent/workflow"
	"github.com/agentrunner/agentrunner/runner/apps"
	"github.com/agentrunner/agentrunner/runner/model"
)

// speakingModel streams two chunks in agent name's voice, then waits for
// the run to be stopped.
type speakingModel struct{ name string }

func (m speakingModel) Name() string { return "hanging-" + m.name }

func (m speakingModel) Generate(ctx context.Context, _ *model.Request, _ bool) iter.Seq2[*model.Response, error] {
	return func(yield func(*model.Response, error) bool) {
		for i := range 2 {
			if !yield(&model.Response{Content: text(fmt.Sprintf("%s says %d. ", m.name, i)), Partial: true}, nil) {
				return
			}
		}
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

// TestStoppedAnswerUnderItsSpeaker: a run cut by CancelRun while agents
// stream stores what each had streamed as that agent, in its branch: a
// sequential step's words under the step, not the workflow; each branch
// of a parallel agent in an event of its own, with its own words only.
func TestStoppedAnswerUnderItsSpeaker(t *testing.T) {
	cases := []struct {
		name  string
		build func(t *testing.T) agent.Agent
		want  map[string]string // author -> branch of its stop event
	}{{
		name: "sequential_step",
		build: func(t *testing.T) agent.Agent {
			step := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "step", Model: speakingModel{"step"}}))
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "pipe", SubAgents: []agent.Agent{step}}))
		},
		want: map[string]string{"step": ""},
	}, {
		name: "parallel_branches",
		build: func(t *testing.T) agent.Agent {
			left := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "left", Model: speakingModel{"left"}}))
			right := must[agent.Agent](t)(llmagent.New(llmagent.Config{Name: "right", Model: speakingModel{"right"}}))
			fan := must[agent.Agent](t)(workflow.NewParallel(workflow.Config{Name: "fan", SubAgents: []agent.Agent{left, right}}))
			return must[agent.Agent](t)(workflow.NewSequential(workflow.Config{Name: "pipe", SubAgents: []agent.Agent{fan}}))
		},
		want: map[string]string{"left": "fan.left", "right": "fan.right"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withRunnerApps(t, func(t *testing.T) apps.App { return apps.App{Name: "stop", Root: tc.build(t)} }))
			e.createSession(t, "stop", "u1", "s1")
			req := runReq("stop", "s1", "talk")
			req.RunConfig = &agentrunnerv1.RunConfig{StreamingMode: agentrunnerv1.StreamingMode_STREAMING_MODE_SSE}
			stream := must[servicev1.RunnerService_RunClient](t)(e.runner.Run(t.Context(), req))
			var runID string
			partials := map[string]int{}
			for len(partials) < len(tc.want) || !allAtLeast(partials, 2) {
				resp, err := stream.Recv()
				if err != nil {
					t.Fatal(err)
				}
				if r := resp.GetRun(); r != nil {
					runID = r.GetRunId()
				}
				if ev := resp.GetEvent(); ev.GetPartial() {
					partials[ev.GetAuthor()]++
				}
			}
			if _, err := e.runner.CancelRun(t.Context(), &servicev1.CancelRunRequest{RunId: runID}); err != nil {
				t.Fatal(err)
			}
			_, _ = collectRun(t, stream)
			sess := must[*servicev1.GetSessionResponse](t)(e.sessions.GetSession(t.Context(), &servicev1.GetSessionRequest{AppName: "stop", UserId: "u1", SessionId: "s1"}))
			got := map[string]string{}
			for _, ev := range sess.GetEvents() {
				if ev.GetAuthor() == agent.UserAuthor {
					continue
				}
				if ev.GetErrorCode() != "CANCELLED" || !ev.GetInterrupted() {
					t.Errorf("stored %v; want only the stop's events, with the streamed text", ev)
					continue
				}
				words := ev.GetContent().GetParts()[0].GetText()
				if want := fmt.Sprintf("%s says 0. %s says 1. ", ev.GetAuthor(), ev.GetAuthor()); words != want {
					t.Errorf("%s's stop event holds %q; want its own words %q", ev.GetAuthor(), words, want)
				}
				if _, dup := got[ev.GetAuthor()]; dup {
					t.Errorf("two stop events of %s", ev.GetAuthor())
				}
				got[ev.GetAuthor()] = ev.GetBranch()
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("stop events (author: branch) %v; want %v", got, tc.want)
			}
		})
	}
}

func allAtLeast(m map[string]int, n int) bool {
	for _, v := range m {
		if v < n {
			return false
		}
	}
	return !strings.Contains(fmt.Sprint(m), "map[]")
}
